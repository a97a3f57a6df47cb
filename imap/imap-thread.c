/* THREAD ORDEREDSUBJECT and REFERENCES (RFC 5256 section 3), see
   imap-thread.h. Nodes live in one array and link by index; a node is a
   message or a dummy (a referenced Message-ID no searched message has,
   or a parent made when threads with one subject merge). */
#include "lib.h"
#include "imap-thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_NONE UINT32_MAX
/* Bytes one writer step appends at most: " (" + a number + ")". */
#define THREAD_WRITE_STEP_MAX 16

struct thread_node {
	uint32_t parent, first_child, next_sibling;
	uint32_t msg;           /* index into msgs, NODE_NONE: a dummy */
};

/* 24 bytes: the largest per-message array of a command */
struct thread_msg {
	int64_t date;
	uint64_t subject;
	uint32_t num;
	bool reply;
};

/* uint64 hash -> node; key 0 marks a free slot */
struct thread_table {
	uint64_t *keys;
	uint32_t *values;
	size_t size, used;      /* size is a power of 2 */
};

/* what siblings are sorted by: sent date, then mailbox order */
struct sort_item {
	int64_t date;
	uint32_t order;
	uint32_t node;
};

struct imap_thread {
	enum imap_thread_alg alg;
	struct thread_msg *msgs;
	unsigned int msg_count, msg_alloc;
	struct thread_node *nodes;
	unsigned int node_count, node_alloc;
	struct thread_table ids;
	/* the threads, in answer order */
	uint32_t *roots;
	unsigned int root_count;
	bool finished;

	/* writer */
	unsigned int out_root;
	uint32_t out_node;      /* node to enter next, or NODE_NONE */
	bool out_first;         /* no number written yet in the open list */
	uint32_t *stack;        /* sibling cursor of each open nested list */
	unsigned int depth, stack_alloc;
};

/* ---- small containers ---- */

/* Arrays are sized from the message count up front; past that they
   grow by half, which wastes less than doubling. */
static void *grow(void *arr, unsigned int *alloc, size_t elem)
{
	*alloc = *alloc < 64 ? 64 : *alloc + *alloc / 2;
	return i_realloc(arr, i_mul_size(*alloc, elem));
}

static uint32_t node_new(struct imap_thread *t, uint32_t msg)
{
	if (t->node_count == t->node_alloc)
		t->nodes = grow(t->nodes, &t->node_alloc, sizeof(*t->nodes));
	struct thread_node *n = &t->nodes[t->node_count];
	n->parent = n->first_child = n->next_sibling = NODE_NONE;
	n->msg = msg;
	return t->node_count++;
}

static void table_init(struct thread_table *tab, size_t size)
{
	tab->size = size;
	tab->used = 0;
	tab->keys = i_malloc(i_mul_size(size, sizeof(*tab->keys)));
	tab->values = i_malloc(i_mul_size(size, sizeof(*tab->values)));
}

static void table_free(struct thread_table *tab)
{
	i_free(tab->keys);
	i_free(tab->values);
	memset(tab, 0, sizeof(*tab));
}

static size_t table_slot(const struct thread_table *tab, uint64_t key)
{
	size_t i = (size_t)(key ^ (key >> 32)) & (tab->size - 1);

	while (tab->keys[i] != 0 && tab->keys[i] != key)
		i = (i + 1) & (tab->size - 1);
	return i;
}

static uint32_t table_get(const struct thread_table *tab, uint64_t key)
{
	size_t i = table_slot(tab, key);

	return tab->keys[i] == 0 ? NODE_NONE : tab->values[i];
}

/* The smallest power of 2 that holds count keys below the load limit. */
static size_t table_size_for(size_t count)
{
	size_t size = 1024;

	while (size < count + count / 2 + 1)
		size = i_mul_size(size, 2);
	return size;
}

