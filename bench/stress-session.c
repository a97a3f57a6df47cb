/* One stress session's view of its selected mailbox (stress.h): the
   sequence numbers it was told, checked against every untagged response
   (EXISTS, EXPUNGE, FETCH, STATUS, the codes of OK). */
#include "stress.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct stress_session *stress_session(struct bench_client *c)
{
	return c->wl_data;
}

void stress_session_reset(struct stress_session *s, struct stress_box *box,
			  bool readonly)
{
	s->box = box;
	s->readonly = readonly;
	s->count = 0;
	s->need_learn = false;
}

uint32_t stress_session_seq(const struct stress_session *s, uint32_t uid)
{
	for (unsigned int i = 0; i < s->count; i++) {
		if (s->uids[i] == uid)
			return i + 1;
	}
	return 0;
}

static void session_grow(struct stress_session *s, unsigned int count)
{
	if (count <= s->alloc)
		return;
	while (s->alloc < count)
		s->alloc = s->alloc == 0 ? 128 : s->alloc * 2;
	s->uids = bench_realloc(s->uids, s->alloc * sizeof(*s->uids));
}

static bool cmd_is_seq_fetch_store(const struct stress_cmd *cmd)
{
	/* RFC 9051 7.5.1: no EXPUNGE while answering FETCH, STORE or
	   SEARCH by sequence numbers */
	return !cmd->uid && (cmd->op == STRESS_OP_FETCH ||
			     cmd->op == STRESS_OP_STORE ||
			     cmd->op == STRESS_OP_LEARN ||
			     cmd->op == STRESS_OP_FINAL_FETCH);
}

static void session_expunge(struct stress_session *s, uint32_t seq)
{
	struct bench_client *c = s->c;
	uint64_t now = bench_now_us();

	if (s->box == NULL || seq == 0 || seq > s->count) {
		stress_error(s->sr, c, "* %u EXPUNGE with %u messages", seq,
			     s->count);
		return;
	}
	if (cmd_is_seq_fetch_store(&s->cmd))
		stress_error(s->sr, c, "EXPUNGE during %s by sequence number",
			     stress_op_names[s->cmd.op]);
	uint32_t uid = s->uids[seq - 1];
	memmove(&s->uids[seq - 1], &s->uids[seq],
		(s->count - seq) * sizeof(*s->uids));
	s->count--;
	s->cmd.expunges++;
	if (uid == 0)
		return;
	struct stress_msg *m = stress_box_find(s->box, uid);
	if (m == NULL) {
		stress_error(s->sr, c, "EXPUNGE of uid %u that nobody created",
			     uid);
		return;
	}
	/* (one seen before its creator's OK: its flags are not known) */
	if (!m->deleted_ever && !m->moved_ever && m->hist_count > 0) {
		stress_error(s->sr, c, "uid %u was expunged but was never "
			     "\\Deleted nor moved", uid);
		stress_msg_dump(s->sr, m, stdout);
	}
	if (m->gone_us == 0) {
		m->gone_us = now;
		m->gone_session = s->idx;
	}
}

static void session_exists(struct stress_session *s, uint32_t n)
{
	if (s->box == NULL) {
		stress_error(s->sr, s->c, "EXISTS with no mailbox selected");
		return;
	}
	if (n < s->count) {
		/* RFC 9051 7.4.1: only EXPUNGE lowers the count */
		stress_error(s->sr, s->c, "* %u EXISTS after %u messages", n,
			     s->count);
		return;
	}
	session_grow(s, n);
	for (unsigned int i = s->count; i < n; i++)
		s->uids[i] = 0;
	if (n > s->count)
		s->need_learn = true;
	s->count = n;
}

/* Give seq its uid (from a FETCH): it must agree with what the session
   was told and keep the uids ascending. */
static bool session_set_uid(struct stress_session *s, uint32_t seq,
			    uint32_t uid)
{
	uint32_t old = s->uids[seq - 1];

	if (old != 0) {
		if (old == uid)
			return true;
		stress_error(s->sr, s->c, "FETCH %u gave UID %u, it was UID %u",
			     seq, uid, old);
		return false;
	}
	for (unsigned int i = seq - 1; i > 0; i--) {
		if (s->uids[i - 1] != 0) {
			if (s->uids[i - 1] >= uid) {
				stress_error(s->sr, s->c, "UID %u at %u after UID "
					     "%u at %u", uid, seq,
					     s->uids[i - 1], i);
				return false;
			}
			break;
		}
	}
	for (unsigned int i = seq; i < s->count; i++) {
		if (s->uids[i] != 0) {
			if (s->uids[i] <= uid) {
				stress_error(s->sr, s->c, "UID %u at %u before UID "
					     "%u at %u", uid, seq, s->uids[i],
					     i + 1);
				return false;
			}
			break;
		}
	}
	s->uids[seq - 1] = uid;
	return true;
}

