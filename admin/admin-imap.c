/* The blocking IMAP client of moatadm (admin-imap.h). */
#include "admin-imap.h"
#include "buffer.h"
#include "mailbox-name.h"
#include "strfuncs.h"

#include <poll.h>

/* A mailbox name, as UTF-8 or modified UTF-7: far above any real one. */
#define ADMIN_IMAP_MAILBOX_MAX 4096
/* Digits of a literal's length. */
#define ADMIN_IMAP_LITERAL_DIGITS_MAX 20

struct admin_imap {
	int fd;
	pool_t pool;
	buffer_t in;
	unsigned int tag;
	bool broken;
};

static int admin_imap_read_more(struct admin_imap *imap)
{
	struct pollfd pfd = { .fd = imap->fd, .events = POLLIN };
	char *dest = buffer_reserve(&imap->in, 65536);

	if (dest == NULL)
		dest = buffer_reserve(&imap->in, imap->in.max_size - imap->in.used);
	if (dest == NULL || imap->in.used == imap->in.max_size)
		return -1;   /* a response larger than any the server sends */
	size_t room = MIN((size_t)65536, imap->in.max_size - imap->in.used);
	int ret = poll(&pfd, 1, ADMIN_IMAP_TIMEOUT_MSECS);
	if (ret <= 0)
		return -1;
	ssize_t n = read(imap->fd, dest, room);
	if (n <= 0)
		return -1;
	buffer_commit(&imap->in, (size_t)n);
	return 0;
}

/* The literal length announced just before line_end ("{N}" or "{N+}"),
   or -1 for none. */
static int64_t admin_imap_literal_at(const char *data, size_t line_end)
{
	if (line_end < 3 || data[line_end - 1] != '}')
		return -1;
	size_t pos = line_end - 1;
	if (data[pos - 1] == '+')
		pos--;
	size_t digits_end = pos;
	while (pos > 0 && data[pos - 1] >= '0' && data[pos - 1] <= '9')
		pos--;
	if (pos == 0 || data[pos - 1] != '{' || digits_end == pos ||
	    digits_end - pos > ADMIN_IMAP_LITERAL_DIGITS_MAX)
		return -1;
	uint64_t num = 0;
	for (size_t i = pos; i < digits_end; i++) {
		if (num > (UINT64_MAX - 9) / 10)
			return -1;
		num = num * 10 + (uint64_t)(data[i] - '0');
	}
	return num > INT64_MAX ? -1 : (int64_t)num;
}

/* One whole response (literals included) in imap->in; its length
   without the final CRLF. */
static int admin_imap_read_response(struct admin_imap *imap, size_t *len_r)
{
	size_t scan = 0;

	for (;;) {
		char *crlf = imap->in.used < scan + 2 ? NULL :
			memmem(imap->in.data + scan, imap->in.used - scan, "\r\n", 2);
		if (crlf == NULL) {
			if (admin_imap_read_more(imap) < 0)
				return -1;
			continue;
		}
		size_t line_end = (size_t)(crlf - imap->in.data);
		int64_t literal = admin_imap_literal_at(imap->in.data, line_end);
		if (literal < 0) {
			*len_r = line_end;
			return 0;
		}
		if ((uint64_t)literal > imap->in.max_size)
			return -1;
		size_t need = line_end + 2 + (size_t)literal;
		while (imap->in.used < need) {
			if (admin_imap_read_more(imap) < 0)
				return -1;
		}
		scan = need;
	}
}

static int admin_imap_write(struct admin_imap *imap, const char *data,
			    size_t size)
{
	while (size > 0) {
		ssize_t ret = write(imap->fd, data, size);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			return -1;
		data += ret;
		size -= (size_t)ret;
	}
	return 0;
}

/* The tagged answer in resp (after "tag "): 0 OK, 1 NO, -1 BAD. */
static int admin_imap_result(pool_t pool, const char *resp, size_t len,
			     const char **text_r)
{
	const char *space = memchr(resp, ' ', len);
	size_t word_len = space == NULL ? len : (size_t)(space - resp);
	*text_r = space == NULL ? "" :
		p_strndup(pool, space + 1, len - word_len - 1);
	if (word_len == 2 && strncasecmp(resp, "OK", 2) == 0)
		return 0;
	if (word_len == 2 && strncasecmp(resp, "NO", 2) == 0)
		return 1;
	return -1;
}

int admin_imap_run(struct admin_imap *imap, const char *command,
		   admin_imap_untagged_t *cb, void *context,
		   const char **text_r)
{
	return admin_imap_run_data(imap, command, NULL, 0, cb, context, text_r);
}

