/* The stress workload's operations (stress.h): which command a session
   sends next, and the checks of its tagged reply. */
#include "stress.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Longest command the workload formats (sets of STRESS_MAX_SET). */
#define STRESS_CMD_MAX 512

const char *const stress_op_names[STRESS_OP_COUNT] = {
	"none", "setup", "SELECT", "NOOP", "LEARN", "FETCH", "STORE",
	"EXPUNGE", "APPEND", "COPY", "MOVE", "STATUS", "final FETCH", "LOGOUT",
};

static unsigned int rnd(unsigned int n)
{
	return n == 0 ? 0 : bench_random() % n;
}

static struct stress_box *user_box(struct stress_run *sr, unsigned int user,
				   unsigned int i)
{
	return &sr->boxes[sr->users[user].first_box + i];
}

static struct stress_box *random_box(struct stress_session *s)
{
	return user_box(s->sr, s->user, rnd(s->sr->run->set->mailboxes));
}

static void cmd_begin(struct stress_session *s, enum stress_op op)
{
	memset(&s->cmd, 0, sizeof(s->cmd));
	s->cmd.op = op;
	s->cmd.sent_us = bench_now_us();
	s->cmd.append_msg.data = s->msg_buf;
}

static void cmd_send(struct stress_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void cmd_send(struct stress_session *s, const char *fmt, ...)
{
	char line[STRESS_CMD_MAX];
	va_list args;

	va_start(args, fmt);
	vsnprintf(line, sizeof(line), fmt, args);
	va_end(args);
	bench_client_command(s->c, "%s", line);
}

/* "a,b,c" of nums into buf. */
static void set_str(const uint32_t *nums, unsigned int count, char *buf,
		    size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < count && len + 12 < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%u",
					i > 0 ? "," : "", nums[i]);
}

static void flags_list(uint8_t flags, char *buf, size_t size)
{
	stress_flags_str(flags, buf, size);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Up to max distinct random sequences whose uid the session knows (and,
   with free_only, whose message no other command holds), ascending. */
static unsigned int pick_seqs(struct stress_session *s, unsigned int max,
			      bool free_only, uint32_t *seqs)
{
	unsigned int n = 0;

	for (unsigned int tries = 0; tries < max * 4 && n < max; tries++) {
		uint32_t seq = 1 + rnd(s->count);
		uint32_t uid = s->uids[seq - 1];
		struct stress_msg *m = uid == 0 ? NULL :
			stress_box_find(s->box, uid);
		bool dup = false;
		/* (a message seen before its creator's OK: not yet) */
		if (m == NULL || m->hist_count == 0 ||
		    (free_only && m->reserved_by != 0))
			continue;
		for (unsigned int i = 0; i < n; i++)
			dup = dup || seqs[i] == seq;
		if (!dup)
			seqs[n++] = seq;
	}
	qsort(seqs, n, sizeof(*seqs), cmp_u32);
	return n;
}

/* The command's messages: sequences and uids. */
static void cmd_track(struct stress_session *s, const uint32_t *seqs,
		      unsigned int count)
{
	struct stress_cmd *cmd = &s->cmd;

	for (unsigned int i = 0; i < count && cmd->count < STRESS_MAX_TRACK;
	     i++) {
		cmd->seqs[cmd->count] = seqs[i];
		cmd->uids[cmd->count++] = s->uids[seqs[i] - 1];
	}
}

static void reserve(struct stress_session *s, struct stress_msg *m)
{
	m->reserved_by = (int)s->idx + 1;
}

static void release_all(struct stress_session *s)
{
	struct stress_cmd *cmd = &s->cmd;
	struct stress_box *box = cmd->op == STRESS_OP_NONE ? NULL : s->box;

	if (box == NULL)
		return;
	for (unsigned int i = 0; i < cmd->count; i++) {
		struct stress_msg *m = stress_box_find(box, cmd->uids[i]);
		if (m != NULL && m->reserved_by == (int)s->idx + 1)
			m->reserved_by = 0;
	}
}

/* The cmd's messages as "1,3" (sequences) or uids. */
static void cmd_set(const struct stress_cmd *cmd, char *buf, size_t size)
{
	set_str(cmd->uid ? cmd->uids : cmd->seqs, cmd->count, buf, size);
}

static void floors(struct stress_cmd *cmd, struct stress_box *box)
{
	cmd->target = box;
	cmd->maxuid_floor = box->max_acked_uid;
	cmd->uidnext_floor = box->max_uidnext;
}

/* ---- sending ---- */

static void send_select(struct stress_session *s, struct stress_box *box,
			bool examine)
{
	cmd_begin(s, STRESS_OP_SELECT);
	floors(&s->cmd, box);
	s->cmd.select_readonly = false;
	stress_session_reset(s, box, examine);
	cmd_send(s, "%s %s", examine ? "EXAMINE" : "SELECT", box->name);
}

static void send_noop(struct stress_session *s)
{
	cmd_begin(s, STRESS_OP_NOOP);
	cmd_send(s, "NOOP");
}

static void send_learn(struct stress_session *s)
{
	uint32_t first = 1;

	while (first <= s->count && s->uids[first - 1] != 0)
		first++;
	if (first > s->count) {
		/* the unknown ones were expunged meanwhile */
		s->need_learn = false;
		send_noop(s);
		return;
	}
	cmd_begin(s, STRESS_OP_LEARN);
	s->cmd.first_seq = first;
	s->need_learn = false;
	cmd_send(s, "FETCH %u:* (UID FLAGS)", first);
}

static unsigned int fetch_items(struct stress_session *s, char *buf,
				size_t size)
{
	struct stress_cmd *cmd = &s->cmd;
	unsigned int items = 0;
	size_t len = 0;

	while (items == 0) {
		if (rnd(10) < 7) items |= STRESS_FI_UID;
		if (rnd(10) < 7) items |= STRESS_FI_FLAGS;
		if (rnd(10) < 3) items |= STRESS_FI_SIZE;
		if (rnd(10) < 2) items |= STRESS_FI_ENVELOPE;
		if (rnd(10) < 4) items |= STRESS_FI_IDHDR;
		if (rnd(10) < 2) items |= STRESS_FI_TEXT;
		if (rnd(10) < 1) items |= STRESS_FI_FULL;
		if (rnd(10) < 1) items |= STRESS_FI_STRUCTURE;
		if (rnd(10) < 1) items |= STRESS_FI_DATE;
	}
	static const struct {
		unsigned int bit;
		const char *text;
	} names[] = {
		{ STRESS_FI_UID, "UID" }, { STRESS_FI_FLAGS, "FLAGS" },
		{ STRESS_FI_SIZE, "RFC822.SIZE" },
		{ STRESS_FI_ENVELOPE, "ENVELOPE" },
		{ STRESS_FI_IDHDR, "BODY.PEEK[HEADER.FIELDS (X-Stress-Id)]" },
		{ STRESS_FI_STRUCTURE, "BODYSTRUCTURE" },
		{ STRESS_FI_DATE, "INTERNALDATE" },
	};
	buf[len++] = '(';
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((items & names[i].bit) != 0)
			len += (size_t)snprintf(buf + len, size - len, "%s%s",
						len > 1 ? " " : "",
						names[i].text);
	}
	if ((items & STRESS_FI_TEXT) != 0) {
		cmd->text_start = rnd(300);
		cmd->text_count = 1 + rnd(400);
		len += (size_t)snprintf(buf + len, size - len,
					"%sBODY.PEEK[TEXT]<%u.%u>",
					len > 1 ? " " : "", cmd->text_start,
					cmd->text_count);
	}
	if ((items & STRESS_FI_FULL) != 0) {
		len += (size_t)snprintf(buf + len, size - len, "%s%s",
					len > 1 ? " " : "", cmd->sets_seen ?
					"BODY[]" : "BODY.PEEK[]");
	}
	snprintf(buf + len, size - len, ")");
	return items;
}

