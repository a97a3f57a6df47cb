/* THREAD algorithms (imap/imap-thread.c) over in-memory messages: the
   REFERENCES steps (links, loops, duplicates, dummies, subject merging,
   sibling order) and ORDEREDSUBJECT, and the answer's syntax. */
#include "test-common.h"
#include "buffer.h"
#include "imap-thread.h"

#include <string.h>

/* Messages are given in mailbox order. Subjects are base subjects
   already; ids and refs are space-separated Message-IDs. */
struct test_msg {
	uint32_t num;
	int64_t date;
	const char *id, *refs, *subject;
	bool reply;
};

static uint64_t hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h == 0 ? 1 : h;
}

static void add_msg(struct imap_thread *t, const struct test_msg *m)
{
	uint64_t refs[32];
	struct imap_thread_msg msg;
	unsigned int count = 0;
	const char *p = m->refs;

	while (p != NULL && *p != '\0') {
		const char *sp = strchr(p, ' ');
		size_t len = sp == NULL ? strlen(p) : (size_t)(sp - p);
		refs[count++] = hash(p, len);
		p = sp == NULL ? NULL : sp + 1;
	}
	memset(&msg, 0, sizeof(msg));
	msg.num = m->num;
	msg.date = m->date;
	msg.msgid = m->id == NULL ? 0 : hash(m->id, strlen(m->id));
	msg.refs = refs;
	msg.ref_count = count;
	msg.subject = m->subject == NULL || *m->subject == '\0' ? 0 :
		hash(m->subject, strlen(m->subject));
	msg.reply = m->reply;
	imap_thread_add(t, &msg);
}

/* The answer, written in pieces of at most piece bytes each. */
static const char *run(enum imap_thread_alg alg, const struct test_msg *msgs,
		       unsigned int count, size_t piece)
{
	static char result[4096];
	struct imap_thread *t = imap_thread_init(alg, piece % 2 == 0 ? count : 0);
	buffer_t out;

	for (unsigned int i = 0; i < count; i++)
		add_msg(t, &msgs[i]);
	imap_thread_finish(t);
	buffer_init(&out, sizeof(result) - 1);
	size_t max = piece;
	while (!imap_thread_write(t, &out, max))
		max += piece;
	memcpy(result, out.data, out.used + 1);
	buffer_free(&out);
	imap_thread_deinit(&t);
	return result;
}

#define REFS(msgs) run(IMAP_THREAD_REFERENCES, msgs, N_ELEMENTS(msgs), 4096)

static void test_thread_chain_branch(void)
{
	static const struct test_msg chain[] = {
		{ 1, 10, "a", NULL, "s1", false },
		{ 2, 20, "b", "a", "s2", false },
		{ 3, 30, "c", "a b", "s3", false },
	};
	test_assert_str(REFS(chain), "(1 2 3)");

	/* parents before children by date among siblings: 3 before 2 */
	static const struct test_msg branch[] = {
		{ 1, 10, "a", NULL, "s1", false },
		{ 2, 30, "b", "a", "s2", false },
		{ 3, 20, "c", "a", "s3", false },
		{ 4, 40, "d", "a b", "s4", false },
	};
	test_assert_str(REFS(branch), "(1 (3)(2 4))");
}

/* The RFC's example: (3 6 (4 23)(44 7 96)) */
static void test_thread_rfc_example(void)
{
	static const struct test_msg msgs[] = {
		{ 3, 1, "m3", NULL, "x", false },
		{ 4, 3, "m4", "m3 m6", "x4", false },
		{ 6, 2, "m6", "m3", "x6", false },
		{ 7, 5, "m7", "m3 m6 m44", "x7", false },
		{ 23, 4, "m23", "m3 m6 m4", "x23", false },
		{ 44, 4, "m44", "m3 m6", "x44", false },
		{ 96, 6, "m96", "m3 m6 m44 m7", "x96", false },
	};
	test_assert_str(REFS(msgs), "(3 6 (4 23)(44 7 96))");
	/* piece by piece gives the same */
	test_assert_str(run(IMAP_THREAD_REFERENCES, msgs, N_ELEMENTS(msgs), 17),
			"(3 6 (4 23)(44 7 96))");
}

static void test_thread_dummies(void)
{
	/* two replies to a missing message stay together under a dummy */
	static const struct test_msg siblings[] = {
		{ 2, 20, "b", "x", "s2", false },
		{ 3, 10, "c", "x", "s3", false },
	};
	test_assert_str(REFS(siblings), "((3)(2))");
	/* a single one is promoted to the root */
	static const struct test_msg single[] = {
		{ 1, 10, "a", NULL, "s1", false },
		{ 2, 20, "b", "x", "s2", false },
	};
	test_assert_str(REFS(single), "(1)(2)");
	/* a missing message between two: its child moves up */
	static const struct test_msg middle[] = {
		{ 1, 10, "a", NULL, "s1", false },
		{ 2, 20, "b", "a x", "s2", false },
		{ 3, 30, "c", "a x", "s3", false },
	};
	test_assert_str(REFS(middle), "(1 (2)(3))");
	/* nested dummies under a root dummy */
	static const struct test_msg nested[] = {
		{ 1, 10, "a", "x y", "s1", false },
		{ 2, 20, "b", "x z", "s2", false },
	};
	test_assert_str(REFS(nested), "((1)(2))");
}

