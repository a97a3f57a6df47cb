/* SORT program, search slices and key ordering (imap-sort.h). */
#include "imap-common.h"
#include "imap-sort.h"
#include "hash.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef __GLIBC__
#  include <malloc.h>
#endif

/* ---- parsing ---- */

static const struct {
	const char *name;
	enum imap_sort_key key;
} sort_key_names[] = {
	{ "ARRIVAL", IMAP_SORT_ARRIVAL }, { "CC", IMAP_SORT_CC },
	{ "DATE", IMAP_SORT_DATE }, { "FROM", IMAP_SORT_FROM },
	{ "SIZE", IMAP_SORT_SIZE }, { "SUBJECT", IMAP_SORT_SUBJECT },
	{ "TO", IMAP_SORT_TO }, { "DISPLAYFROM", IMAP_SORT_DISPLAYFROM },
	{ "DISPLAYTO", IMAP_SORT_DISPLAYTO },
};

int imap_sort_parse(const struct imap_arg *list, unsigned int count,
		    struct imap_sort_criterion crit[IMAP_SORT_MAX_KEYS],
		    unsigned int *count_r, const char **error_r)
{
	unsigned int n = 0;
	bool reverse = false;

	for (unsigned int i = 0; i < count; i++) {
		if (imap_arg_atom_equals(&list[i], "REVERSE") && !reverse) {
			reverse = true;
			continue;
		}
		unsigned int j;
		for (j = 0; j < N_ELEMENTS(sort_key_names); j++) {
			if (imap_arg_atom_equals(&list[i], sort_key_names[j].name))
				break;
		}
		if (j == N_ELEMENTS(sort_key_names)) {
			*error_r = "Invalid sort criterion.";
			return -1;
		}
		if (n == IMAP_SORT_MAX_KEYS) {
			*error_r = "Too many sort criteria.";
			return -1;
		}
		crit[n].key = sort_key_names[j].key;
		crit[n].reverse = reverse;
		n++;
		reverse = false;
	}
	if (n == 0 || reverse) {
		*error_r = "Invalid sort criteria.";
		return -1;
	}
	*count_r = n;
	return 0;
}

bool imap_sort_charset_ok(const struct imap_arg *arg)
{
	const char *name;

	if (!imap_arg_get_astring(arg, &name))
		return false;
	return strcasecmp(name, "US-ASCII") == 0 ||
		strcasecmp(name, "UTF-8") == 0;
}

/* ---- searching ---- */

void imap_sort_search_init(struct imap_sort_search *ss, struct mailbox *box,
			   struct mail_search_program *program)
{
	memset(ss, 0, sizeof(*ss));
	ss->box = box;
	ss->next_seq = 1;
	ss->search = mail_search_init(box, program, time(NULL));
	imap_msg_fill_init(&ss->fill, box);
	mail_search_set_read_callback(ss->search, imap_msg_fill_read_callback,
				      &ss->fill);
}

void imap_sort_search_deinit(struct imap_sort_search *ss)
{
	if (ss->search != NULL)
		mail_search_deinit(&ss->search);
	imap_msg_fill_deinit(&ss->fill);
	i_free(ss->seqs);
}

int imap_sort_search_continue(struct imap_sort_search *ss,
			      const char **error_r)
{
	uint32_t count = mailbox_get_count(ss->box);
	uint64_t bytes_end = mail_search_get_bytes_read(ss->search) +
		4 * 1024 * 1024;

	for (unsigned int n = 0; n < IMAP_SORT_MSGS_PER_SLICE; n++) {
		if (ss->next_seq > count)
			break;
		int ret = mail_search_match(ss->search, ss->next_seq, error_r);
		if (ret < 0)
			return -1;
		if (ret > 0) {
			if (ss->count == ss->alloc) {
				ss->alloc = ss->alloc == 0 ? 256 : ss->alloc * 2;
				ss->seqs = i_realloc(ss->seqs, i_mul_size(
					ss->alloc, sizeof(*ss->seqs)));
			}
			ss->seqs[ss->count++] = ss->next_seq;
		}
		ss->next_seq++;
		if (mail_search_get_bytes_read(ss->search) >= bytes_end)
			break;
	}
	imap_msg_fill_flush(&ss->fill);
	if (ss->next_seq <= count)
		return 0;
	mail_search_deinit(&ss->search);
	return 1;
}

int64_t imap_sort_sent_date(struct mailbox *box, uint32_t seq,
			    const struct mail_sort_keys *keys)
{
	const char *error;
	time_t t = 0;

	if (keys->sent_valid)
		return keys->sent_date;
	if (mailbox_msg_internaldate(box, seq, &t, &error) < 0)
		t = 0;
	return (int64_t)t;
}