static bool send_fetch(struct stress_session *s)
{
	struct stress_cmd *cmd;
	uint32_t seqs[STRESS_MAX_SET];
	char set[STRESS_CMD_MAX / 2], items[256];
	unsigned int kind = rnd(10), n;

	if (s->count == 0)
		return false;
	cmd_begin(s, STRESS_OP_FETCH);
	cmd = &s->cmd;
	/* BODY[] sets \Seen: only of messages no one else changes */
	bool want_seen = !s->readonly && kind < 6 && rnd(10) < 2;
	if (kind < 6 || kind == 9) {
		n = pick_seqs(s, 1 + rnd(4), want_seen, seqs);
		if (n == 0)
			return false;
		cmd->uid = kind == 9;
		cmd_track(s, seqs, n);
		cmd_set(cmd, set, sizeof(set));
	} else if (kind < 8) {
		uint32_t lo = 1 + rnd(s->count);
		uint32_t span = rnd(10);
		uint32_t hi = MIN(s->count, lo + span);
		for (uint32_t seq = lo; seq <= hi; seq++) {
			if (s->uids[seq - 1] != 0)
				cmd_track(s, &seq, 1);
		}
		snprintf(set, sizeof(set), "%u:%u", lo, hi);
	} else {
		for (uint32_t seq = 1; seq <= s->count; seq++) {
			if (s->uids[seq - 1] != 0)
				cmd_track(s, &seq, 1);
		}
		snprintf(set, sizeof(set), "1:*");
	}
	cmd->sets_seen = want_seen && !cmd->uid && kind < 6;
	cmd->fetch_items = fetch_items(s, items, sizeof(items));
	if ((cmd->fetch_items & STRESS_FI_FULL) == 0)
		cmd->sets_seen = false;
	for (unsigned int i = 0; i < cmd->count && cmd->sets_seen; i++) {
		struct stress_msg *m = stress_box_find(s->box, cmd->uids[i]);
		const struct stress_change *last = stress_msg_last(m);
		reserve(s, m);
		(void)stress_msg_change(m, s->idx, last->value | STRESS_FLAG_SEEN,
					last->known | STRESS_FLAG_SEEN);
	}
	cmd_send(s, "%sFETCH %s %s", cmd->uid ? "UID " : "", set, items);
	return true;
}

static bool send_store(struct stress_session *s)
{
	static const char *const modes[] = { "FLAGS", "+FLAGS", "-FLAGS" };
	uint32_t seqs[STRESS_MAX_SET];
	char set[STRESS_CMD_MAX / 2], flags[200];
	bool big = s->count > STRESS_BOX_HIGH;

	if (s->readonly || s->count == 0)
		return false;
	unsigned int n = pick_seqs(s, 1 + rnd(3), true, seqs);
	if (n == 0)
		return false;
	cmd_begin(s, STRESS_OP_STORE);
	struct stress_cmd *cmd = &s->cmd;
	unsigned int mode = rnd(3);
	uint8_t mask = (uint8_t)(rnd(256) & ~STRESS_FLAG_DELETED);
	if (big || rnd(8) == 0) {
		mode = 1;
		mask |= STRESS_FLAG_DELETED;
	} else if (rnd(10) == 0) {
		mode = 2;
		mask |= STRESS_FLAG_DELETED;
	}
	cmd->silent = rnd(2) == 0;
	cmd->uid = rnd(2) == 0;
	cmd_track(s, seqs, n);
	for (unsigned int i = 0; i < cmd->count; i++) {
		struct stress_msg *m = stress_box_find(s->box, cmd->uids[i]);
		const struct stress_change *last = stress_msg_last(m);
		uint8_t value = mode == 0 ? mask : mode == 1 ?
			(uint8_t)(last->value | mask) :
			(uint8_t)(last->value & ~mask);
		uint8_t known = mode == 0 ? STRESS_FLAGS_ALL :
			(uint8_t)(last->known | mask);
		cmd->store_value[i] = value;
		cmd->store_known[i] = known;
		/* no bit the model knows before and after changes */
		cmd->store_noop[i] =
			((value ^ last->value) & known & last->known) == 0;
		reserve(s, m);
		(void)stress_msg_change(m, s->idx, value, known);
	}
	cmd_set(cmd, set, sizeof(set));
	flags_list(mask, flags, sizeof(flags));
	cmd_send(s, "%sSTORE %s %s%s %s", cmd->uid ? "UID " : "", set,
		 modes[mode], cmd->silent ? ".SILENT" : "", flags);
	return true;
}