static void test_thread_loops_duplicates(void)
{
	/* a and b name each other as parent: the first link wins */
	static const struct test_msg loop[] = {
		{ 1, 10, "a", "b", "s1", false },
		{ 2, 20, "b", "a", "s2", false },
	};
	test_assert_str(REFS(loop), "(2 1)");
	/* a message referencing itself */
	static const struct test_msg self[] = {
		{ 1, 10, "a", "a", "s1", false },
	};
	test_assert_str(REFS(self), "(1)");
	/* the second "a" gets a unique id: the reply goes to the first */
	static const struct test_msg dup[] = {
		{ 1, 10, "a", NULL, "s1", false },
		{ 2, 20, "a", NULL, "s2", false },
		{ 3, 30, "c", "a", "s3", false },
	};
	test_assert_str(REFS(dup), "(1 3)(2)");
	/* no Message-ID at all */
	static const struct test_msg noid[] = {
		{ 1, 10, NULL, NULL, "s1", false },
		{ 2, 5, NULL, NULL, "s2", false },
	};
	test_assert_str(REFS(noid), "(2)(1)");
	/* a truncated References: step 1B moves the message */
	static const struct test_msg moved[] = {
		{ 1, 10, "a", NULL, "s1", false },
		{ 2, 20, "b", NULL, "s2", false },
		{ 3, 30, "c", "a", "s3", false },
		{ 4, 40, "d", "b c", "s4", false },
	};
	test_assert_str(REFS(moved), "(1 3 4)(2)");
}

static void test_thread_subjects(void)
{
	/* a reply without references joins the original */
	static const struct test_msg reply[] = {
		{ 1, 10, "a", NULL, "hello", false },
		{ 2, 20, "b", NULL, "hello", true },
	};
	test_assert_str(REFS(reply), "(1 2)");
	/* the original arriving later still becomes the parent */
	static const struct test_msg reply_first[] = {
		{ 1, 10, "a", NULL, "hello", true },
		{ 2, 20, "b", NULL, "hello", false },
	};
	test_assert_str(REFS(reply_first), "(2 1)");
	/* two originals: siblings under a new dummy */
	static const struct test_msg twins[] = {
		{ 1, 10, "a", NULL, "hello", false },
		{ 2, 20, "b", NULL, "hello", false },
		{ 3, 30, "c", NULL, "other", false },
	};
	test_assert_str(REFS(twins), "((1)(2))(3)");
	/* empty subjects never merge */
	static const struct test_msg empty[] = {
		{ 1, 10, "a", NULL, "", false },
		{ 2, 20, "b", NULL, "", true },
	};
	test_assert_str(REFS(empty), "(1)(2)");
	/* a dummy thread takes the message of its subject */
	static const struct test_msg dummy[] = {
		{ 1, 10, "a", "x", "hello", false },
		{ 2, 20, "b", "x", "hello", true },
		{ 3, 30, "c", NULL, "hello", false },
	};
	test_assert_str(REFS(dummy), "((1)(2)(3))");
	/* two dummies with one subject: their children join */
	static const struct test_msg dummies[] = {
		{ 1, 10, "a", "x", "hello", false },
		{ 2, 20, "b", "x", "other", false },
		{ 3, 30, "c", "y", "hello", false },
		{ 4, 40, "d", "y", "third", false },
	};
	test_assert_str(REFS(dummies), "((1)(2)(3)(4))");
}

static void test_thread_orderedsubject(void)
{
	static const struct test_msg msgs[] = {
		{ 1, 10, NULL, NULL, "a", false },
		{ 2, 20, NULL, NULL, "b", false },
		{ 3, 30, NULL, NULL, "a", true },
		{ 4, 25, NULL, NULL, "a", false },
		{ 5, 5, NULL, NULL, "b", false },
		{ 6, 50, NULL, NULL, "c", false },
	};
	test_assert_str(run(IMAP_THREAD_ORDEREDSUBJECT, msgs, N_ELEMENTS(msgs),
			    4096), "(5 2)(1 (4)(3))(6)");
	test_assert_str(run(IMAP_THREAD_ORDEREDSUBJECT, msgs, 0, 4096), "");
	/* equal dates: mailbox order */
	static const struct test_msg ties[] = {
		{ 1, 10, NULL, NULL, "b", false },
		{ 2, 10, NULL, NULL, "a", false },
	};
	test_assert_str(run(IMAP_THREAD_ORDEREDSUBJECT, ties, 2, 4096),
			"(1)(2)");
}

static void test_thread_big(void)
{
	/* a long reply chain and a wide fan-out stay linear */
	enum { N = 20000 };
	struct imap_thread *t = imap_thread_init(IMAP_THREAD_REFERENCES, N / 2);
	buffer_t out;

	for (uint32_t i = 0; i < N; i++) {
		struct imap_thread_msg msg;
		uint64_t ref = i == 0 ? 0 : (i < N / 2 ? i : 1);
		memset(&msg, 0, sizeof(msg));
		msg.num = i + 1;
		msg.date = i;
		msg.msgid = i + 1;
		msg.refs = &ref;
		msg.ref_count = i == 0 ? 0 : 1;
		imap_thread_add(t, &msg);
	}
	imap_thread_finish(t);
	buffer_init(&out, 1024 * 1024);
	test_assert(imap_thread_write(t, &out, out.max_size));
	test_assert(strncmp(out.data, "(1 (2 3 4 5", 11) == 0);
	buffer_free(&out);
	imap_thread_deinit(&t);
}

TEST_MAIN(TEST(test_thread_chain_branch), TEST(test_thread_rfc_example),
	  TEST(test_thread_dummies), TEST(test_thread_loops_duplicates),
	  TEST(test_thread_subjects), TEST(test_thread_orderedsubject),
	  TEST(test_thread_big))