/* ---- ordering ---- */

/* One key of one message: a number, or a string in the arena. */
union sort_value {
	int64_t num;
	struct {
		uint32_t off, len;
	} str;
};

struct imap_sort_ctx {
	struct mailbox *box;
	struct imap_sort_criterion crit[IMAP_SORT_MAX_KEYS];
	unsigned int crit_count;
	bool need_keys;            /* a key comes from mail-sort-keys */
	struct mail_sort_keys_reader *reader;

	uint32_t *seqs;            /* the matches; sorted by imap_sort_run */
	uint32_t *uids;            /* their uids in that order, if wanted */
	bool want_uids;
	unsigned int count, next;
	union sort_value *values;  /* count * crit_count */
	char *arena;               /* the string keys */
	size_t arena_used, arena_alloc;
	unsigned int rank_key;     /* the key rank_strings() orders by */
};

/* What a comparison sees: a message and the shared keys (the distinct
   strings' qsort(), imap_sort_compare()) */
struct sort_entry {
	uint32_t idx;
	const struct imap_sort_ctx *ctx;
};

static bool key_is_string(enum imap_sort_key key)
{
	return key != IMAP_SORT_ARRIVAL && key != IMAP_SORT_DATE &&
		key != IMAP_SORT_SIZE;
}

struct imap_sort_ctx *
imap_sort_init(struct mailbox *box, const struct imap_sort_criterion *crit,
	       unsigned int crit_count, const uint32_t *seqs,
	       unsigned int count)
{
	struct imap_sort_ctx *ctx = i_malloc(sizeof(*ctx));

	i_assert(crit_count > 0 && crit_count <= IMAP_SORT_MAX_KEYS);
	ctx->box = box;
	memcpy(ctx->crit, crit, crit_count * sizeof(*crit));
	ctx->crit_count = crit_count;
	for (unsigned int i = 0; i < crit_count; i++) {
		if (crit[i].key != IMAP_SORT_ARRIVAL &&
		    crit[i].key != IMAP_SORT_SIZE)
			ctx->need_keys = true;
	}
	ctx->count = count;
	ctx->seqs = i_malloc(i_mul_size(count + 1, sizeof(*ctx->seqs)));
	if (count > 0)   /* no match: seqs may be NULL */
		memcpy(ctx->seqs, seqs, count * sizeof(*seqs));
	/* ctx->seqs stays as it is until the last key is read */
	/* The key reader does not fill ENVELOPEs as the search does: a
	   second header parse and deflate per message made the first THREAD
	   of 10,000 messages about 3x slower (doc/performance.md) */
	if (ctx->need_keys)
		ctx->reader = mail_sort_keys_reader_init(box, ctx->seqs, count);
	ctx->values = i_malloc(i_mul_size(i_mul_size(count + 1, crit_count),
					  sizeof(*ctx->values)));
	return ctx;
}

void imap_sort_deinit(struct imap_sort_ctx **_ctx)
{
	struct imap_sort_ctx *ctx = *_ctx;

	*_ctx = NULL;
	if (ctx->reader != NULL)
		mail_sort_keys_reader_deinit(&ctx->reader);
	i_free(ctx->seqs);
	i_free(ctx->uids);
	i_free(ctx->values);
	i_free(ctx->arena);
	i_free(ctx);
}

static void arena_add(struct imap_sort_ctx *ctx, union sort_value *v,
		      const unsigned char *data, size_t len)
{
	if (ctx->arena_used + len > ctx->arena_alloc) {
		ctx->arena_alloc = i_add_size(ctx->arena_alloc, len) * 2;
		ctx->arena = i_realloc(ctx->arena, ctx->arena_alloc);
	}
	/* keys are at most MAIL_SORT_STR_MAX bytes; the arena stays far
	   below 4 GB for any mailbox the index can hold */
	i_assert(ctx->arena_used + len <= UINT32_MAX);
	memcpy(ctx->arena + ctx->arena_used, data, len);
	v->str.off = (uint32_t)ctx->arena_used;
	v->str.len = (uint32_t)len;
	ctx->arena_used += len;
}

static const enum mail_sort_str key_strs[] = {
	[IMAP_SORT_CC] = MAIL_SORT_STR_CC,
	[IMAP_SORT_FROM] = MAIL_SORT_STR_FROM,
	[IMAP_SORT_SUBJECT] = MAIL_SORT_STR_SUBJECT,
	[IMAP_SORT_TO] = MAIL_SORT_STR_TO,
	[IMAP_SORT_DISPLAYFROM] = MAIL_SORT_STR_DISPLAYFROM,
	[IMAP_SORT_DISPLAYTO] = MAIL_SORT_STR_DISPLAYTO,
};

