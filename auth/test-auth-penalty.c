/* Unit tests for auth-penalty.c: the delay model, the per-address queue
   and its admission rules, decay, keys and eviction. */
#include "test-common.h"
#include "auth-penalty.h"

/* A failed guess from ip checked at now by a client that waits for the
   answer: returns the answer's delay, or -1 if it could not start at
   now; *next_r is when the address's next check may start. */
static int fail_at(struct auth_penalty *p, const char *ip, uint64_t now,
		   uint64_t *next_r)
{
	struct auth_penalty_slot slot = { 0 };
	unsigned int delay;

	if (auth_penalty_begin(p, &slot, ip, NULL, now) != 1) {
		auth_penalty_end(p, &slot, now);
		return -1;
	}
	delay = auth_penalty_failure(p, &slot, now);
	auth_penalty_end(p, &slot, now + delay);
	if (next_r != NULL)
		*next_r = now + 2 * (uint64_t)delay;
	return (int)delay;
}

static void test_growth_and_cap(void)
{
	struct auth_penalty *p = auth_penalty_create(2000, 16);
	uint64_t now = 1000, next;
	int delay = 0;

	test_assert_int(fail_at(p, "192.0.2.1", now, &next), 2000);
	/* answered at 3000; the next check not before 5000 */
	test_assert_int(next, 5000);
	test_assert_int(fail_at(p, "192.0.2.1", next - 1, NULL), -1);
	now = next;
	test_assert_int(fail_at(p, "192.0.2.1", now, &next), 4000);
	now = next;
	test_assert_int(fail_at(p, "192.0.2.1", now, &next), 8000);
	now = next;
	test_assert_int(fail_at(p, "192.0.2.1", now, &next), 15000);
	for (unsigned int i = 0; i < 40; i++) {
		now = next;
		delay = fail_at(p, "192.0.2.1", now, &next);
	}
	test_assert_int(delay, 15000);
	test_assert_int(auth_penalty_get_failures(p, "192.0.2.1", now),
			AUTH_PENALTY_MAX_FAILURES);
	/* another address is independent */
	test_assert_int(fail_at(p, "2001:db8::1", now, NULL), 2000);
	auth_penalty_destroy(&p);
	test_assert(p == NULL);
	/* a base above the usual maximum is the maximum */
	p = auth_penalty_create(20000, 4);
	test_assert_int(fail_at(p, "10.0.0.1", 5, &next), 20000);
	test_assert_int(fail_at(p, "10.0.0.1", next, NULL), 20000);
	auth_penalty_destroy(&p);
}

/* After a failure every authentication waits, a right password too, and
   a success does not clear the count. */
static void test_success_waits_and_keeps_count(void)
{
	struct auth_penalty *p = auth_penalty_create(1000, 16);
	struct auth_penalty_slot ok = { 0 }, next = { 0 };
	int ctx;

	/* failed at 100, answered at 1100: the next check from 2100 */
	test_assert_int(fail_at(p, "10.0.0.1", 100, NULL), 1000);
	test_assert_int(auth_penalty_begin(p, &ok, "10.0.0.1", &ctx, 1100), 0);
	test_assert_int(ok.state, AUTH_PENALTY_SLOT_WAITING);
	test_assert(auth_penalty_next_ready(p, 2099) == NULL);
	test_assert_int(auth_penalty_next_wakeup(p), 2100);
	test_assert(auth_penalty_next_ready(p, 2100) == &ok);
	test_assert(ok.context == &ctx);
	test_assert_int(ok.state, AUTH_PENALTY_SLOT_ACTIVE);
	auth_penalty_end(p, &ok, 2100);      /* the password was right */
	test_assert_int(auth_penalty_get_failures(p, "10.0.0.1", 2100), 1);
	/* the next one waits a delay after the success's answer */
	test_assert_int(auth_penalty_begin(p, &next, "10.0.0.1", NULL, 2101), 0);
	test_assert(auth_penalty_next_ready(p, 3099) == NULL);
	test_assert(auth_penalty_next_ready(p, 3100) == &next);
	auth_penalty_end(p, &next, 3100);
	test_assert_int(auth_penalty_get_failures(p, "10.0.0.1", 3100), 1);
	auth_penalty_destroy(&p);
}

