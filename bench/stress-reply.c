/* The stress workload's checks of tagged replies (stress.h). */
#include "stress.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
	stress_release_all(s);
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
	stress_release_all(s);
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
	stress_release_all(s);
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
	stress_wake_user(sr, s->user);
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