/* Certainly \Deleted on the server: the newest change says so, and
   nothing is in flight. */
static bool msg_surely_deleted(const struct stress_msg *m)
{
	const struct stress_change *last = stress_msg_last(m);

	return m->reserved_by == 0 && last != NULL && last->acked_us != 0 &&
		!last->failed && (last->value & last->known &
				  STRESS_FLAG_DELETED) != 0;
}

static bool send_expunge(struct stress_session *s)
{
	uint32_t uids[STRESS_MAX_SET];
	unsigned int n = 0;

	if (s->readonly)
		return false;
	cmd_begin(s, STRESS_OP_EXPUNGE);
	struct stress_cmd *cmd = &s->cmd;
	cmd->uid = rnd(2) == 0;
	for (unsigned int i = 0; i < s->count && n < STRESS_MAX_SET; i++) {
		struct stress_msg *m = s->uids[i] == 0 ? NULL :
			stress_box_find(s->box, s->uids[i]);
		if (m != NULL && m->deleted_ever && rnd(3) != 0)
			uids[n++] = s->uids[i];
	}
	if (n == 0)
		cmd->uid = false;
	/* what must go: in the session's view and surely \Deleted */
	for (unsigned int i = 0; i < s->count; i++) {
		struct stress_msg *m = s->uids[i] == 0 ? NULL :
			stress_box_find(s->box, s->uids[i]);
		bool named = !cmd->uid;
		for (unsigned int j = 0; j < n && !named; j++)
			named = uids[j] == s->uids[i];
		if (m != NULL && named && msg_surely_deleted(m) &&
		    cmd->must_go_count < STRESS_MAX_TRACK)
			cmd->must_go[cmd->must_go_count++] = m->uid;
	}
	if (cmd->uid) {
		char set[STRESS_CMD_MAX / 2];
		set_str(uids, n, set, sizeof(set));
		cmd_send(s, "UID EXPUNGE %s", set);
	} else {
		cmd_send(s, "EXPUNGE");
	}
	return true;
}

static bool send_append(struct stress_session *s)
{
	struct stress_run *sr = s->sr;
	struct stress_box *box = s->box != NULL && rnd(10) < 6 ? s->box :
		random_box(s);
	char flags[200];

	cmd_begin(s, STRESS_OP_APPEND);
	struct stress_cmd *cmd = &s->cmd;
	floors(cmd, box);
	cmd->append_id = ++sr->next_id;
	cmd->append_flags = (uint8_t)(rnd(256) & ~STRESS_FLAG_DELETED);
	if (rnd(2) == 0)
		cmd->append_flags &= STRESS_FLAG_SEEN;
	stress_content(cmd->append_id, sr->run->set->seed, &cmd->append_msg);
	box->creates_inflight++;
	flags_list(cmd->append_flags, flags, sizeof(flags));
	bench_client_append(s->c, &cmd->append_msg, "APPEND %s %s", box->name,
			    flags);
	return true;
}

static bool send_copy(struct stress_session *s, bool move)
{
	uint32_t seqs[STRESS_MAX_SET];
	char set[STRESS_CMD_MAX / 2];
	struct stress_box *target = random_box(s);

	if (s->count == 0 || (move && (s->readonly || target == s->box)) ||
	    (target == s->box && s->sr->run->set->no_self_copy))
		return false;
	unsigned int n = pick_seqs(s, 1 + rnd(4), true, seqs);
	if (n == 0)
		return false;
	cmd_begin(s, move ? STRESS_OP_MOVE : STRESS_OP_COPY);
	struct stress_cmd *cmd = &s->cmd;
	cmd->uid = rnd(2) == 0;
	floors(cmd, target);
	cmd_track(s, seqs, n);
	uint64_t now = bench_now_us();
	for (unsigned int i = 0; i < cmd->count; i++) {
		struct stress_msg *m = stress_box_find(s->box, cmd->uids[i]);
		/* the copy gets the flags the session's view has */
		stress_msg_visible(m, s->idx, s->sync_us, now,
				   &cmd->store_value[i], &cmd->store_known[i]);
		reserve(s, m);
		if (move)
			m->moved_ever = true;
	}
	target->creates_inflight++;
	cmd_set(cmd, set, sizeof(set));
	cmd_send(s, "%s%s %s %s", cmd->uid ? "UID " : "", move ? "MOVE" : "COPY",
		 set, target->name);
	return true;
}

static bool send_status(struct stress_session *s)
{
	struct stress_box *box = random_box(s);

	if (box == s->box)
		return false;
	cmd_begin(s, STRESS_OP_STATUS);
	floors(&s->cmd, box);
	cmd_send(s, "STATUS %s (MESSAGES UIDNEXT UIDVALIDITY)", box->name);
	return true;
}

/* One random operation; the mailbox's size steers between APPEND and
   the removing ones. */