/* A penalised address is checked one at a time in arrival order; a
   clean one AUTH_PENALTY_CLEAN_ACTIVE at a time. A client that hangs up
   before its failure's answer does not shorten the wait. */
static void test_queue(void)
{
	struct auth_penalty *p = auth_penalty_create(1000, 16);
	struct auth_penalty_slot s[AUTH_PENALTY_CLEAN_ACTIVE + 1];
	struct auth_penalty_slot w[AUTH_PENALTY_MAX_WAITING + 1];
	uint64_t now = 10;

	memset(s, 0, sizeof(s));
	memset(w, 0, sizeof(w));
	for (unsigned int i = 0; i < AUTH_PENALTY_CLEAN_ACTIVE; i++)
		test_assert_int(auth_penalty_begin(p, &s[i], "a", NULL, now), 1);
	test_assert_int(auth_penalty_begin(p, &s[AUTH_PENALTY_CLEAN_ACTIVE],
					   "a", NULL, now), 0);
	test_assert(auth_penalty_next_ready(p, now) == NULL);
	test_assert_int(auth_penalty_next_wakeup(p), UINT64_MAX);
	/* another address is not held up */
	test_assert_int(fail_at(p, "b", now, NULL), 1000);
	auth_penalty_end(p, &s[0], now);
	test_assert(auth_penalty_next_ready(p, now) ==
		    &s[AUTH_PENALTY_CLEAN_ACTIVE]);
	/* now "a" fails: from here one at a time, each after the delay */
	test_assert_int(auth_penalty_failure(p, &s[1], now), 1000);
	for (unsigned int i = 2; i <= AUTH_PENALTY_CLEAN_ACTIVE; i++)
		auth_penalty_end(p, &s[i], now);
	for (unsigned int i = 0; i < AUTH_PENALTY_MAX_WAITING; i++)
		test_assert_int(auth_penalty_begin(p, &w[i], "a", NULL, now), 0);
	/* the queue is full */
	test_assert_int(auth_penalty_begin(p, &w[AUTH_PENALTY_MAX_WAITING],
					   "a", NULL, now), -1);
	test_assert_int(w[AUTH_PENALTY_MAX_WAITING].state,
			AUTH_PENALTY_SLOT_NONE);
	test_assert(auth_penalty_next_ready(p, now + 5000) == NULL);
	/* s[1]'s client hangs up at once: still 2 delays after its check */
	auth_penalty_end(p, &s[1], now + 1);
	test_assert(auth_penalty_next_ready(p, now + 1999) == NULL);
	now += 2000;
	test_assert(auth_penalty_next_ready(p, now) == &w[0]);
	/* one at a time even after the delay */
	test_assert(auth_penalty_next_ready(p, now + 5000) == NULL);
	test_assert_int(auth_penalty_failure(p, &w[0], now), 2000);
	auth_penalty_end(p, &w[0], now + 2000);
	/* a waiting one may leave the queue (its client went away) */
	auth_penalty_end(p, &w[1], now + 2000);
	test_assert_int(w[1].state, AUTH_PENALTY_SLOT_NONE);
	test_assert_int(auth_penalty_next_wakeup(p), now + 4000);
	test_assert(auth_penalty_next_ready(p, now + 3999) == NULL);
	test_assert(auth_penalty_next_ready(p, now + 4000) == &w[2]);
	for (unsigned int i = 2; i < AUTH_PENALTY_MAX_WAITING; i++)
		auth_penalty_end(p, &w[i], now + 4000);
	test_assert_int(auth_penalty_next_wakeup(p), UINT64_MAX);
	auth_penalty_destroy(&p);
}

