/* Randomized model-based test: random appends, flag/keyword updates,
   expunges, keyword definitions, cache adds, resets, checkpoints and
   re-opens through two handles on one index, compared after every step
   with a plain in-memory model. Each view also keeps a mirror of its uids
   built only from the sync callbacks, which must match the view.
   MOAT_TEST_SEED=n repeats a run; MOAT_MODEL_STEPS=n changes its length. */
#include "test-common.h"
#include "mail-index.h"
#include "mail-cache.h"

#include <sys/stat.h>
#include <time.h>

#define MODEL_MAX 20000
#define DEFAULT_STEPS 3000

struct model_msg {
	uint32_t uid;
	uint8_t flags;
	uint32_t keywords;
	uint32_t cache_value;      /* 0 = none */
};

struct model {
	struct model_msg msgs[MODEL_MAX];
	uint32_t count, next_uid, uidvalidity;
	unsigned int keywords;
};

struct handle {
	struct mail_index *index;
	struct mail_index_view *view;
	uint32_t mirror[MODEL_MAX];
	uint32_t mirror_count;
	bool mirror_bad;
};

static struct model model;
static struct handle handles[2];
static const char *dir;
static unsigned int seed, step;

static unsigned int rnd(unsigned int n)
{
	return (unsigned int)rand_r(&seed) % n;
}

static void cb_expunge(void *ctx, uint32_t seq, uint32_t uid)
{
	struct handle *h = ctx;

	if (seq == 0 || seq > h->mirror_count || h->mirror[seq - 1] != uid) {
		h->mirror_bad = true;
		return;
	}
	memmove(&h->mirror[seq - 1], &h->mirror[seq],
		(h->mirror_count - seq) * sizeof(uint32_t));
	h->mirror_count--;
}

static void cb_flags(void *ctx, uint32_t seq, uint32_t uid)
{
	struct handle *h = ctx;

	if (seq == 0 || seq > h->mirror_count || h->mirror[seq - 1] != uid)
		h->mirror_bad = true;
}

static void cb_append(void *ctx, uint32_t seq, uint32_t uid)
{
	struct handle *h = ctx;

	if (seq != h->mirror_count + 1 || h->mirror_count == MODEL_MAX) {
		h->mirror_bad = true;
		return;
	}
	h->mirror[h->mirror_count++] = uid;
}

static const struct mail_index_sync_callbacks callbacks = {
	cb_expunge, cb_flags, cb_append, NULL
};

static void handle_open(struct handle *h)
{
	const char *error;

	if (mail_index_open(dir, MAIL_INDEX_OPEN_CREATE, &h->index, &error) != 1)
		i_panic("open: %s", error);
	mail_index_set_limits(h->index, 8192, 2048);
	h->view = mail_index_view_open(h->index);
	h->mirror_count = mail_index_view_count(h->view);
	for (uint32_t seq = 1; seq <= h->mirror_count; seq++)
		h->mirror[seq - 1] = mail_index_view_lookup(h->view, seq)->uid;
	h->mirror_bad = false;
}

static void handle_close(struct handle *h)
{
	mail_index_view_close(&h->view);
	mail_index_close(&h->index);
}

static bool compare(struct handle *h)
{
	struct mail_index_status st;
	const char *error;
	bool ok = true;

	mail_index_view_get_status(h->view, &st);
	ok &= st.messages_count == model.count && st.next_uid == model.next_uid;
	ok &= !h->mirror_bad && h->mirror_count == model.count;
	ok &= mail_index_view_check(h->view, &error);
	if (model.uidvalidity != 0)
		ok &= st.uidvalidity == model.uidvalidity;
	uint32_t seen = 0, first_unseen = 0;
	for (uint32_t i = 0; ok && i < model.count; i++) {
		const struct mail_index_record *rec = mail_index_view_lookup(h->view, i + 1);
		const struct model_msg *m = &model.msgs[i];
		ok &= rec->uid == m->uid && rec->flags == m->flags &&
			rec->keywords == m->keywords && h->mirror[i] == m->uid;
		seen += (m->flags & MAIL_SEEN) != 0;
		if ((m->flags & MAIL_SEEN) == 0 && first_unseen == 0)
			first_unseen = m->uid;
		if (ok && m->cache_value != 0) {
			const void *data;
			size_t size;
			uint32_t v = 0;
			ok &= mail_cache_lookup(h->view, i + 1, "v", &data, &size) == 1 &&
				size == sizeof(v);
			if (ok)
				memcpy(&v, data, sizeof(v));
			ok &= v == m->cache_value;
		}
	}
	ok &= st.seen_count == seen && st.first_unseen_uid == first_unseen;
	if (!ok)
		fprintf(stderr, "model mismatch at step %u (seed %u, handle %d)\n",
			step, seed, (int)(h - handles));
	return ok;
}