static void send_random(struct stress_session *s)
{
	if (s->box == NULL) {
		send_select(s, random_box(s), false);
		return;
	}
	if (s->need_learn) {
		send_learn(s);
		return;
	}
	for (unsigned int tries = 0; tries < 8; tries++) {
		unsigned int r = rnd(100);
		if (s->count < STRESS_BOX_LOW && r < 50)
			r = 60;		/* APPEND */
		bool sent =
			r < 3 ? (send_select(s, random_box(s), rnd(10) < 3), true) :
			r < 15 ? (send_noop(s), true) :
			r < 42 ? send_fetch(s) :
			r < 58 ? send_store(s) :
			r < 66 ? send_expunge(s) :
			r < 80 ? send_append(s) :
			r < 87 ? send_copy(s, false) :
			r < 95 ? send_copy(s, true) :
			send_status(s);
		if (sent)
			return;
	}
	send_noop(s);
}

/* ---- setup and the end ---- */

static void send_setup(struct stress_session *s)
{
	struct stress_run *sr = s->sr;
	unsigned int boxes = sr->run->set->mailboxes;
	struct stress_box *box = user_box(sr, s->user, s->setup_step / 2);

	cmd_begin(s, STRESS_OP_SETUP);
	/* DELETE (what an earlier run left), then CREATE: a fresh UIDVALIDITY
	   and no message the model does not know */
	cmd_send(s, "%s %s", s->setup_step % 2 == 0 ? "DELETE" : "CREATE",
		 box->name);
	s->setup_step++;
	(void)boxes;
}

static void wake_user(struct stress_run *sr, unsigned int user)
{
	for (unsigned int i = 0; i < sr->run->set->clients; i++) {
		struct bench_client *c = &sr->run->clients[i];
		struct stress_session *s = c->wl_data;
		if (s->user == user && s->phase == STRESS_PHASE_WAIT_SETUP &&
		    c->state == BENCH_CLIENT_RUN) {
			s->phase = STRESS_PHASE_RUN;
			bench_client_go(c);
		}
	}
}

/* When every session (that is still there) waits in phase wait, all
   move on to next. */
static void barrier(struct stress_run *sr, enum stress_phase wait,
		    enum stress_phase next, bool *go)
{
	if (*go)
		return;
	for (unsigned int i = 0; i < sr->run->set->clients; i++) {
		struct bench_client *c = &sr->run->clients[i];
		struct stress_session *s = c->wl_data;
		if (c->state != BENCH_CLIENT_DONE && s->phase != wait)
			return;
	}
	*go = true;
	for (unsigned int i = 0; i < sr->run->set->clients; i++) {
		struct bench_client *c = &sr->run->clients[i];
		struct stress_session *s = c->wl_data;
		if (c->state != BENCH_CLIENT_DONE && s->phase == wait) {
			s->phase = next;
			bench_client_go(c);
		}
	}
}

/* The end: once nobody changes anything (quiet), every session syncs
   (NOOP); once all did, each checks its view with a fresh SELECT. */
static void final_barriers(struct stress_run *sr)
{
	barrier(sr, STRESS_PHASE_FINAL_QUIET, STRESS_PHASE_FINAL_SYNC,
		&sr->quiet_go);
	barrier(sr, STRESS_PHASE_FINAL_WAIT, STRESS_PHASE_FINAL_SELECT,
		&sr->final_go);
}

static void final_select(struct stress_session *s)
{
	struct stress_box *box = s->box != NULL ? s->box :
		user_box(s->sr, s->user, 0);

	s->final_count = s->box == NULL ? UINT32_MAX : s->count;
	if (s->box != NULL) {
		s->final_uids = bench_realloc(s->final_uids, (s->count + 1) *
					      sizeof(*s->final_uids));
		memcpy(s->final_uids, s->uids, s->count * sizeof(*s->uids));
	}
	s->phase = STRESS_PHASE_FINAL_CHECK;
	send_select(s, box, false);
}

/* After the fresh SELECT and FETCH 1:*: the session's old view and the
   model must agree with it. */
static void final_compare(struct stress_session *s)
{
	struct stress_box *box = s->box;

	if (s->final_count != UINT32_MAX &&
	    (s->final_count != s->count ||
	     memcmp(s->final_uids, s->uids, s->count * sizeof(*s->uids)) != 0)) {
		stress_error(s->sr, s->c, "after the run the session numbered "
			     "%u messages, a fresh SELECT shows %u (or other "
			     "UIDs)", s->final_count, s->count);
	}
	unsigned int live = 0;
	for (unsigned int i = 0; i < box->count; i++) {
		struct stress_msg *m = &box->msgs[i];
		if (m->created_us == 0) {
			stress_error(s->sr, s->c, "UID %u is in %s, but no OK "
				     "created it", m->uid, box->name);
			continue;
		}
		if (m->gone_us != 0) {
			if (stress_session_seq(s, m->uid) != 0)
				stress_error(s->sr, s->c, "UID %u was expunged "
					     "but a fresh SELECT shows it",
					     m->uid);
			continue;
		}
		if (stress_session_seq(s, m->uid) != 0) {
			live++;
		} else if (stress_msg_may_be_gone(m)) {
			/* expunged while every session that was told had
			   not learnt its uid yet */
			m->gone_us = bench_now_us();
			m->gone_session = s->idx;
		} else {
			live++;
			stress_error(s->sr, s->c, "UID %u (message %u) of %s is "
				     "missing after the run", m->uid, m->id,
				     box->name);
			stress_msg_dump(s->sr, m, stdout);
		}
	}
	if (live != s->count)
		stress_error(s->sr, s->c, "%s: a fresh SELECT shows %u messages, "
			     "the model has %u", box->name, s->count, live);
}