static void test_decay(void)
{
	struct auth_penalty *p = auth_penalty_create(1000, 16);
	uint64_t now = 0, next, failed = 0;

	for (unsigned int i = 0; i < 3; i++) {
		failed = now;
		test_assert(fail_at(p, "10.0.0.1", now, &next) > 0);
		now = next;
	}
	test_assert_int(auth_penalty_get_failures(p, "10.0.0.1", now), 3);
	now = failed + AUTH_PENALTY_DECAY_MSECS;
	test_assert_int(auth_penalty_get_failures(p, "10.0.0.1", now), 2);
	/* a new failure restarts the clock: 3 again */
	test_assert_int(fail_at(p, "10.0.0.1", now, NULL), 4000);
	now += AUTH_PENALTY_DECAY_MSECS - 1;
	test_assert_int(auth_penalty_get_failures(p, "10.0.0.1", now), 3);
	now += 1 + 2 * AUTH_PENALTY_DECAY_MSECS;
	test_assert_int(auth_penalty_get_failures(p, "10.0.0.1", now), 0);
	/* clean again: no wait, the first failure's delay */
	test_assert_int(fail_at(p, "10.0.0.1", now, NULL), 1000);
	auth_penalty_destroy(&p);
}

static void test_keys(void)
{
	char key[AUTH_PENALTY_MAX_IP_LEN + 1];
	struct auth_penalty *p = auth_penalty_create(1000, 16);

	auth_penalty_key("192.0.2.7", key);
	test_assert_str(key, "192.0.2.7");
	auth_penalty_key("::ffff:192.0.2.7", key);
	test_assert_str(key, "192.0.2.7");
	auth_penalty_key("2001:db8:1:2:3:4:5:6", key);
	test_assert_str(key, "2001:db8:1:2::/64");
	auth_penalty_key("", key);
	test_assert_str(key, "unknown");
	/* one /64 is one address */
	test_assert_int(fail_at(p, "2001:db8:1:2::1", 0, NULL), 1000);
	test_assert_int(fail_at(p, "2001:db8:1:2::2", 0, NULL), -1);
	test_assert_int(auth_penalty_get_failures(p, "2001:db8:1:2:ffff::9", 0), 1);
	test_assert_int(fail_at(p, "2001:db8:1:3::1", 0, NULL), 1000);
	/* a mapped address is its IPv4 address */
	test_assert_int(fail_at(p, "192.0.2.7", 0, NULL), 1000);
	test_assert_int(auth_penalty_get_failures(p, "::ffff:192.0.2.7", 0), 1);
	auth_penalty_destroy(&p);
}

static void test_eviction(void)
{
	struct auth_penalty *p = auth_penalty_create(1000, 3);
	struct auth_penalty_slot busy1 = { 0 }, busy2 = { 0 }, x = { 0 };

	test_assert_int(fail_at(p, "a", 10, NULL), 1000);
	test_assert_int(fail_at(p, "b", 20, NULL), 1000);
	test_assert_int(fail_at(p, "c", 30, NULL), 1000);
	test_assert_int(fail_at(p, "a", 2010, NULL), 2000); /* a is newest */
	test_assert_int(fail_at(p, "d", 4050, NULL), 1000); /* evicts b */
	test_assert_int(auth_penalty_get_failures(p, "a", 4050), 2);
	test_assert_int(auth_penalty_get_failures(p, "b", 4050), 0);
	test_assert_int(auth_penalty_get_failures(p, "c", 4050), 1);
	test_assert_int(auth_penalty_get_failures(p, "d", 4050), 1);
	/* addresses in use are never evicted */
	test_assert_int(auth_penalty_begin(p, &busy1, "c", NULL, 10000), 1);
	test_assert_int(auth_penalty_begin(p, &busy2, "d", NULL, 10000), 1);
	test_assert_int(auth_penalty_begin(p, &x, "e", NULL, 10000), 1);
	/* all three busy: a fourth address is refused */
	struct auth_penalty_slot y = { 0 };
	test_assert_int(auth_penalty_begin(p, &y, "f", NULL, 10000), -1);
	auth_penalty_end(p, &x, 10000);
	test_assert_int(auth_penalty_begin(p, &y, "f", NULL, 10000), 1);
	auth_penalty_end(p, &y, 10000);
	auth_penalty_end(p, &busy1, 10000);
	auth_penalty_end(p, &busy2, 10000);
	test_assert_int(auth_penalty_get_failures(p, "c", 10000), 1);
	auth_penalty_destroy(&p);
}

/* What the change callback saw last (the write-through to master). */
struct recorded {
	char key[AUTH_PENALTY_MAX_IP_LEN + 1];
	struct auth_penalty_state state;
	unsigned int calls;
};