/* What one FETCH response held. */
struct fetch_seen {
	uint32_t seq, uid;
	bool have_flags;
	uint8_t flags;
	const struct stress_node *idhdr, *text, *full, *envelope, *size;
	uint32_t text_start;
};

static void fetch_item(struct stress_session *s, const struct stress_parse *p,
		       const struct stress_node *key,
		       const struct stress_node *value, struct fetch_seen *f)
{
	const char *bad;

	if (stress_node_is(key, "UID")) {
		if (!stress_node_uint(value, &f->uid) || f->uid == 0)
			stress_error(s->sr, s->c, "FETCH %u: bad UID", f->seq);
	} else if (stress_node_is(key, "FLAGS")) {
		if (!stress_flags_parse(p, value, &f->flags, &bad))
			stress_error(s->sr, s->c, "FETCH %u: %s", f->seq, bad);
		else
			f->have_flags = true;
	} else if (stress_node_is(key, "RFC822.SIZE")) {
		f->size = value;
	} else if (stress_node_is(key, "ENVELOPE")) {
		f->envelope = value;
	} else if (stress_node_is(key, "BODY[]")) {
		f->full = value;
	} else if (key->type == STRESS_NODE_ATOM && key->len > 10 &&
		   strncasecmp(key->data, "BODY[TEXT]", 10) == 0) {
		f->text = value;
		f->text_start = 0;
		if (key->len > 11 && key->data[10] == '<')
			f->text_start = (uint32_t)strtoul(key->data + 11, NULL, 10);
	} else if (key->type == STRESS_NODE_ATOM && key->len > 18 &&
		   strncasecmp(key->data, "BODY[HEADER.FIELDS", 18) == 0) {
		f->idhdr = value;
	}
}

/* RFC 2180 4.1.3: NIL data for a message the server can no longer
   read. Accepted (once per response) with --rfc2180-lenient for a
   message another session may have expunged; returns true then. */