static bool send_final(struct stress_session *s)
{
	switch (s->phase) {
	case STRESS_PHASE_FINAL_QUIET:
		s->cmd.op = STRESS_OP_NONE;
		final_barriers(s->sr);
		return true;	/* the barrier sends the next command */
	case STRESS_PHASE_FINAL_SYNC:
		if (s->box == NULL) {
			s->phase = STRESS_PHASE_FINAL_WAIT;
			break;
		}
		if (s->cmd.op != STRESS_OP_NOOP && s->cmd.op != STRESS_OP_LEARN) {
			send_noop(s);
			return true;
		}
		if (s->need_learn) {
			send_learn(s);
			return true;
		}
		s->phase = STRESS_PHASE_FINAL_WAIT;
		break;
	case STRESS_PHASE_FINAL_CHECK:
		if (s->cmd.op == STRESS_OP_SELECT && s->count > 0) {
			cmd_begin(s, STRESS_OP_FINAL_FETCH);
			cmd_send(s, "FETCH 1:* (UID FLAGS BODY.PEEK[HEADER.FIELDS "
				 "(X-Stress-Id)])");
			return true;
		}
		if (s->box == NULL)
			stress_error(s->sr, s->c, "the final SELECT failed");
		else
			final_compare(s);
		s->phase = STRESS_PHASE_DONE;
		s->cmd.op = STRESS_OP_LOGOUT;
		return false;
	default:
		break;
	}
	if (s->phase == STRESS_PHASE_FINAL_WAIT) {
		s->cmd.op = STRESS_OP_NONE;
		final_barriers(s->sr);
		return true;	/* the barrier sends the next command */
	}
	if (s->phase == STRESS_PHASE_FINAL_SELECT) {
		final_select(s);
		return true;
	}
	s->cmd.op = STRESS_OP_LOGOUT;
	return false;
}

bool stress_send_op(struct bench_client *c)
{
	struct stress_session *s = c->wl_data;
	struct stress_run *sr = s->sr;

	switch (s->phase) {
	case STRESS_PHASE_SETUP:
		if (sr->users[s->user].owner == s->idx &&
		    s->setup_step < 2 * sr->run->set->mailboxes) {
			send_setup(s);
			return true;
		}
		if (!sr->users[s->user].ready) {
			s->phase = STRESS_PHASE_WAIT_SETUP;
			s->cmd.op = STRESS_OP_NONE;
			return true;	/* the owner wakes it */
		}
		s->phase = STRESS_PHASE_RUN;
		break;
	case STRESS_PHASE_WAIT_SETUP:
		return true;
	case STRESS_PHASE_RUN:
		break;
	default:
		return send_final(s);
	}
	if (c->run->stopping) {
		s->phase = STRESS_PHASE_FINAL_QUIET;
		return send_final(s);
	}
	send_random(s);
	return true;
}

/* ---- tagged replies ---- */

static bool text_is(const char *text, const char *code)
{
	return strncasecmp(text, code, strlen(code)) == 0;
}

static bool any_may_be_gone(struct stress_session *s)
{
	for (unsigned int i = 0; i < s->cmd.count; i++) {
		struct stress_msg *m = s->box == NULL ? NULL :
			stress_box_find(s->box, s->cmd.uids[i]);
		if (m != NULL && stress_msg_may_be_gone(m))
			return true;
	}
	return false;
}

/* A NO the RFCs allow for this command now. */
static bool no_allowed(struct stress_session *s, const char *text)
{
	struct stress_cmd *cmd = &s->cmd;
	bool expunged = text_is(text, "[EXPUNGEISSUED]") && any_may_be_gone(s);

	switch (cmd->op) {
	case STRESS_OP_SETUP:
		return s->setup_step % 2 == 1;	/* DELETE of nothing */
	case STRESS_OP_STORE:
		/* RFC 2180 4.2.2, 4.2.3 */
		return expunged && !cmd->silent;
	case STRESS_OP_FETCH:		/* 4.1.2 */
	case STRESS_OP_COPY:		/* 4.4.1 */
	case STRESS_OP_MOVE:
		if (expunged && s->sr->run->set->rfc2180_lenient) {
			s->sr->expunge_issued++;
			return true;
		}
		return false;
	default:
		return false;
	}
}

static void tagged_select(struct stress_session *s, bool ok, const char *text)
{
	struct stress_cmd *cmd = &s->cmd;
	struct stress_box *box = cmd->target;

	if (text_is(text, "[READ-ONLY]"))
		cmd->select_readonly = true;
	if (!ok) {
		s->box = NULL;
		return;
	}
	if (cmd->select_uidvalidity == 0 || cmd->select_uidnext == 0) {
		stress_error(s->sr, s->c, "SELECT %s without UIDVALIDITY or "
			     "UIDNEXT", box->name);
	} else {
		if (box->uidvalidity == 0)
			box->uidvalidity = cmd->select_uidvalidity;
		else if (box->uidvalidity != cmd->select_uidvalidity)
			stress_error(s->sr, s->c, "UIDVALIDITY of %s changed: %u, "
				     "was %u", box->name,
				     cmd->select_uidvalidity, box->uidvalidity);
		if (cmd->select_uidnext <= cmd->maxuid_floor ||
		    cmd->select_uidnext < cmd->uidnext_floor)
			stress_error(s->sr, s->c, "UIDNEXT %u of %s: UID %u was "
				     "given out and UIDNEXT %u seen before",
				     cmd->select_uidnext, box->name,
				     cmd->maxuid_floor, cmd->uidnext_floor);
		if (cmd->select_uidnext > box->max_uidnext)
			box->max_uidnext = cmd->select_uidnext;
	}
	if (cmd->select_readonly != s->readonly)
		stress_error(s->sr, s->c, "%s answered %s", s->readonly ?
			     "EXAMINE" : "SELECT", cmd->select_readonly ?
			     "READ-ONLY" : "without READ-ONLY");
	s->sync_us = cmd->sent_us;
	if (!s->need_learn)
		stress_session_check_synced(s);
}