int admin_imap_run_data(struct admin_imap *imap, const char *command,
			const void *data, size_t size,
			admin_imap_untagged_t *cb, void *context,
			const char **text_r)
{
	char tag[32];
	size_t len;

	if (imap->broken) {
		*text_r = "the IMAP session is broken";
		return -1;
	}
	snprintf(tag, sizeof(tag), "a%u ", ++imap->tag);
	if (admin_imap_write(imap, tag, strlen(tag)) < 0 ||
	    admin_imap_write(imap, command, strlen(command)) < 0 ||
	    (size > 0 && admin_imap_write(imap, data, size) < 0) ||
	    admin_imap_write(imap, "\r\n", 2) < 0) {
		imap->broken = true;
		*text_r = "the IMAP session closed";
		return -1;
	}
	for (;;) {
		if (admin_imap_read_response(imap, &len) < 0) {
			imap->broken = true;
			*text_r = "the IMAP session closed or sent too much";
			return -1;
		}
		const char *resp = imap->in.data;
		int ret = 0;
		bool tagged = len >= strlen(tag) &&
			memcmp(resp, tag, strlen(tag)) == 0;
		if (tagged) {
			ret = admin_imap_result(imap->pool, resp + strlen(tag),
						len - strlen(tag), text_r);
		} else if (len >= 6 && memcmp(resp, "* BYE ", 6) == 0) {
			imap->broken = true;
			*text_r = p_strndup(imap->pool, resp + 6, len - 6);
			ret = -1;
		} else if (len >= 2 && memcmp(resp, "* ", 2) == 0 && cb != NULL) {
			cb(context, resp + 2, len - 2);
		}
		buffer_delete_head(&imap->in, len + 2);
		if (tagged || imap->broken)
			return ret;
	}
}

struct admin_imap *admin_imap_open(int fd, uint64_t max_response,
				   pool_t pool, const char **error_r)
{
	struct admin_imap *imap = p_malloc(pool, sizeof(*imap));
	size_t len;

	imap->fd = fd;
	imap->pool = pool;
	if (max_response > SIZE_MAX / 2)
		max_response = SIZE_MAX / 2;
	buffer_init(&imap->in, (size_t)max_response);
	(void)fd_set_nonblock(fd, false);
	/* master's CONN carried tag a0: the login's answer */
	if (admin_imap_read_response(imap, &len) < 0) {
		*error_r = "the imap process closed the session";
	} else if (len >= 5 && memcmp(imap->in.data, "a0 OK", 5) == 0) {
		buffer_delete_head(&imap->in, len + 2);
		return imap;
	} else {
		*error_r = p_strndup(pool, imap->in.data, MIN(len, (size_t)512));
	}
	buffer_free(&imap->in);
	close(fd);
	return NULL;
}

void admin_imap_close(struct admin_imap **_imap)
{
	struct admin_imap *imap = *_imap;
	const char *text;

	*_imap = NULL;
	if (!imap->broken)
		(void)admin_imap_run(imap, "LOGOUT", NULL, NULL, &text);
	buffer_free(&imap->in);
	close(imap->fd);
}

static void admin_imap_value_string(pool_t pool, const char **pos,
				    const char *end,
				    struct admin_imap_value *v)
{
	const char *p = *pos + 1;
	char *out = p_malloc(pool, (size_t)(end - p) + 1);
	size_t n = 0;

	for (; p < end && *p != '"'; p++) {
		if (*p == '\\' && p + 1 < end)
			p++;
		out[n++] = *p;
	}
	if (p >= end) {
		v->type = ADMIN_IMAP_VALUE_ERROR;
		return;
	}
	v->type = ADMIN_IMAP_VALUE_STRING;
	v->data = out;
	v->size = n;
	*pos = p + 1;
}

static void admin_imap_value_literal(pool_t pool, const char **pos,
				     const char *end,
				     struct admin_imap_value *v)
{
	const char *p = *pos;
	uint64_t size = 0;

	if (*p == '~')
		p++;
	for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
		if (size > (UINT64_MAX - 9) / 10)
			break;
		size = size * 10 + (uint64_t)(*p - '0');
	}
	if (p < end && *p == '+')
		p++;
	if (end - p < 3 || p[0] != '}' || p[1] != '\r' || p[2] != '\n' ||
	    size > (uint64_t)(end - p - 3)) {
		v->type = ADMIN_IMAP_VALUE_ERROR;
		return;
	}
	p += 3;
	v->type = ADMIN_IMAP_VALUE_STRING;
	v->data = p_strndup(pool, p, (size_t)size);
	v->size = (size_t)size;
	*pos = p + size;
}

