/* The stress workload's operations (stress.h): which command a session
   sends next. */
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

struct stress_box *stress_user_box(struct stress_run *sr, unsigned int user,
				   unsigned int i)
{
	return &sr->boxes[sr->users[user].first_box + i];
}

struct stress_box *stress_random_box(struct stress_session *s)
{
	return stress_user_box(s->sr, s->user, rnd(s->sr->run->set->mailboxes));
}

void stress_cmd_begin(struct stress_session *s, enum stress_op op)
{
	memset(&s->cmd, 0, sizeof(s->cmd));
	s->cmd.op = op;
	s->cmd.sent_us = bench_now_us();
	s->cmd.append_msg.data = s->msg_buf;
}

void stress_cmd_send(struct stress_session *s, const char *fmt, ...)
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

void stress_release_all(struct stress_session *s)
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

void stress_send_select(struct stress_session *s, struct stress_box *box,
			bool examine)
{
	stress_cmd_begin(s, STRESS_OP_SELECT);
	floors(&s->cmd, box);
	s->cmd.select_readonly = false;
	stress_session_reset(s, box, examine);
	stress_cmd_send(s, "%s %s", examine ? "EXAMINE" : "SELECT", box->name);
}

void stress_send_noop(struct stress_session *s)
{
	stress_cmd_begin(s, STRESS_OP_NOOP);
	stress_cmd_send(s, "NOOP");
}

void stress_send_learn(struct stress_session *s)
{
	uint32_t first = 1;

	while (first <= s->count && s->uids[first - 1] != 0)
		first++;
	if (first > s->count) {
		/* the unknown ones were expunged meanwhile */
		s->need_learn = false;
		stress_send_noop(s);
		return;
	}
	stress_cmd_begin(s, STRESS_OP_LEARN);
	s->cmd.first_seq = first;
	s->need_learn = false;
	stress_cmd_send(s, "FETCH %u:* (UID FLAGS)", first);
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
	stress_cmd_begin(s, STRESS_OP_FETCH);
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
	stress_cmd_send(s, "%sFETCH %s %s", cmd->uid ? "UID " : "", set, items);
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
	stress_cmd_begin(s, STRESS_OP_STORE);
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
	stress_cmd_send(s, "%sSTORE %s %s%s %s", cmd->uid ? "UID " : "", set,
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
	stress_cmd_begin(s, STRESS_OP_EXPUNGE);
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
		stress_cmd_send(s, "UID EXPUNGE %s", set);
	} else {
		stress_cmd_send(s, "EXPUNGE");
	}
	return true;
}

static bool send_append(struct stress_session *s)
{
	struct stress_run *sr = s->sr;
	struct stress_box *box = s->box != NULL && rnd(10) < 6 ? s->box :
		stress_random_box(s);
	char flags[200];

	stress_cmd_begin(s, STRESS_OP_APPEND);
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
	struct stress_box *target = stress_random_box(s);

	if (s->count == 0 || (move && (s->readonly || target == s->box)) ||
	    (target == s->box && s->sr->run->set->no_self_copy))
		return false;
	unsigned int n = pick_seqs(s, 1 + rnd(4), true, seqs);
	if (n == 0)
		return false;
	stress_cmd_begin(s, move ? STRESS_OP_MOVE : STRESS_OP_COPY);
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
	stress_cmd_send(s, "%s%s %s %s", cmd->uid ? "UID " : "", move ? "MOVE" : "COPY",
		 set, target->name);
	return true;
}

static bool send_status(struct stress_session *s)
{
	struct stress_box *box = stress_random_box(s);

	if (box == s->box)
		return false;
	stress_cmd_begin(s, STRESS_OP_STATUS);
	floors(&s->cmd, box);
	stress_cmd_send(s, "STATUS %s (MESSAGES UIDNEXT UIDVALIDITY)", box->name);
	return true;
}

/* One random operation; the mailbox's size steers between APPEND and
   the removing ones. */
void stress_send_random(struct stress_session *s)
{
	if (s->box == NULL) {
		stress_send_select(s, stress_random_box(s), false);
		return;
	}
	if (s->need_learn) {
		stress_send_learn(s);
		return;
	}
	for (unsigned int tries = 0; tries < 8; tries++) {
		unsigned int r = rnd(100);
		if (s->count < STRESS_BOX_LOW && r < 50)
			r = 60;		/* APPEND */
		bool sent =
			r < 3 ? (stress_send_select(s, stress_random_box(s), rnd(10) < 3), true) :
			r < 15 ? (stress_send_noop(s), true) :
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
	stress_send_noop(s);
}