/* The keys of message i. Returns 0, or -1 on an I/O error; a message
   that vanished gets empty keys. */
static int read_msg_keys(struct imap_sort_ctx *ctx, unsigned int i,
			 const char **error_r)
{
	struct mail_sort_keys keys;
	uint32_t seq = ctx->seqs[i];
	union sort_value *v = &ctx->values[(size_t)i * ctx->crit_count];
	int ret = 0;

	memset(&keys, 0, sizeof(keys));
	if (ctx->need_keys &&
	    (ret = mail_sort_keys_get(ctx->reader, seq, &keys, NULL,
				       error_r)) < 0)
		return -1;
	for (unsigned int k = 0; k < ctx->crit_count; k++) {
		enum imap_sort_key key = ctx->crit[k].key;
		time_t t = 0;
		uint64_t size = 0;

		switch (key) {
		case IMAP_SORT_ARRIVAL:
			(void)mailbox_msg_internaldate(ctx->box, seq, &t, error_r);
			v[k].num = (int64_t)t;
			break;
		case IMAP_SORT_SIZE:
			(void)mailbox_msg_vsize(ctx->box, seq, &size, error_r);
			v[k].num = (int64_t)size;
			break;
		case IMAP_SORT_DATE:
			v[k].num = imap_sort_sent_date(ctx->box, seq, &keys);
			break;
		default:
			if (ret == 0)
				arena_add(ctx, &v[k], (const void *)"", 0);
			else
				arena_add(ctx, &v[k], keys.str[key_strs[key]],
					  keys.str_len[key_strs[key]]);
			break;
		}
	}
	return 0;
}

int imap_sort_read_keys(struct imap_sort_ctx *ctx, const char **error_r)
{
	struct mail_sort_keys_stats stats;
	uint64_t misses_end = 0;

	if (ctx->reader != NULL) {
		mail_sort_keys_reader_get_stats(ctx->reader, &stats);
		misses_end = stats.misses + IMAP_SORT_MISSES_PER_SLICE;
	}
	for (unsigned int n = 0; n < IMAP_SORT_MSGS_PER_SLICE; n++) {
		if (ctx->next == ctx->count)
			break;
		if (read_msg_keys(ctx, ctx->next, error_r) < 0)
			return -1;
		ctx->next++;
		if (ctx->reader != NULL) {
			mail_sort_keys_reader_get_stats(ctx->reader, &stats);
			if (stats.misses >= misses_end)
				break;
		}
	}
	imap_sort_cache_flush(ctx->box);
	return ctx->next == ctx->count ? 1 : 0;
}

void imap_sort_release_memory(void)
{
#ifdef __GLIBC__
	/* glibc raises its mmap threshold after a big free, so the next
	   command's arrays come from the heap and stay in RSS after it;
	   give the freed pages back */
	(void)malloc_trim(0);
#endif
}

void imap_sort_cache_flush(struct mailbox *box)
{
	const char *error;

	if (mailbox_cache_flush(box, &error) < 0)
		i_error("SORT: writing the cache failed: %s", error);
}

static int str_cmp(const struct imap_sort_ctx *ctx, const union sort_value *a,
		   const union sort_value *b)
{
	uint32_t len = MIN(a->str.len, b->str.len);
	int ret = memcmp(ctx->arena + a->str.off, ctx->arena + b->str.off, len);

	if (ret != 0)
		return ret;
	return a->str.len < b->str.len ? -1 : a->str.len > b->str.len ? 1 : 0;
}

/* imap_sort_compare()'s order of two messages whose keys were read:
   what imap_sort_run() gives, strings compared as bytes. */
static int sort_entry_cmp(const void *p1, const void *p2)
{
	const struct sort_entry *e1 = p1, *e2 = p2;
	const struct imap_sort_ctx *ctx = e1->ctx;
	const union sort_value *a = &ctx->values[(size_t)e1->idx * ctx->crit_count];
	const union sort_value *b = &ctx->values[(size_t)e2->idx * ctx->crit_count];

	for (unsigned int k = 0; k < ctx->crit_count; k++) {
		int ret;
		if (key_is_string(ctx->crit[k].key))
			ret = str_cmp(ctx, &a[k], &b[k]);
		else
			ret = a[k].num < b[k].num ? -1 : a[k].num > b[k].num ? 1 : 0;
		if (ret != 0)
			return ctx->crit[k].reverse ? -ret : ret;
	}
	/* the implicit last key: mailbox order, never reversed */
	return e1->idx < e2->idx ? -1 : e1->idx > e2->idx ? 1 : 0;
}