static void record_change(const struct auth_penalty_state *state,
			  void *context)
{
	struct recorded *rec = context;

	snprintf(rec->key, sizeof(rec->key), "%s", state->key);
	rec->state = *state;
	rec->state.key = rec->key;
	rec->calls++;
}

/* A failure and the end of a penalised check are written through; a
   new table restored from them (another process, another clock) makes
   the address wait as the old one would have. */
static void test_change_and_restore(void)
{
	struct auth_penalty *p = auth_penalty_create(1000, 16);
	struct auth_penalty_slot slot = { 0 };
	struct recorded rec = { .calls = 0 };
	uint64_t next;

	auth_penalty_set_change_callback(p, record_change, &rec);
	/* a clean address's check reports nothing */
	test_assert_int(auth_penalty_begin(p, &slot, "192.0.2.7", NULL, 100), 1);
	auth_penalty_end(p, &slot, 110);
	test_assert_int(rec.calls, 0);
	test_assert_int(fail_at(p, "192.0.2.7", 1000, &next), 1000);
	test_assert_int(fail_at(p, "192.0.2.7", next, &next), 2000);
	test_assert(rec.calls >= 2);
	test_assert_str(rec.key, "192.0.2.7");
	test_assert_int(rec.state.failures, 2);
	/* written at the failure at 3000: answered 2000 ms later, the next
	   check 2000 ms after that; the end moved nothing */
	test_assert_int(rec.state.decay_age_msecs, 0);
	test_assert_int(rec.state.next_in_msecs, 4000);
	auth_penalty_destroy(&p);

	/* the new auth's clock starts elsewhere; 500 ms passed */
	p = auth_penalty_create(1000, 16);
	rec.state.decay_age_msecs += 500;
	rec.state.next_in_msecs -= 500;
	auth_penalty_restore(p, &rec.state, 50000);
	test_assert_int(auth_penalty_get_failures(p, "192.0.2.7", 50000), 2);
	test_assert_int(auth_penalty_begin(p, &slot, "192.0.2.7", NULL, 50000), 0);
	test_assert(auth_penalty_next_ready(p, 53499) == NULL);
	test_assert(auth_penalty_next_ready(p, 53500) == &slot);
	/* a right password: the end moves the next check, written through */
	rec.calls = 0;
	auth_penalty_set_change_callback(p, record_change, &rec);
	auth_penalty_end(p, &slot, 53600);
	test_assert_int(rec.calls, 1);
	test_assert_int(rec.state.next_in_msecs, 2000);
	auth_penalty_set_change_callback(p, NULL, NULL);
	/* a smaller count does not lower a known one; decayed state is
	   dropped */
	rec.state.failures = 1;
	auth_penalty_restore(p, &rec.state, 53600);
	test_assert_int(auth_penalty_get_failures(p, "192.0.2.7", 53600), 2);
	rec.state.key = "192.0.2.8";
	rec.state.decay_age_msecs = AUTH_PENALTY_DECAY_MSECS;
	auth_penalty_restore(p, &rec.state, 200000);
	test_assert_int(auth_penalty_get_failures(p, "192.0.2.8", 200000), 0);
	/* an absurd wait is cut to two maximum delays */
	rec.state.key = "192.0.2.9";
	rec.state.decay_age_msecs = 0;
	rec.state.next_in_msecs = UINT64_MAX / 2;
	auth_penalty_restore(p, &rec.state, 200000);
	test_assert_int(auth_penalty_begin(p, &slot, "192.0.2.9", NULL, 200000), 0);
	test_assert(auth_penalty_next_ready(p, 200000 +
		2 * AUTH_PENALTY_MAX_DELAY_MSECS - 1) == NULL);
	test_assert(auth_penalty_next_ready(p, 200000 +
		2 * AUTH_PENALTY_MAX_DELAY_MSECS) == &slot);
	auth_penalty_end(p, &slot, 230000);
	auth_penalty_destroy(&p);
}

TEST_MAIN(TEST(test_growth_and_cap), TEST(test_success_waits_and_keeps_count),
	  TEST(test_queue), TEST(test_decay), TEST(test_keys),
	  TEST(test_eviction), TEST(test_change_and_restore))
