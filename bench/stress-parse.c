/* IMAP response values for the stress checks (stress.h): atoms (with
   [section] and <partial> parts), quoted strings, literals, NIL, lists.
   Bounded by STRESS_PARSE_MAX_NODES; anything malformed is an error. */
#include "stress.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Nesting of lists: BODYSTRUCTURE of a deep MIME tree stays below. */
#define STRESS_PARSE_MAX_DEPTH 64

static int node_new(struct stress_parse *p, enum stress_node_type type)
{
	if (p->count == STRESS_PARSE_MAX_NODES) {
		p->error = "too many values in one response";
		return -1;
	}
	struct stress_node *n = &p->nodes[p->count];
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->first = n->next = -1;
	return (int)p->count++;
}

static int parse_quoted(struct stress_parse *p, const char *data, size_t len,
			size_t *pos)
{
	size_t i = *pos + 1;

	while (i < len && data[i] != '"') {
		if (data[i] == '\\')
			i++;
		i++;
	}
	if (i >= len) {
		p->error = "unterminated quoted string";
		return -1;
	}
	int idx = node_new(p, STRESS_NODE_STRING);
	if (idx < 0)
		return -1;
	p->nodes[idx].data = data + *pos + 1;
	p->nodes[idx].len = i - *pos - 1;
	p->nodes[idx].quoted = true;
	*pos = i + 1;
	return idx;
}

static int parse_literal(struct stress_parse *p, const char *data, size_t len,
			 size_t *pos)
{
	size_t i = *pos + 1;
	uint64_t size = 0;

	while (i < len && isdigit((unsigned char)data[i]) && size < (1U << 30))
		size = size * 10 + (uint64_t)(data[i++] - '0');
	if (i < len && data[i] == '+')
		i++;
	if (i + 2 >= len || data[i] != '}' || data[i + 1] != '\r' ||
	    data[i + 2] != '\n') {
		p->error = "malformed literal";
		return -1;
	}
	i += 3;
	if (size > len - i) {
		p->error = "literal longer than the response kept";
		return -1;
	}
	int idx = node_new(p, STRESS_NODE_STRING);
	if (idx < 0)
		return -1;
	p->nodes[idx].data = data + i;
	p->nodes[idx].len = (size_t)size;
	*pos = i + (size_t)size;
	return idx;
}

/* An atom; [..] may hold spaces and parentheses (BODY[HEADER.FIELDS
   (X)]), <..> a partial's origin. */
static int parse_atom(struct stress_parse *p, const char *data, size_t len,
		      size_t *pos)
{
	size_t i = *pos;
	int depth = 0;

	while (i < len) {
		char ch = data[i];
		if (ch == '[')
			depth++;
		else if (ch == ']')
			depth--;
		else if (depth == 0 && (ch == ' ' || ch == '(' || ch == ')' ||
					ch == '\r' || ch == '\n'))
			break;
		i++;
	}
	if (i == *pos || depth != 0) {
		p->error = "malformed atom";
		return -1;
	}
	bool nil = i - *pos == 3 && strncasecmp(data + *pos, "NIL", 3) == 0;
	int idx = node_new(p, nil ? STRESS_NODE_NIL : STRESS_NODE_ATOM);
	if (idx < 0)
		return -1;
	p->nodes[idx].data = data + *pos;
	p->nodes[idx].len = i - *pos;
	*pos = i;
	return idx;
}

static int parse_value_depth(struct stress_parse *p, const char *data,
			     size_t len, size_t *pos, unsigned int depth);

static int parse_list(struct stress_parse *p, const char *data, size_t len,
		      size_t *pos, unsigned int depth)
{
	int idx = node_new(p, STRESS_NODE_LIST), last = -1;

	if (idx < 0)
		return -1;
	if (depth >= STRESS_PARSE_MAX_DEPTH) {
		p->error = "lists nested too deep";
		return -1;
	}
	(*pos)++;
	for (;;) {
		while (*pos < len && data[*pos] == ' ')
			(*pos)++;
		if (*pos >= len) {
			p->error = "unterminated list";
			return -1;
		}
		if (data[*pos] == ')') {
			(*pos)++;
			return idx;
		}
		int child = parse_value_depth(p, data, len, pos, depth + 1);
		if (child < 0)
			return -1;
		if (last < 0)
			p->nodes[idx].first = child;
		else
			p->nodes[last].next = child;
		last = child;
		p->nodes[idx].count++;
	}
}