/* Past the list that starts at p ('('): its ')' + 1, or NULL. */
static const char *admin_imap_list_end(pool_t pool, const char *p,
				       const char *end)
{
	struct admin_imap_value v;
	const char *pos = p + 1;

	for (;;) {
		while (pos < end && *pos == ' ')
			pos++;
		if (pos < end && *pos == ')')
			return pos + 1;
		admin_imap_value_next(pool, &pos, end, &v);
		if (v.type == ADMIN_IMAP_VALUE_END ||
		    v.type == ADMIN_IMAP_VALUE_ERROR)
			return NULL;
	}
}

void admin_imap_list_pairs(pool_t pool, const struct admin_imap_value *list,
			   const char *const *keys, unsigned int key_count,
			   struct admin_imap_value *values_r)
{
	struct admin_imap_value key, value;

	if (list->type != ADMIN_IMAP_VALUE_LIST)
		return;
	const char *pos = list->data, *end = list->data + list->size;
	for (;;) {
		admin_imap_value_next(pool, &pos, end, &key);
		admin_imap_value_next(pool, &pos, end, &value);
		if (key.type != ADMIN_IMAP_VALUE_ATOM ||
		    value.type == ADMIN_IMAP_VALUE_END ||
		    value.type == ADMIN_IMAP_VALUE_ERROR)
			return;
		for (unsigned int i = 0; i < key_count; i++) {
			if (strcasecmp(key.data, keys[i]) == 0)
				values_r[i] = value;
		}
	}
}

void admin_imap_value_next(pool_t pool, const char **pos, const char *end,
			   struct admin_imap_value *v)
{
	const char *p = *pos;

	memset(v, 0, sizeof(*v));
	while (p < end && *p == ' ')
		p++;
	*pos = p;
	if (p >= end || *p == ')') {
		v->type = ADMIN_IMAP_VALUE_END;
		return;
	}
	if (*p == '"') {
		admin_imap_value_string(pool, pos, end, v);
		return;
	}
	if (*p == '{' || (*p == '~' && p + 1 < end && p[1] == '{')) {
		admin_imap_value_literal(pool, pos, end, v);
		return;
	}
	if (*p == '(') {
		const char *list_end = admin_imap_list_end(pool, p, end);
		if (list_end == NULL) {
			v->type = ADMIN_IMAP_VALUE_ERROR;
			return;
		}
		v->type = ADMIN_IMAP_VALUE_LIST;
		v->data = p + 1;
		v->size = (size_t)(list_end - 1 - (p + 1));
		*pos = list_end;
		return;
	}
	/* an atom; brackets may hold spaces (BODY[HEADER.FIELDS (A B)]) */
	const char *start = p;
	unsigned int depth = 0;
	for (; p < end; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']' && depth > 0)
			depth--;
		else if (depth == 0 && (*p == ' ' || *p == '(' || *p == ')'))
			break;
	}
	v->data = p_strndup(pool, start, (size_t)(p - start));
	v->size = (size_t)(p - start);
	v->type = v->size == 3 && strncasecmp(start, "NIL", 3) == 0 ?
		ADMIN_IMAP_VALUE_NIL : ADMIN_IMAP_VALUE_ATOM;
	*pos = p;
}

const char *admin_imap_quote(pool_t pool, const char *str)
{
	bool plain = true;

	for (const unsigned char *p = (const unsigned char *)str; *p != '\0'; p++) {
		if (*p < 0x20 || *p >= 0x7f)
			plain = false;
	}
	if (!plain)
		return p_strdup_printf(pool, "{%zu+}\r\n%s", strlen(str), str);
	char *out = p_malloc(pool, strlen(str) * 2 + 3);
	size_t n = 0;
	out[n++] = '"';
	for (const char *p = str; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			out[n++] = '\\';
		out[n++] = *p;
	}
	out[n++] = '"';
	return out;
}

const char *admin_imap_mailbox(pool_t pool, const char *utf8)
{
	buffer_t buf;

	buffer_init(&buf, ADMIN_IMAP_MAILBOX_MAX);
	if (mailbox_name_utf8_to_mutf7(utf8, &buf) < 0) {
		buffer_free(&buf);
		return NULL;
	}
	const char *quoted = admin_imap_quote(pool, buf.data);
	buffer_free(&buf);
	return quoted;
}

const char *admin_imap_mailbox_utf8(pool_t pool, const char *mutf7)
{
	buffer_t buf;

	buffer_init(&buf, ADMIN_IMAP_MAILBOX_MAX);
	const char *name = mailbox_name_mutf7_to_utf8(mutf7, &buf) < 0 ?
		p_strdup(pool, mutf7) : p_strdup(pool, buf.data);
	buffer_free(&buf);
	return name;
}