static void table_set(struct thread_table *tab, uint64_t key, uint32_t value)
{
	/* linear probing stays short below 2/3 full */
	if ((tab->used + 1) * 3 > tab->size * 2) {
		struct thread_table bigger;
		table_init(&bigger, i_mul_size(tab->size, 2));
		for (size_t i = 0; i < tab->size; i++) {
			if (tab->keys[i] != 0)
				table_set(&bigger, tab->keys[i], tab->values[i]);
		}
		table_free(tab);
		*tab = bigger;
	}
	size_t i = table_slot(tab, key);
	if (tab->keys[i] == 0)
		tab->used++;
	tab->keys[i] = key;
	tab->values[i] = value;
}

/* ---- links ---- */

static bool is_real(const struct imap_thread *t, uint32_t node)
{
	return t->nodes[node].msg != NODE_NONE;
}

/* Whether a is b or one of b's ancestors. */
static bool is_ancestor(const struct imap_thread *t, uint32_t a, uint32_t b)
{
	for (; b != NODE_NONE; b = t->nodes[b].parent) {
		if (b == a)
			return true;
	}
	return false;
}

static void link_child(struct imap_thread *t, uint32_t parent, uint32_t child)
{
	struct thread_node *c = &t->nodes[child];

	c->parent = parent;
	c->next_sibling = t->nodes[parent].first_child;
	t->nodes[parent].first_child = child;
}

static void unlink_child(struct imap_thread *t, uint32_t child)
{
	struct thread_node *c = &t->nodes[child];
	uint32_t *p = &t->nodes[c->parent].first_child;

	while (*p != child)
		p = &t->nodes[*p].next_sibling;
	*p = c->next_sibling;
	c->parent = c->next_sibling = NODE_NONE;
}

/* ---- adding messages ---- */

struct imap_thread *imap_thread_init(enum imap_thread_alg alg,
				     unsigned int msg_count)
{
	struct imap_thread *t = i_malloc(sizeof(*t));

	t->alg = alg;
	t->msg_alloc = msg_count;
	t->msgs = i_malloc(i_mul_size(msg_count + 1, sizeof(*t->msgs)));
	/* about one referenced id in four has no message of its own */
	t->node_alloc = alg == IMAP_THREAD_REFERENCES ?
		msg_count + msg_count / 4 : msg_count;
	t->nodes = i_malloc(i_mul_size(t->node_alloc + 1, sizeof(*t->nodes)));
	table_init(&t->ids, alg == IMAP_THREAD_REFERENCES ?
		   table_size_for(t->node_alloc) : 1024);
	t->out_node = NODE_NONE;
	return t;
}

void imap_thread_deinit(struct imap_thread **thread)
{
	struct imap_thread *t = *thread;

	*thread = NULL;
	table_free(&t->ids);
	i_free(t->msgs);
	i_free(t->nodes);
	i_free(t->roots);
	i_free(t->stack);
	i_free(t);
}

/* The node of Message-ID hash id, a new dummy if there is none. */
static uint32_t id_node(struct imap_thread *t, uint64_t id)
{
	uint32_t node = table_get(&t->ids, id);

	if (node == NODE_NONE) {
		node = node_new(t, NODE_NONE);
		table_set(&t->ids, id, node);
	}
	return node;
}

/* Step 1 for one message. */
static void references_add(struct imap_thread *t, const struct imap_thread_msg *m,
			   uint32_t msg)
{
	uint32_t node = NODE_NONE, prev = NODE_NONE;

	if (m->msgid != 0) {
		node = id_node(t, m->msgid);
		if (is_real(t, node))
			node = NODE_NONE;   /* a duplicate: a unique id */
		else
			t->nodes[node].msg = msg;
	}
	if (node == NODE_NONE)
		node = node_new(t, msg);
	/* (A) link the references as a chain, keeping existing parents */
	for (unsigned int i = 0; i < m->ref_count; i++) {
		uint32_t ref = id_node(t, m->refs[i]);
		if (prev != NODE_NONE && t->nodes[ref].parent == NODE_NONE &&
		    !is_ancestor(t, ref, prev))
			link_child(t, prev, ref);
		prev = ref;
	}
	/* (B) the last reference is the parent, whatever was there */
	if (t->nodes[node].parent != NODE_NONE)
		unlink_child(t, node);
	if (prev != NODE_NONE && !is_ancestor(t, node, prev))
		link_child(t, prev, node);
}