static bool fetch_nil_data(struct stress_session *s,
			   const struct stress_parse *p,
			   const struct fetch_seen *f,
			   const struct stress_msg *m)
{
	const struct stress_node *items[] = {
		f->full, f->idhdr, f->text, f->envelope,
	};
	bool nil = false;

	uint32_t size;

	/* (BODY[TEXT]<n> past the end is rightly empty) */
	for (unsigned int i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		nil = nil || (items[i] != NULL &&
			      (items[i]->type == STRESS_NODE_NIL ||
			       (i < 2 && items[i]->type == STRESS_NODE_STRING &&
				items[i]->len == 0)));
	/* "ENVELOPE (NIL NIL ...)": every message has a subject */
	const struct stress_node *subject = f->envelope == NULL ? NULL :
		stress_node_child(p, f->envelope, 1);
	nil = nil || (f->envelope != NULL &&
		      (subject == NULL || subject->type == STRESS_NODE_NIL));
	/* its "RFC822.SIZE 0" (no message of the workload is empty) */
	nil = nil || (f->size != NULL && stress_node_uint(f->size, &size) &&
		      size == 0);
	if (!nil)
		return false;
	if (s->sr->run->set->rfc2180_lenient && stress_msg_may_be_gone(m)) {
		s->sr->nil_answers++;
		return true;
	}
	stress_error(s->sr, s->c, "FETCH %u (UID %u): NIL or empty data for "
		     "message %u%s", f->seq, f->uid, m->id,
		     stress_msg_may_be_gone(m) ? ", which another session may "
		     "have expunged (RFC 2180 4.1.3: --rfc2180-lenient)" : "");
	return true;
}

/* The data items against message m's content. */
static void fetch_check_content(struct stress_session *s,
				const struct stress_parse *p,
				const struct fetch_seen *f,
				struct stress_msg *m)
{
	struct stress_run *sr = s->sr;
	char buf[STRESS_MSG_MAX];
	struct bench_message msg = { .data = buf };
	uint32_t num;

	if (fetch_nil_data(s, p, f, m))
		return;
	if (f->idhdr != NULL) {
		uint32_t id = stress_content_id(f->idhdr->data, f->idhdr->len);
		if (m->id == 0)
			m->id = id;
		else if (id != m->id)
			stress_error(sr, s->c, "FETCH %u (UID %u): X-Stress-Id %u, "
				     "the message is %u", f->seq, f->uid, id,
				     m->id);
	}
	if (m->id == 0)
		return;
	stress_content(m->id, sr->run->set->seed, &msg);
	size_t body = (size_t)(strstr(buf, "\r\n\r\n") - buf) + 4;
	if (f->size != NULL &&
	    (!stress_node_uint(f->size, &num) || num != msg.size)) {
		stress_error(sr, s->c, "FETCH %u (UID %u): RFC822.SIZE %.*s, "
			     "message %u has %zu bytes", f->seq, f->uid,
			     (int)f->size->len, f->size->data, m->id, msg.size);
	}
	if (f->full != NULL && (f->full->len != msg.size ||
				memcmp(f->full->data, buf, msg.size) != 0)) {
		stress_error(sr, s->c, "FETCH %u (UID %u): BODY[] is not message "
			     "%u (%zu bytes, want %zu)", f->seq, f->uid, m->id,
			     f->full->len, msg.size);
	}
	if (f->text != NULL) {
		size_t start = body + f->text_start;
		size_t want = start > msg.size ? 0 :
			MIN(msg.size - start, s->cmd.text_count);
		if (f->text->len != want ||
		    (want > 0 && memcmp(f->text->data, buf + start, want) != 0))
			stress_error(sr, s->c, "FETCH %u (UID %u): BODY[TEXT]<%u> "
				     "is not that of message %u", f->seq,
				     f->uid, f->text_start, m->id);
	}
	if (f->envelope != NULL) {
		char subject[64], want[64];
		stress_node_string(stress_node_child(p, f->envelope, 1),
				   subject, sizeof(subject));
		snprintf(want, sizeof(want), "stress message %u", m->id);
		if (strcmp(subject, want) != 0)
			stress_error(sr, s->c, "FETCH %u (UID %u): ENVELOPE "
				     "subject \"%s\", want \"%s\"", f->seq,
				     f->uid, subject, want);
	}
}

/* A command's own message: mark it answered (STORE checks the flags at
   its tagged reply). Returns true if it is a STORE target. */
static bool fetch_note_answer(struct stress_session *s,
			      const struct fetch_seen *f)
{
	struct stress_cmd *cmd = &s->cmd;
	bool store_target = false;

	for (unsigned int i = 0; i < cmd->count; i++) {
		if (cmd->uids[i] != f->uid)
			continue;
		if (cmd->op == STRESS_OP_STORE) {
			if (!f->have_flags)
				continue;
			store_target = true;
			cmd->answer_flags[i] = f->flags;
		}
		cmd->answered[i] = true;
	}
	return store_target;
}

static void session_fetch(struct stress_session *s, const char *data,
			  size_t len, size_t pos, uint32_t seq)
{
	static struct stress_parse p;	/* big: one at a time */
	struct fetch_seen f;
	char why[512];

	memset(&f, 0, sizeof(f));
	f.seq = seq;
	p.count = 0;
	int root = stress_parse_value(&p, data, len, &pos);
	if (root < 0 || p.nodes[root].type != STRESS_NODE_LIST ||
	    p.nodes[root].count % 2 != 0) {
		stress_error(s->sr, s->c, "FETCH %u: malformed (%s)", seq,
			     root < 0 ? p.error : "not a list of pairs");
		return;
	}
	if (s->box == NULL || seq == 0 || seq > s->count) {
		stress_error(s->sr, s->c, "* %u FETCH with %u messages", seq,
			     s->count);
		return;
	}
	const struct stress_node *list = &p.nodes[root];
	for (unsigned int i = 0; i + 1 < list->count; i += 2) {
		fetch_item(s, &p, stress_node_child(&p, list, i),
			   stress_node_child(&p, list, i + 1), &f);
	}
	if (f.uid != 0 && !session_set_uid(s, seq, f.uid))
		return;
	f.uid = s->uids[seq - 1];
	if (f.uid == 0)
		return;		/* nothing to compare with */
	struct stress_msg *m = stress_box_find(s->box, f.uid);
	if (m == NULL) {
		if (s->box->creates_inflight == 0) {
			stress_error(s->sr, s->c, "FETCH %u: UID %u that nobody "
				     "created", seq, f.uid);
			return;
		}
		/* a creator's OK is on its way */
		m = stress_box_add(s->box, f.uid, 0);
	}
	if (m->gone_us != 0 && m->gone_session != s->idx)
		s->sr->ghost_fetches++;
	fetch_check_content(s, &p, &f, m);
	bool store_target = fetch_note_answer(s, &f);
	uint64_t now = bench_now_us();
	int flags_ok = !f.have_flags || store_target ? 1 :
		stress_msg_flags_ok(m, s->idx, s->sync_us, now, f.flags, why,
				    sizeof(why));
	if (f.have_flags && !store_target) {
		if (flags_ok < 0)
			s->sr->flags_unchecked++;
		else
			s->sr->flags_checked++;
	}
	if (flags_ok == 0) {
		char got[160];
		stress_flags_str(f.flags, got, sizeof(got));
		stress_error(s->sr, s->c, "FETCH %u (UID %u): FLAGS %s, the "
			     "session may see %s", seq, f.uid, got, why);
		stress_msg_dump(s->sr, m, stdout);
	}
}

/* "[CODE ...]" of an untagged OK. */
static void session_ok_code(struct stress_session *s, const char *text,
			    size_t len)
{
	struct stress_cmd *cmd = &s->cmd;
	uint32_t num;

	if (len < 2 || text[0] != '[')
		return;
	if (sscanf(text, "[UIDVALIDITY %u]", &num) == 1)
		cmd->select_uidvalidity = num;
	else if (sscanf(text, "[UIDNEXT %u]", &num) == 1)
		cmd->select_uidnext = num;
	else if (strncasecmp(text, "[READ-ONLY]", 11) == 0)
		cmd->select_readonly = true;
	else if (strncasecmp(text, "[COPYUID ", 9) == 0 &&
		 cmd->op == STRESS_OP_MOVE) {
		/* MOVE (RFC 6851 4.3): applied at the tagged reply */
		cmd->copyuid_seen = true;
		size_t n = MIN(len, sizeof(cmd->copyuid) - 1);
		memcpy(cmd->copyuid, text, n);
		cmd->copyuid[n] = '\0';
	}
}

static void session_status(struct stress_session *s, const char *data,
			   size_t len)
{
	struct stress_cmd *cmd = &s->cmd;
	const char *p = memchr(data, '(', len);
	uint32_t num;

	if (cmd->op != STRESS_OP_STATUS || p == NULL)
		return;
	cmd->status_seen = true;
	const char *end = data + len;
	while (p < end) {
		if (sscanf(p, "MESSAGES %u", &num) == 1)
			cmd->status_messages = num;
		else if (sscanf(p, "UIDNEXT %u", &num) == 1)
			cmd->status_uidnext = num;
		else if (sscanf(p, "UIDVALIDITY %u", &num) == 1)
			cmd->status_uidvalidity = num;
		p++;
	}
}

void stress_session_response(struct bench_client *c, const char *data,
			     size_t len)
{
	struct stress_session *s = c->wl_data;
	const char *p = data + 2, *end = data + len;
	char *num_end;

	if (len >= 5 && strncasecmp(p, "OK ", 3) == 0) {
		session_ok_code(s, p + 3, (size_t)(end - p - 3));
		return;
	}
	if (strncasecmp(p, "BYE", 3) == 0) {
		if (s->cmd.op != STRESS_OP_LOGOUT)
			stress_error(s->sr, c, "BYE: %.*s", (int)MIN(len, 200),
				     data);
		return;
	}
	if (strncasecmp(p, "NO ", 3) == 0 || strncasecmp(p, "BAD ", 4) == 0) {
		stress_error(s->sr, c, "untagged %.*s", (int)MIN(len, 200), data);
		return;
	}
	if (strncasecmp(p, "STATUS ", 7) == 0) {
		session_status(s, data, len);
		return;
	}
	unsigned long n = strtoul(p, &num_end, 10);
	if (num_end == p || n > UINT32_MAX)
		return;		/* FLAGS, CAPABILITY, LIST... */
	if (strncasecmp(num_end, " EXISTS", 7) == 0)
		session_exists(s, (uint32_t)n);
	else if (strncasecmp(num_end, " EXPUNGE", 8) == 0)
		session_expunge(s, (uint32_t)n);
	else if (strncasecmp(num_end, " FETCH ", 7) == 0)
		session_fetch(s, data, len, (size_t)(num_end + 7 - data),
			      (uint32_t)n);
}

void stress_session_check_synced(struct stress_session *s)
{
	struct stress_box *box = s->box;
	uint64_t t = s->sync_us;
	bool complete = true;

	if (box == NULL)
		return;
	for (unsigned int i = 0; i < s->count; i++) {
		uint32_t uid = s->uids[i];
		if (uid == 0) {
			complete = false;
			continue;
		}
		struct stress_msg *m = stress_box_find(box, uid);
		if (m != NULL && m->gone_us != 0 && m->gone_us < t) {
			stress_error(s->sr, s->c, "after its sync the session "
				     "still numbers UID %u (at %u), whose "
				     "expunge client %u was told before",
				     uid, i + 1, m->gone_session);
			stress_msg_dump(s->sr, m, stdout);
		}
	}
	if (!complete)
		return;
	for (unsigned int i = 0; i < box->count; i++) {
		struct stress_msg *m = &box->msgs[i];
		if (m->created_us == 0 || m->created_us >= t ||
		    stress_msg_may_be_gone(m))
			continue;
		if (stress_session_seq(s, m->uid) == 0) {
			stress_error(s->sr, s->c, "after its sync the session "
				     "lacks UID %u (message %u), created "
				     "before it and never \\Deleted",
				     m->uid, m->id);
			stress_msg_dump(s->sr, m, stdout);
		}
	}
}