static void tagged_fetch(struct stress_session *s, bool ok)
{
	struct stress_cmd *cmd = &s->cmd;
	uint64_t now = bench_now_us();

	for (unsigned int i = 0; i < cmd->count; i++) {
		struct stress_msg *m = stress_box_find(s->box, cmd->uids[i]);
		bool gone = m == NULL || stress_msg_may_be_gone(m);
		if (cmd->sets_seen && m != NULL) {
			struct stress_change *e = &m->hist[m->hist_count - 1];
			/* an expunged message's \Seen can not be set */
			if (!cmd->answered[i] || gone)
				e->known &= (uint8_t)~STRESS_FLAG_SEEN;
			e->acked_us = now;
			e->failed = !ok;
		}
		/* a NO was judged by itself; by UID a message that is gone
		   is simply not there (RFC 9051 6.4.8) */
		if (cmd->answered[i] || !ok || (gone && cmd->uid))
			continue;
		stress_error(s->sr, s->c, "no FETCH response for %u (UID %u)%s",
			     cmd->seqs[i], cmd->uids[i], gone ? ", a message "
			     "another session may have expunged" : "");
		if (m != NULL)
			stress_msg_dump(s->sr, m, stdout);
	}
	release_all(s);
}

static void tagged_store(struct stress_session *s, bool ok)
{
	struct stress_cmd *cmd = &s->cmd;
	uint64_t now = bench_now_us();

	for (unsigned int i = 0; i < cmd->count; i++) {
		struct stress_msg *m = stress_box_find(s->box, cmd->uids[i]);
		if (m == NULL)
			continue;
		struct stress_change *e = &m->hist[m->hist_count - 1];
		bool gone = stress_msg_may_be_gone(m);
		if (cmd->answered[i] &&
		    ((cmd->answer_flags[i] ^ cmd->store_value[i]) &
		     cmd->store_known[i]) != 0) {
			char got[160], want[160];
			stress_flags_str(cmd->answer_flags[i], got, sizeof(got));
			stress_flags_str(cmd->store_value[i], want, sizeof(want));
			stress_error(s->sr, s->c, "STORE's FETCH of UID %u: %s, "
				     "want %s (known %02x)", m->uid, got, want,
				     cmd->store_known[i]);
			stress_msg_dump(s->sr, m, stdout);
		} else if (!cmd->answered[i] && !cmd->silent && !gone &&
			   !cmd->store_noop[i]) {
			stress_error(s->sr, s->c, "STORE answered no FETCH for "
				     "%u (UID %u)", cmd->seqs[i], m->uid);
		}
		if (!cmd->answered[i] && gone && m->hist_count >= 2) {
			/* maybe not applied: what it changed is not known */
			const struct stress_change *prev =
				&m->hist[m->hist_count - 2];
			e->known &= (uint8_t)~(e->value ^ prev->value);
		}
		e->acked_us = now;
		e->failed = !ok && !cmd->answered[i];
	}
	release_all(s);
}

static void tagged_expunge(struct stress_session *s)
{
	struct stress_cmd *cmd = &s->cmd;

	for (unsigned int i = 0; i < cmd->must_go_count; i++) {
		uint32_t seq = stress_session_seq(s, cmd->must_go[i]);
		struct stress_msg *m = stress_box_find(s->box, cmd->must_go[i]);
		const struct stress_change *last = m == NULL ? NULL :
			stress_msg_last(m);
		/* a STORE sent after the EXPUNGE may have come first */
		if (last != NULL && last->sent_us >= cmd->sent_us)
			continue;
		if (seq != 0) {
			stress_error(s->sr, s->c, "EXPUNGE left UID %u (at %u), "
				     "which was \\Deleted", cmd->must_go[i], seq);
			stress_msg_dump(s->sr,
					stress_box_find(s->box, cmd->must_go[i]),
					stdout);
		}
	}
}

/* A new message in cmd->target with uid (from APPENDUID/COPYUID). */
static void created(struct stress_session *s, uint32_t uidvalidity,
		    uint32_t uid, uint32_t id, uint8_t value, uint8_t known)
{
	struct stress_cmd *cmd = &s->cmd;
	struct stress_box *box = cmd->target;

	if (box->uidvalidity == 0)
		box->uidvalidity = uidvalidity;
	else if (uidvalidity != box->uidvalidity)
		stress_error(s->sr, s->c, "%s: UIDVALIDITY %u in its reply, %s "
			     "has %u", stress_op_names[cmd->op], uidvalidity,
			     box->name, box->uidvalidity);
	if (uid <= cmd->maxuid_floor || uid < cmd->uidnext_floor)
		stress_error(s->sr, s->c, "%s gave UID %u in %s: UID %u was "
			     "given out and UIDNEXT %u seen before it was sent",
			     stress_op_names[cmd->op], uid, box->name,
			     cmd->maxuid_floor, cmd->uidnext_floor);
	struct stress_msg *m = stress_box_find(box, uid);
	if (m == NULL)
		m = stress_box_add(box, uid, id);
	else if (m->created_us != 0 || (m->id != 0 && m->id != id))
		stress_error(s->sr, s->c, "%s gave UID %u in %s, which is "
			     "message %u", stress_op_names[cmd->op], uid,
			     box->name, m->id);
	m->id = id;
	m->created_us = bench_now_us();
	struct stress_change *e = stress_msg_change(m, s->idx, value, known);
	/* it never existed without these flags */
	e->sent_us = 0;
	e->acked_us = 1;
	if (uid > box->max_acked_uid)
		box->max_acked_uid = uid;
}