void imap_thread_add(struct imap_thread *t, const struct imap_thread_msg *m)
{
	i_assert(!t->finished);
	if (t->msg_count == t->msg_alloc)
		t->msgs = grow(t->msgs, &t->msg_alloc, sizeof(*t->msgs));
	uint32_t msg = t->msg_count++;
	t->msgs[msg].num = m->num;
	t->msgs[msg].date = m->date;
	t->msgs[msg].subject = m->subject;
	t->msgs[msg].reply = m->reply;
	if (t->alg == IMAP_THREAD_REFERENCES)
		references_add(t, m, msg);
	else
		(void)node_new(t, msg);
}

/* ---- sorting siblings ---- */

static int sort_item_cmp(const void *p1, const void *p2)
{
	const struct sort_item *a = p1, *b = p2;

	if (a->date != b->date)
		return a->date < b->date ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order ? 1 : 0;
}

/* A node's sort key: its own, or a dummy's first child's. */
static void node_key(const struct imap_thread *t, uint32_t node,
		     struct sort_item *item_r)
{
	uint32_t n = node;

	while (!is_real(t, n) && t->nodes[n].first_child != NODE_NONE)
		n = t->nodes[n].first_child;
	item_r->node = node;
	item_r->date = is_real(t, n) ? t->msgs[t->nodes[n].msg].date : 0;
	item_r->order = is_real(t, n) ? t->nodes[n].msg : 0;
}

/* Sort nodes[] (count of them) in place by their keys. */
static void sort_nodes(struct imap_thread *t, uint32_t *nodes,
		       unsigned int count, struct sort_item *scratch)
{
	for (unsigned int i = 0; i < count; i++)
		node_key(t, nodes[i], &scratch[i]);
	if (count > 1)   /* (and scratch may be NULL for none) */
		qsort(scratch, count, sizeof(*scratch), sort_item_cmp);
	for (unsigned int i = 0; i < count; i++)
		nodes[i] = scratch[i].node;
}

/* Sort the children of parent, relinking them in order. */
static void sort_children(struct imap_thread *t, uint32_t parent,
			  uint32_t *tmp, struct sort_item *scratch)
{
	unsigned int count = 0;

	for (uint32_t c = t->nodes[parent].first_child; c != NODE_NONE;
	     c = t->nodes[c].next_sibling)
		tmp[count++] = c;
	if (count < 2)
		return;
	sort_nodes(t, tmp, count, scratch);
	t->nodes[parent].first_child = tmp[0];
	for (unsigned int i = 0; i + 1 < count; i++)
		t->nodes[tmp[i]].next_sibling = tmp[i + 1];
	t->nodes[tmp[count - 1]].next_sibling = NODE_NONE;
}

/* Nodes in breadth-first order from the roots (parents before their
   children); returns how many. */
static unsigned int bfs_order(const struct imap_thread *t, uint32_t *order)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < t->root_count; i++)
		order[n++] = t->roots[i];
	for (unsigned int i = 0; i < n; i++) {
		for (uint32_t c = t->nodes[order[i]].first_child; c != NODE_NONE;
		     c = t->nodes[c].next_sibling)
			order[n++] = c;
	}
	return n;
}

static void roots_add(struct imap_thread *t, uint32_t node)
{
	t->roots[t->root_count++] = node;
}

/* Step 6 (and the final order of ORDEREDSUBJECT's siblings): every
   sibling set by sent date, the deepest first so a dummy's key is its
   sorted first child. */