/* ---- ranking ---- */

/* qsort() of distinct strings: entries name a message that has it */
static int rank_entry_cmp(const void *p1, const void *p2)
{
	const struct sort_entry *e1 = p1, *e2 = p2;
	const struct imap_sort_ctx *ctx = e1->ctx;
	unsigned int k = ctx->rank_key;

	return str_cmp(ctx, &ctx->values[(size_t)e1->idx * ctx->crit_count + k],
		       &ctx->values[(size_t)e2->idx * ctx->crit_count + k]);
}

/* Replace string key k of every message by the rank of its string among
   the distinct ones. Mailing lists repeat subjects and addresses, so
   sorting the messages by strings compared long equal strings over and
   over (memcmp was a quarter of a SORT (SUBJECT)'s CPU); the distinct
   strings are sorted once and the messages by numbers. */
static void rank_strings(struct imap_sort_ctx *ctx, unsigned int k)
{
	unsigned int count = ctx->count, cc = ctx->crit_count, distinct = 0;
	size_t slots_count = 16;

	while (slots_count < (size_t)count * 2)
		slots_count *= 2;
	/* 0 = free, else a distinct string's number + 1 */
	uint32_t *slots = i_malloc(i_mul_size(slots_count, sizeof(*slots)));
	uint32_t *msg_distinct = i_malloc(i_mul_size(count, sizeof(uint32_t)));
	struct sort_entry *firsts = i_malloc(i_mul_size(count, sizeof(*firsts)));

	for (unsigned int i = 0; i < count; i++) {
		const union sort_value *v = &ctx->values[(size_t)i * cc + k];
		size_t j = hash_fnv1a64(ctx->arena + v->str.off, v->str.len) &
			(slots_count - 1);

		for (; slots[j] != 0; j = (j + 1) & (slots_count - 1)) {
			const union sort_value *w = &ctx->values[
				(size_t)firsts[slots[j] - 1].idx * cc + k];
			if (w->str.len == v->str.len &&
			    memcmp(ctx->arena + w->str.off,
				   ctx->arena + v->str.off, v->str.len) == 0)
				break;
		}
		if (slots[j] == 0) {
			firsts[distinct].idx = i;
			firsts[distinct].ctx = ctx;
			slots[j] = ++distinct;
		}
		msg_distinct[i] = slots[j] - 1;
	}
	i_free(slots);
	ctx->rank_key = k;
	if (distinct > 1)
		qsort(firsts, distinct, sizeof(*firsts), rank_entry_cmp);
	/* firsts[r] is the message of the string of rank r; turn that into
	   the rank of each distinct number, reusing msg_distinct's order */
	uint32_t *rank = i_malloc(i_mul_size(distinct + 1, sizeof(*rank)));
	for (unsigned int r = 0; r < distinct; r++)
		rank[msg_distinct[firsts[r].idx]] = r;
	for (unsigned int i = 0; i < count; i++)
		ctx->values[(size_t)i * cc + k].num = rank[msg_distinct[i]];
	i_free(rank);
	i_free(firsts);
	i_free(msg_distinct);
}

void imap_sort_want_uids(struct imap_sort_ctx *ctx)
{
	ctx->want_uids = true;
}

/* ---- ordering by numbers ---- */

struct radix_item {
	uint64_t key;
	uint32_t idx;
};

/* Key k of message idx as an unsigned number in the wanted order:
   the sign bit flipped keeps int64 order, the complement reverses. */
static uint64_t radix_key(const struct imap_sort_ctx *ctx, uint32_t idx,
			  unsigned int k)
{
	uint64_t u = (uint64_t)ctx->values[(size_t)idx * ctx->crit_count + k].num ^
		(1ULL << 63);

	return ctx->crit[k].reverse ? ~u : u;
}

/* Order perm (the message indexes, in mailbox order) by every key, all
   numbers by now: a stable LSD radix sort by the last key first, then
   the one before... leaves mailbox order as the last key, never
   reversed. Bytes in which all keys agree take no pass, so ranks of a
   few thousand strings take two. This replaced a qsort() whose
   comparisons were half of a SORT (SUBJECT)'s CPU after ranking. */