static void tagged_append(struct stress_session *s, bool ok, const char *text)
{
	struct stress_cmd *cmd = &s->cmd;
	uint32_t validity, uid;

	cmd->target->creates_inflight--;
	if (!ok)
		return;
	if (sscanf(text, "[APPENDUID %u %u]", &validity, &uid) != 2) {
		stress_error(s->sr, s->c, "APPEND without APPENDUID: %s", text);
		return;
	}
	created(s, validity, uid, cmd->append_id, cmd->append_flags,
		STRESS_FLAGS_ALL);
}

/* "[COPYUID v srcset dstset]": the copies, pair by pair. */
static void copy_apply(struct stress_session *s, const char *code)
{
	struct stress_cmd *cmd = &s->cmd;
	uint32_t validity, src[STRESS_MAX_SET], dst[STRESS_MAX_SET];
	char src_text[256], dst_text[256];

	if (sscanf(code, "[COPYUID %u %255s %255[0-9:,]", &validity, src_text,
		   dst_text) != 3) {
		stress_error(s->sr, s->c, "%s without COPYUID",
			     stress_op_names[cmd->op]);
		return;
	}
	int n = stress_parse_uidset(src_text, strlen(src_text), src,
				    STRESS_MAX_SET);
	int n2 = stress_parse_uidset(dst_text, strlen(dst_text), dst,
				     STRESS_MAX_SET);
	if (n < 0 || n != n2) {
		stress_error(s->sr, s->c, "bad COPYUID %s", code);
		return;
	}
	for (unsigned int i = 0; i < cmd->count; i++) {
		int j;
		for (j = 0; j < n && src[j] != cmd->uids[i]; j++) ;
		struct stress_msg *m = stress_box_find(s->box, cmd->uids[i]);
		if (j == n) {
			if (!(m != NULL && stress_msg_may_be_gone(m) &&
			      s->sr->run->set->rfc2180_lenient))
				stress_error(s->sr, s->c, "%s OK did not copy UID "
					     "%u", stress_op_names[cmd->op],
					     cmd->uids[i]);
			continue;
		}
		created(s, validity, dst[j], m == NULL ? 0 : m->id,
			cmd->store_value[i], cmd->store_known[i]);
	}
}

static void tagged_copy(struct stress_session *s, bool ok, const char *text)
{
	struct stress_cmd *cmd = &s->cmd;

	cmd->target->creates_inflight--;
	if (ok) {
		copy_apply(s, cmd->op == STRESS_OP_MOVE && cmd->copyuid_seen ?
			   cmd->copyuid : text);
	}
	if (ok && cmd->op == STRESS_OP_MOVE) {
		/* RFC 6851 3.3: an EXPUNGE for each moved message */
		for (unsigned int i = 0; i < cmd->count; i++) {
			if (stress_session_seq(s, cmd->uids[i]) != 0)
				stress_error(s->sr, s->c, "MOVE did not expunge "
					     "UID %u", cmd->uids[i]);
		}
	}
	release_all(s);
}

static void tagged_status(struct stress_session *s, bool ok)
{
	struct stress_cmd *cmd = &s->cmd;
	struct stress_box *box = cmd->target;

	if (!ok)
		return;
	if (!cmd->status_seen || cmd->status_uidnext == 0 ||
	    cmd->status_uidvalidity == 0) {
		stress_error(s->sr, s->c, "STATUS %s without its values",
			     box->name);
		return;
	}
	if (box->uidvalidity == 0)
		box->uidvalidity = cmd->status_uidvalidity;
	else if (box->uidvalidity != cmd->status_uidvalidity)
		stress_error(s->sr, s->c, "STATUS %s: UIDVALIDITY %u, was %u",
			     box->name, cmd->status_uidvalidity,
			     box->uidvalidity);
	if (cmd->status_uidnext <= cmd->maxuid_floor ||
	    cmd->status_uidnext < cmd->uidnext_floor)
		stress_error(s->sr, s->c, "STATUS %s: UIDNEXT %u, but UID %u was "
			     "given out and UIDNEXT %u seen before", box->name,
			     cmd->status_uidnext, cmd->maxuid_floor,
			     cmd->uidnext_floor);
	if (cmd->status_uidnext > box->max_uidnext)
		box->max_uidnext = cmd->status_uidnext;
}

static void tagged_setup(struct stress_session *s)
{
	struct stress_run *sr = s->sr;

	if (s->setup_step < 2 * sr->run->set->mailboxes)
		return;
	sr->users[s->user].ready = true;
	wake_user(sr, s->user);
}