static int parse_value_depth(struct stress_parse *p, const char *data,
			     size_t len, size_t *pos, unsigned int depth)
{
	if (*pos >= len) {
		p->error = "value missing";
		return -1;
	}
	switch (data[*pos]) {
	case '(':
		return parse_list(p, data, len, pos, depth);
	case '"':
		return parse_quoted(p, data, len, pos);
	case '{':
		return parse_literal(p, data, len, pos);
	case '~':
		(*pos)++;
		return parse_literal(p, data, len, pos);
	default:
		return parse_atom(p, data, len, pos);
	}
}

int stress_parse_value(struct stress_parse *p, const char *data, size_t len,
		       size_t *pos)
{
	return parse_value_depth(p, data, len, pos, 0);
}

const struct stress_node *stress_node_child(const struct stress_parse *p,
					    const struct stress_node *list,
					    unsigned int i)
{
	if (list == NULL || list->type != STRESS_NODE_LIST || i >= list->count)
		return NULL;
	int idx = list->first;
	while (i-- > 0)
		idx = p->nodes[idx].next;
	return &p->nodes[idx];
}

bool stress_node_is(const struct stress_node *n, const char *atom)
{
	size_t len = strlen(atom);

	return n != NULL && n->type == STRESS_NODE_ATOM && n->len == len &&
		strncasecmp(n->data, atom, len) == 0;
}

size_t stress_node_string(const struct stress_node *n, char *buf, size_t size)
{
	size_t out = 0;

	if (n == NULL || n->type == STRESS_NODE_NIL ||
	    n->type == STRESS_NODE_LIST) {
		buf[0] = '\0';
		return 0;
	}
	for (size_t i = 0; i < n->len && out + 1 < size; i++) {
		if (n->quoted && n->data[i] == '\\' && i + 1 < n->len)
			i++;
		buf[out++] = n->data[i];
	}
	buf[out] = '\0';
	return out;
}

bool stress_node_uint(const struct stress_node *n, uint32_t *num_r)
{
	uint64_t num = 0;

	if (n == NULL || n->type != STRESS_NODE_ATOM || n->len == 0 ||
	    n->len > 10)
		return false;
	for (size_t i = 0; i < n->len; i++) {
		if (!isdigit((unsigned char)n->data[i]))
			return false;
		num = num * 10 + (uint64_t)(n->data[i] - '0');
	}
	if (num > UINT32_MAX)
		return false;
	*num_r = (uint32_t)num;
	return true;
}

int stress_parse_uidset(const char *text, size_t len, uint32_t *uids,
			unsigned int max)
{
	unsigned int count = 0;
	size_t i = 0;

	while (i < len) {
		uint64_t lo = 0, hi;
		size_t start = i;
		while (i < len && isdigit((unsigned char)text[i]) && lo <= UINT32_MAX)
			lo = lo * 10 + (uint64_t)(text[i++] - '0');
		if (i == start || lo == 0 || lo > UINT32_MAX)
			return -1;
		hi = lo;
		if (i < len && text[i] == ':') {
			start = ++i;
			hi = 0;
			while (i < len && isdigit((unsigned char)text[i]) &&
			       hi <= UINT32_MAX)
				hi = hi * 10 + (uint64_t)(text[i++] - '0');
			if (i == start || hi == 0 || hi > UINT32_MAX)
				return -1;
			if (hi < lo) {
				uint64_t t = lo;
				lo = hi;
				hi = t;
			}
		}
		for (uint64_t u = lo; u <= hi; u++) {
			if (count == max)
				return -1;
			uids[count++] = (uint32_t)u;
		}
		if (i < len && text[i] != ',')
			return -1;
		if (i < len)
			i++;
	}
	return (int)count;
}