static void radix_sort(const struct imap_sort_ctx *ctx, uint32_t *perm)
{
	unsigned int count = ctx->count;
	struct radix_item *a = i_malloc(i_mul_size(count, sizeof(*a)));
	struct radix_item *b = i_malloc(i_mul_size(count, sizeof(*b)));

	for (unsigned int k = ctx->crit_count; k-- > 0; ) {
		uint64_t all_and = ~0ULL, all_or = 0;

		for (unsigned int i = 0; i < count; i++) {
			a[i].idx = perm[i];
			a[i].key = radix_key(ctx, perm[i], k);
			all_and &= a[i].key;
			all_or |= a[i].key;
		}
		uint64_t differ = all_and ^ all_or;
		for (unsigned int shift = 0; shift < 64; shift += 8) {
			size_t pos[256] = { 0 };

			if (((differ >> shift) & 0xff) == 0)
				continue;
			for (unsigned int i = 0; i < count; i++)
				pos[(a[i].key >> shift) & 0xff]++;
			size_t sum = 0;
			for (unsigned int j = 0; j < 256; j++) {
				size_t n = pos[j];
				pos[j] = sum;
				sum += n;
			}
			for (unsigned int i = 0; i < count; i++)
				b[pos[(a[i].key >> shift) & 0xff]++] = a[i];
			struct radix_item *tmp = a;
			a = b;
			b = tmp;
		}
		for (unsigned int i = 0; i < count; i++)
			perm[i] = a[i].idx;
	}
	i_free(a);
	i_free(b);
}

void imap_sort_run(struct imap_sort_ctx *ctx)
{
	i_assert(ctx->next == ctx->count);
	for (unsigned int k = 0; k < ctx->crit_count; k++) {
		if (key_is_string(ctx->crit[k].key) && ctx->count > 1)
			rank_strings(ctx, k);
	}
	/* seqs are ascending, so idx order is mailbox order */
	uint32_t *perm = i_malloc(i_mul_size(ctx->count + 1, sizeof(*perm)));
	for (unsigned int i = 0; i < ctx->count; i++)
		perm[i] = i;
	if (ctx->count > 1)
		radix_sort(ctx, perm);
	uint32_t *sorted = i_malloc(i_mul_size(ctx->count + 1, sizeof(*sorted)));
	for (unsigned int i = 0; i < ctx->count; i++)
		sorted[i] = ctx->seqs[perm[i]];
	if (ctx->want_uids) {
		/* Read in mailbox order (the index records one after the
		   other), then put in sort order from an array that stays
		   in the CPU cache: looking each up in sort order was a
		   cache miss per message. */
		uint32_t *by_idx = i_malloc(i_mul_size(ctx->count + 1,
						       sizeof(*by_idx)));
		for (unsigned int i = 0; i < ctx->count; i++)
			by_idx[i] = mailbox_msg_uid(ctx->box, ctx->seqs[i]);
		ctx->uids = i_malloc(i_mul_size(ctx->count + 1,
						sizeof(*ctx->uids)));
		for (unsigned int i = 0; i < ctx->count; i++)
			ctx->uids[i] = by_idx[perm[i]];
		i_free(by_idx);
	}
	i_free(perm);
	i_free(ctx->seqs);
	ctx->seqs = sorted;
}

int imap_sort_compare(struct mailbox *box,
		      const struct imap_sort_criterion *crit,
		      unsigned int crit_count, uint32_t seq1, uint32_t seq2,
		      int *cmp_r, const char **error_r)
{
	/* in mailbox order, so that idx order is the implicit last key */
	uint32_t seqs[2] = { MIN(seq1, seq2), MAX(seq1, seq2) };
	struct imap_sort_ctx *ctx;
	int ret;

	if (seq1 == seq2) {
		*cmp_r = 0;
		return 0;
	}
	ctx = imap_sort_init(box, crit, crit_count, seqs, 2);
	while ((ret = imap_sort_read_keys(ctx, error_r)) == 0) ;
	if (ret > 0) {
		struct sort_entry e0 = { .idx = 0, .ctx = ctx };
		struct sort_entry e1 = { .idx = 1, .ctx = ctx };
		int cmp = sort_entry_cmp(&e0, &e1);
		*cmp_r = seq1 < seq2 ? cmp : -cmp;
	}
	imap_sort_deinit(&ctx);
	return ret < 0 ? -1 : 0;
}

const uint32_t *imap_sort_get_seqs(struct imap_sort_ctx *ctx)
{
	return ctx->seqs;
}

const uint32_t *imap_sort_get_uids(struct imap_sort_ctx *ctx)
{
	return ctx->uids;
}

void imap_sort_get_stats(struct imap_sort_ctx *ctx,
			 struct mail_sort_keys_stats *stats_r)
{
	if (ctx->reader != NULL)
		mail_sort_keys_reader_get_stats(ctx->reader, stats_r);
	else
		memset(stats_r, 0, sizeof(*stats_r));
}