void stress_tagged(struct bench_client *c, const char *status,
		   const char *text)
{
	struct stress_session *s = c->wl_data;
	struct stress_run *sr = s->sr;
	struct stress_cmd *cmd = &s->cmd;
	bool ok = strcasecmp(status, "OK") == 0;
	uint64_t now = bench_now_us();

	if (!ok && !no_allowed(s, text)) {
		stress_error(sr, c, "%s answered %s %s", stress_op_names[cmd->op],
			     status, text);
	}
	switch (cmd->op) {
	case STRESS_OP_SETUP:
		tagged_setup(s);
		break;
	case STRESS_OP_SELECT:
		tagged_select(s, ok, text);
		break;
	case STRESS_OP_NOOP:
		s->sync_us = cmd->sent_us;
		if (!s->need_learn)
			stress_session_check_synced(s);
		break;
	case STRESS_OP_LEARN:
		stress_session_check_synced(s);
		for (unsigned int i = 0; i < s->count; i++)
			s->need_learn = s->need_learn || s->uids[i] == 0;
		break;
	case STRESS_OP_FETCH:
		tagged_fetch(s, ok);
		break;
	case STRESS_OP_STORE:
		tagged_store(s, ok);
		break;
	case STRESS_OP_EXPUNGE:
		tagged_expunge(s);
		break;
	case STRESS_OP_APPEND:
		tagged_append(s, ok, text);
		break;
	case STRESS_OP_COPY:
	case STRESS_OP_MOVE:
		tagged_copy(s, ok, text);
		break;
	case STRESS_OP_STATUS:
		tagged_status(s, ok);
		break;
	case STRESS_OP_FINAL_FETCH:
		for (unsigned int i = 0; i < s->count; i++) {
			if (s->uids[i] == 0)
				stress_error(sr, c, "FETCH 1:* gave no UID for %u",
					     i + 1);
		}
		break;
	default:
		break;
	}
	if (s->phase == STRESS_PHASE_RUN) {
		sr->ops_by_kind[cmd->op]++;
		if (c->run->measuring && !c->run->stopping)
			bench_stats_add(&c->run->stats, now - cmd->sent_us);
	}
	/* now and then: the model stays small over long runs */
	if (s->box != NULL && ++sr->prune_tick % 1000 == 0)
		stress_box_prune(sr, s->box);
	bench_client_go(c);
}

void stress_finished(struct bench_client *c)
{
	struct stress_session *s = c->wl_data;
	struct stress_run *sr = s->sr;

	if (s->phase != STRESS_PHASE_DONE) {
		/* bench-client counted the error; show where it happened */
		if (sr->errors_printed++ < STRESS_ERRORS_DETAILED) {
			printf("stress error: client %u (%s) lost its connection "
			       "during %s; transcript:\n", c->idx, c->user,
			       stress_op_names[s->cmd.op]);
			bench_client_dump_transcript(c, stdout, c->run->start_us,
						     "    ");
		}
		release_all(s);
		if (s->cmd.target != NULL &&
		    (s->cmd.op == STRESS_OP_APPEND || s->cmd.op == STRESS_OP_COPY ||
		     s->cmd.op == STRESS_OP_MOVE))
			s->cmd.target->creates_inflight--;
		bool owner = sr->users[s->user].owner == s->idx &&
			!sr->users[s->user].ready;
		s->phase = STRESS_PHASE_DONE;
		if (owner) {
			sr->users[s->user].ready = true;
			wake_user(sr, s->user);
		}
	}
	s->cmd.op = STRESS_OP_NONE;
	if (c->run->stopping)
		final_barriers(sr);
}

/* ---- the run ---- */

void stress_run_init(struct bench_run *run)
{
	const struct bench_settings *set = run->set;
	struct stress_run *sr = bench_malloc(sizeof(*sr));
	unsigned int users = MIN(set->users, set->clients);

	sr->run = run;
	run->wl_data = sr;
	sr->user_count = users;
	sr->users = bench_malloc(users * sizeof(*sr->users));
	sr->box_count = users * set->mailboxes;
	sr->boxes = bench_malloc(sr->box_count * sizeof(*sr->boxes));
	for (unsigned int u = 0; u < users; u++) {
		struct stress_user *user = &sr->users[u];
		/* the formats are the user's own command-line arguments */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(user->name, sizeof(user->name), set->user_fmt,
			 set->user_first + u);
#pragma GCC diagnostic pop
		user->first_box = u * set->mailboxes;
		user->owner = u;
		for (unsigned int b = 0; b < set->mailboxes; b++) {
			struct stress_box *box = &sr->boxes[user->first_box + b];
			box->user = u;
			snprintf(box->name, sizeof(box->name), "Stress%u", b + 1);
		}
	}
	for (unsigned int i = 0; i < set->clients; i++) {
		struct bench_client *c = &run->clients[i];
		struct stress_session *s = bench_malloc(sizeof(*s));
		s->sr = sr;
		s->c = c;
		s->idx = i;
		s->user = i % users;
		s->msg_buf = bench_malloc(STRESS_MSG_MAX);
		snprintf(c->user, sizeof(c->user), "%s", sr->users[s->user].name);
		c->wl_data = s;
	}
}

void stress_run_report(struct bench_run *run)
{
	struct stress_run *sr = run->wl_data;

	printf("stress: %u users x %u mailboxes, %u clients; operations:",
	       sr->user_count, run->set->mailboxes, run->set->clients);
	for (unsigned int i = STRESS_OP_SELECT; i < STRESS_OP_FINAL_FETCH; i++)
		printf(" %s %llu", stress_op_names[i],
		       (unsigned long long)sr->ops_by_kind[i]);
	printf("\nstress: %llu FLAGS checked against the model, %llu not "
	       "(the session lagged behind the changes remembered)",
	       (unsigned long long)sr->flags_checked,
	       (unsigned long long)sr->flags_unchecked);
	printf("\nstress: %llu FETCH responses for messages another session "
	       "had been told were expunged; accepted (--rfc2180-lenient): "
	       "%llu NO [EXPUNGEISSUED], %llu NIL data; %u errors shown in "
	       "detail\n",
	       (unsigned long long)sr->ghost_fetches,
	       (unsigned long long)sr->expunge_issued,
	       (unsigned long long)sr->nil_answers,
	       MIN(sr->errors_printed, STRESS_ERRORS_DETAILED));
}

void stress_run_deinit(struct bench_run *run)
{
	struct stress_run *sr = run->wl_data;

	for (unsigned int i = 0; i < run->set->clients; i++) {
		struct stress_session *s = run->clients[i].wl_data;
		free(s->uids);
		free(s->final_uids);
		free(s->msg_buf);
		free(s);
	}
	for (unsigned int i = 0; i < sr->box_count; i++)
		free(sr->boxes[i].msgs);
	free(sr->boxes);
	free(sr->users);
	free(sr);
}