static void sort_all(struct imap_thread *t)
{
	uint32_t *order = i_malloc(i_mul_size(t->node_count, sizeof(*order)));
	uint32_t *tmp = i_malloc(i_mul_size(t->node_count, sizeof(*tmp)));
	struct sort_item *scratch =
		i_malloc(i_mul_size(t->node_count + 1, sizeof(*scratch)));
	unsigned int n = bfs_order(t, order);

	for (unsigned int i = n; i > 0; i--)
		sort_children(t, order[i - 1], tmp, scratch);
	sort_nodes(t, t->roots, t->root_count, scratch);
	i_free(order);
	i_free(tmp);
	i_free(scratch);
}

/* ---- REFERENCES steps 2-5 ---- */

/* Steps 2 and 3: the parentless nodes are the roots; dummies are
   removed, their children going to the nearest real ancestor, except
   that a root dummy stays when it would put several children at the
   root. Equivalent to the RFC's recursive pruning (children first). */
static void prune_dummies(struct imap_thread *t)
{
	size_t nsize = i_mul_size(t->node_count, sizeof(uint32_t));
	uint32_t *order = i_malloc(nsize), *top = i_malloc(nsize);
	uint32_t *real_anc = i_malloc(nsize);
	unsigned int n;

	t->roots = i_malloc(nsize);
	for (uint32_t i = 0; i < t->node_count; i++) {
		if (t->nodes[i].parent == NODE_NONE)
			roots_add(t, i);
	}
	n = bfs_order(t, order);
	for (unsigned int i = 0; i < n; i++) {
		uint32_t node = order[i], p = t->nodes[node].parent;
		top[node] = p == NODE_NONE ? node : top[p];
		real_anc[node] = p == NODE_NONE ? NODE_NONE :
			is_real(t, p) ? p : real_anc[p];
	}
	/* relink: forget all links, then give each message its new parent */
	for (unsigned int i = 0; i < n; i++) {
		struct thread_node *nd = &t->nodes[order[i]];
		nd->parent = nd->first_child = nd->next_sibling = NODE_NONE;
	}
	for (unsigned int i = n; i > 0; i--) {
		uint32_t node = order[i - 1];
		if (!is_real(t, node) || top[node] == node)
			continue;
		link_child(t, real_anc[node] != NODE_NONE ? real_anc[node] :
			   top[node], node);
	}
	/* root dummies: none or one child -> gone (the child is a root) */
	unsigned int kept = 0;
	for (unsigned int i = 0; i < t->root_count; i++) {
		uint32_t node = t->roots[i], c = t->nodes[node].first_child;
		if (!is_real(t, node) &&
		    (c == NODE_NONE || t->nodes[c].next_sibling == NODE_NONE)) {
			if (c == NODE_NONE)
				continue;
			t->nodes[c].parent = NODE_NONE;
			t->nodes[node].first_child = NODE_NONE;
			node = c;
		}
		t->roots[kept++] = node;
	}
	t->root_count = kept;
	i_free(order);
	i_free(top);
	i_free(real_anc);
}

static uint32_t first_real(const struct imap_thread *t, uint32_t node)
{
	return is_real(t, node) ? node : t->nodes[node].first_child;
}

static uint64_t thread_subject(const struct imap_thread *t, uint32_t node)
{
	uint32_t n = first_real(t, node);

	return n == NODE_NONE || !is_real(t, n) ? 0 :
		t->msgs[t->nodes[n].msg].subject;
}

static bool node_is_reply(const struct imap_thread *t, uint32_t node)
{
	return is_real(t, node) && t->msgs[t->nodes[node].msg].reply;
}

/* Step 5.B: one message per thread subject. */
static void subjects_fill(struct imap_thread *t, struct thread_table *subj)
{
	for (unsigned int i = 0; i < t->root_count; i++) {
		uint32_t cur = t->roots[i];
		uint64_t s = thread_subject(t, cur);
		if (s == 0)
			continue;
		uint32_t old = table_get(subj, s);
		if (old == NODE_NONE ||
		    (is_real(t, old) && (!is_real(t, cur) ||
		     (node_is_reply(t, old) && !node_is_reply(t, cur)))))
			table_set(subj, s, cur);
	}
}