static void sync_handle(struct handle *h)
{
	const char *error;

	test_assert(mail_index_view_sync(h->view, &callbacks, h, &error) == 0);
}

static bool commit(struct mail_index_transaction **t,
		   struct mail_index_commit_result *res)
{
	const char *error;

	return mail_index_transaction_commit(t, rnd(10) == 0 ?
		MAIL_INDEX_FSYNC_ALWAYS : MAIL_INDEX_FSYNC_NEVER, res, &error) == 0;
}

static void op_append(struct handle *h)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(h->index);
	struct mail_index_commit_result res;
	unsigned int n = 1 + rnd(5);
	uint32_t uid = model.next_uid;
	struct model_msg add[5];

	if (model.count + n > MODEL_MAX) {
		mail_index_transaction_rollback(&t);
		return;
	}
	for (unsigned int i = 0; i < n; i++) {
		bool explicit_uid = rnd(3) == 0;
		if (explicit_uid)
			uid += rnd(3);
		add[i].uid = uid;
		add[i].flags = (uint8_t)(rnd(256) & MAIL_FLAGS_PERMANENT);
		add[i].keywords = model.keywords == 0 ? 0 :
			(uint32_t)rnd(1U << MIN(model.keywords, 16));
		add[i].cache_value = 0;
		mail_index_append(t, explicit_uid ? uid : 0, add[i].flags,
				  add[i].keywords, rnd(100000), (int64_t)time(NULL));
		uid++;
	}
	test_assert(commit(&t, &res));
	test_assert_int(res.first_uid, add[0].uid);
	test_assert_int(res.last_uid, add[n - 1].uid);
	memcpy(&model.msgs[model.count], add, n * sizeof(add[0]));
	model.count += n;
	model.next_uid = uid;
}

static void op_flags(struct handle *h)
{
	uint32_t u1 = 1 + rnd(model.next_uid), u2 = u1 + rnd(8);
	uint8_t add = (uint8_t)(rnd(256) & MAIL_FLAGS_PERMANENT);
	uint8_t remove = (uint8_t)(rnd(256) & MAIL_FLAGS_PERMANENT);
	uint32_t kadd = model.keywords == 0 ? 0 : 1U << rnd(model.keywords);
	uint32_t kremove = model.keywords == 0 ? 0 : 1U << rnd(model.keywords);
	struct mail_index_transaction *t = mail_index_transaction_begin(h->index);

	mail_index_update_flags(t, u1, u2, add, remove, kadd, kremove);
	test_assert(commit(&t, NULL));
	for (uint32_t i = 0; i < model.count; i++) {
		struct model_msg *m = &model.msgs[i];
		if (m->uid < u1 || m->uid > u2)
			continue;
		m->flags = (uint8_t)((m->flags | add) & ~remove);
		m->keywords = (m->keywords | kadd) & ~kremove;
	}
}

static void op_expunge(struct handle *h)
{
	uint32_t u1 = 1 + rnd(model.next_uid), u2 = u1 + rnd(4);
	struct mail_index_transaction *t = mail_index_transaction_begin(h->index);
	uint32_t out = 0;

	mail_index_expunge(t, u1, u2);
	test_assert(commit(&t, NULL));
	for (uint32_t i = 0; i < model.count; i++) {
		if (model.msgs[i].uid < u1 || model.msgs[i].uid > u2)
			model.msgs[out++] = model.msgs[i];
	}
	model.count = out;
}

static void op_keyword(struct handle *h)
{
	char name[32];
	unsigned int idx, want = rnd(40);
	const char *error;

	snprintf(name, sizeof(name), "kw%u", want);
	/* Names are defined in the order first asked for: the model only
	   tracks how many exist, so ask for the next new one or an old. */
	if (want >= model.keywords)
		snprintf(name, sizeof(name), "kw%u", model.keywords);
	int ret = mail_index_keyword_define(h->index, name, &idx, &error);
	if (want < model.keywords) {
		test_assert(ret == 0 && idx == want);
	} else if (model.keywords >= MAIL_INDEX_MAX_KEYWORDS) {
		test_assert(ret < 0);
	} else {
		test_assert(ret == 0 && idx == model.keywords);
		model.keywords++;
	}
}

static void op_conflict(struct handle *h)
{
	struct mail_index_transaction *t = mail_index_transaction_begin(h->index);

	if (model.next_uid == 1) {
		mail_index_transaction_rollback(&t);
		return;
	}
	mail_index_append(t, 1 + rnd(model.next_uid - 1), 0, 0, 1, 1);
	test_assert(!commit(&t, NULL));
}

static void op_cache(struct handle *h)
{
	if (model.count == 0)
		return;
	struct model_msg *m = &model.msgs[rnd(model.count)];
	uint32_t v = step + 1;
	struct mail_index_transaction *t = mail_index_transaction_begin(h->index);

	test_assert(mail_cache_add(t, m->uid, "v", &v, sizeof(v)) == 0);
	test_assert(commit(&t, NULL));
	m->cache_value = v;
}

static void op_reset(struct handle *h)
{
	const char *error;
	uint32_t validity = 1000 + step;

	test_assert(mail_index_reset(h->index, validity, model.next_uid, &error) == 0);
	model.count = 0;
	model.uidvalidity = validity;
	model.keywords = 0;
}

static void run_step(void)
{
	struct handle *h = &handles[rnd(2)];
	unsigned int op = rnd(100);

	if (op < 30)
		op_append(h);
	else if (op < 55)
		op_flags(h);
	else if (op < 68)
		op_expunge(h);
	else if (op < 73)
		op_keyword(h);
	else if (op < 78) {
		handle_close(h);
		handle_open(h);
	} else if (op < 80)
		op_conflict(h);
	else if (op < 95)
		op_cache(h);
	else if (op < 96)
		op_reset(h);
	/* else: only syncs */

	/* One view sometimes lags behind for several steps. */
	for (unsigned int i = 0; i < 2; i++) {
		if (&handles[i] == h || rnd(3) != 0) {
			sync_handle(&handles[i]);
			test_assert(compare(&handles[i]));
		}
	}
}

static void test_model(void)
{
	const char *env = getenv("MOAT_TEST_SEED");
	const char *steps_env = getenv("MOAT_MODEL_STEPS");
	unsigned int steps = steps_env != NULL ? (unsigned int)atoi(steps_env) :
		DEFAULT_STEPS;
	static char path[600];

	seed = env != NULL ? (unsigned int)strtoul(env, NULL, 10) :
		(unsigned int)time(NULL) ^ (unsigned int)getpid();
	printf("model test seed %u (MOAT_TEST_SEED=%u to repeat), %u steps\n",
	       seed, seed, steps);
	snprintf(path, sizeof(path), "%s/model", test_tmpdir());
	test_assert(mkdir(path, 0700) == 0);
	dir = path;
	model.next_uid = 1;
	handle_open(&handles[0]);
	handle_open(&handles[1]);
	unsigned int failed_before = test_checks_failed;
	for (step = 0; step < steps && test_checks_failed == failed_before; step++)
		run_step();
	handle_close(&handles[0]);
	handle_close(&handles[1]);
	/* A final fresh open agrees too. */
	handle_open(&handles[0]);
	test_assert(compare(&handles[0]));
	handle_close(&handles[0]);
}

TEST_MAIN(TEST(test_model))