/* Move all children of from under to. */
static void children_move(struct imap_thread *t, uint32_t from, uint32_t to)
{
	uint32_t c = t->nodes[from].first_child;

	while (c != NODE_NONE) {
		uint32_t next = t->nodes[c].next_sibling;
		link_child(t, to, c);
		c = next;
	}
	t->nodes[from].first_child = NODE_NONE;
}

/* Step 5.C for root i merging into the thread of table node old (root
   slot old_i). Returns whether root i stays a root. */
static bool subject_merge(struct imap_thread *t, struct thread_table *subj,
			  uint64_t s, uint32_t cur, uint32_t old,
			  unsigned int old_i)
{
	if (!is_real(t, old) && !is_real(t, cur)) {
		children_move(t, cur, old);
	} else if (!is_real(t, old) ||
		   (node_is_reply(t, cur) && !node_is_reply(t, old))) {
		link_child(t, old, cur);
	} else {
		uint32_t dummy = node_new(t, NODE_NONE);
		link_child(t, dummy, old);
		link_child(t, dummy, cur);
		table_set(subj, s, dummy);
		t->roots[old_i] = dummy;
	}
	return false;
}

static void subjects_merge(struct imap_thread *t)
{
	struct thread_table subj;
	uint32_t *slot;
	unsigned int kept = 0;

	table_init(&subj, 1024);
	subjects_fill(t, &subj);
	/* root slot of each table node (merges replace the slot's node) */
	slot = i_malloc(i_mul_size(t->node_count + t->root_count + 1,
				   sizeof(*slot)));
	for (unsigned int i = 0; i < t->root_count; i++)
		slot[t->roots[i]] = i;
	for (unsigned int i = 0; i < t->root_count; i++) {
		uint32_t cur = t->roots[i];
		uint64_t s = thread_subject(t, cur);
		uint32_t old = s == 0 ? NODE_NONE : table_get(&subj, s);
		if (old == NODE_NONE || old == cur)
			continue;
		unsigned int old_i = slot[old];
		(void)subject_merge(t, &subj, s, cur, old, old_i);
		slot[t->roots[old_i]] = old_i;   /* a new dummy took it */
		t->roots[i] = NODE_NONE;
	}
	for (unsigned int i = 0; i < t->root_count; i++) {
		if (t->roots[i] != NODE_NONE)
			t->roots[kept++] = t->roots[i];
	}
	t->root_count = kept;
	i_free(slot);
	table_free(&subj);
}

static void references_finish(struct imap_thread *t)
{
	struct sort_item *scratch;
	uint32_t *tmp;

	prune_dummies(t);
	/* step 4: roots by date; a dummy by its children's first */
	tmp = i_malloc(i_mul_size(t->node_count + 1, sizeof(*tmp)));
	scratch = i_malloc(i_mul_size(t->node_count + 1, sizeof(*scratch)));
	for (unsigned int i = 0; i < t->root_count; i++) {
		if (!is_real(t, t->roots[i]))
			sort_children(t, t->roots[i], tmp, scratch);
	}
	sort_nodes(t, t->roots, t->root_count, scratch);
	i_free(tmp);
	i_free(scratch);
	subjects_merge(t);
	sort_all(t);
}

/* ---- ORDEREDSUBJECT ---- */

struct subject_item {
	uint64_t subject;
	int64_t date;
	uint32_t msg;
};

static int subject_item_cmp(const void *p1, const void *p2)
{
	const struct subject_item *a = p1, *b = p2;

	if (a->subject != b->subject)
		return a->subject < b->subject ? -1 : 1;
	if (a->date != b->date)
		return a->date < b->date ? -1 : 1;
	return a->msg < b->msg ? -1 : a->msg > b->msg ? 1 : 0;
}

/* Messages with one base subject form a thread: the earliest is the
   root, the others its children (no grandchildren). Node i is message
   i here. */
static void orderedsubject_finish(struct imap_thread *t)
{
	struct subject_item *items =
		i_malloc(i_mul_size(t->msg_count + 1, sizeof(*items)));
	uint32_t first = NODE_NONE, last = NODE_NONE;

	for (uint32_t i = 0; i < t->msg_count; i++) {
		items[i].subject = t->msgs[i].subject;
		items[i].date = t->msgs[i].date;
		items[i].msg = i;
	}
	if (t->msg_count > 1)
		qsort(items, t->msg_count, sizeof(*items), subject_item_cmp);
	t->roots = i_malloc(i_mul_size(t->msg_count + 1, sizeof(*t->roots)));
	for (uint32_t i = 0; i < t->msg_count; i++) {
		uint32_t node = items[i].msg;
		if (i == 0 || items[i].subject != items[i - 1].subject) {
			first = node;
			last = NODE_NONE;
			roots_add(t, node);
			continue;
		}
		/* append, keeping the date order */
		t->nodes[node].parent = first;
		if (last == NODE_NONE)
			t->nodes[first].first_child = node;
		else
			t->nodes[last].next_sibling = node;
		last = node;
	}
	i_free(items);
	struct sort_item *scratch =
		i_malloc(i_mul_size(t->root_count + 1, sizeof(*scratch)));
	sort_nodes(t, t->roots, t->root_count, scratch);
	i_free(scratch);
}

void imap_thread_finish(struct imap_thread *t)
{
	i_assert(!t->finished);
	t->finished = true;
	table_free(&t->ids);
	if (t->alg == IMAP_THREAD_REFERENCES)
		references_finish(t);
	else
		orderedsubject_finish(t);
}

/* ---- the answer ---- */

static void out_str(buffer_t *out, const char *str)
{
	if (buffer_append_str(out, str) < 0)
		i_panic("THREAD output piece too small");
}

/* Start the next list: the next sibling of the innermost nested list,
   or close that nesting, or the next thread. Returns false at the end. */
static bool write_next_list(struct imap_thread *t, buffer_t *out)
{
	uint32_t next;

	if (t->depth == 0) {
		if (t->out_root == t->root_count)
			return false;
		next = t->roots[t->out_root++];
	} else {
		next = t->nodes[t->stack[t->depth - 1]].next_sibling;
		if (next == NODE_NONE) {
			t->depth--;
			out_str(out, ")");
			return true;
		}
		t->stack[t->depth - 1] = next;
	}
	out_str(out, "(");
	t->out_node = next;
	t->out_first = true;
	return true;
}

/* Enter out_node: its number, then its single child (a chain), or the
   nested lists of its children, or the end of the list. */
static void write_node(struct imap_thread *t, buffer_t *out)
{
	uint32_t node = t->out_node, c = t->nodes[node].first_child;

	if (is_real(t, node)) {
		if (!t->out_first)
			out_str(out, " ");
		if (buffer_append_u32(out, t->msgs[t->nodes[node].msg].num) < 0)
			i_panic("THREAD output piece too small");
		t->out_first = false;
	}
	if (c == NODE_NONE) {
		out_str(out, ")");
		t->out_node = NODE_NONE;
	} else if (t->nodes[c].next_sibling == NODE_NONE) {
		t->out_node = c;
	} else {
		out_str(out, t->out_first ? "(" : " (");
		if (t->depth == t->stack_alloc)
			t->stack = grow(t->stack, &t->stack_alloc,
					sizeof(*t->stack));
		t->stack[t->depth++] = c;
		t->out_node = c;
		t->out_first = true;
	}
}

bool imap_thread_write(struct imap_thread *t, buffer_t *out, size_t max_used)
{
	i_assert(t->finished);
	while (out->used + THREAD_WRITE_STEP_MAX <= max_used) {
		if (t->out_node != NODE_NONE)
			write_node(t, out);
		else if (!write_next_list(t, out))
			return true;
	}
	return false;
}
