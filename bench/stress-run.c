/* The stress workload's phases (stress.h): the owner of each user
   recreates its mailboxes, the sessions run, and at the end they go
   quiet, sync, and check their views with a fresh SELECT. */
#include "stress.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- setup and the end ---- */

static void send_setup(struct stress_session *s)
{
	struct stress_run *sr = s->sr;
	unsigned int boxes = sr->run->set->mailboxes;
	struct stress_box *box = stress_user_box(sr, s->user, s->setup_step / 2);

	stress_cmd_begin(s, STRESS_OP_SETUP);
	/* DELETE (what an earlier run left), then CREATE: a fresh UIDVALIDITY
	   and no message the model does not know */
	stress_cmd_send(s, "%s %s", s->setup_step % 2 == 0 ? "DELETE" : "CREATE",
		 box->name);
	s->setup_step++;
	(void)boxes;
}

void stress_wake_user(struct stress_run *sr, unsigned int user)
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
		stress_user_box(s->sr, s->user, 0);

	s->final_count = s->box == NULL ? UINT32_MAX : s->count;
	if (s->box != NULL) {
		s->final_uids = bench_realloc(s->final_uids, (s->count + 1) *
					      sizeof(*s->final_uids));
		memcpy(s->final_uids, s->uids, s->count * sizeof(*s->uids));
	}
	s->phase = STRESS_PHASE_FINAL_CHECK;
	stress_send_select(s, box, false);
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
			stress_send_noop(s);
			return true;
		}
		if (s->need_learn) {
			stress_send_learn(s);
			return true;
		}
		s->phase = STRESS_PHASE_FINAL_WAIT;
		break;
	case STRESS_PHASE_FINAL_CHECK:
		if (s->cmd.op == STRESS_OP_SELECT && s->count > 0) {
			stress_cmd_begin(s, STRESS_OP_FINAL_FETCH);
			stress_cmd_send(s, "FETCH 1:* (UID FLAGS BODY.PEEK[HEADER.FIELDS "
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
	stress_send_random(s);
	return true;
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
		stress_release_all(s);
		if (s->cmd.target != NULL &&
		    (s->cmd.op == STRESS_OP_APPEND || s->cmd.op == STRESS_OP_COPY ||
		     s->cmd.op == STRESS_OP_MOVE))
			s->cmd.target->creates_inflight--;
		bool owner = sr->users[s->user].owner == s->idx &&
			!sr->users[s->user].ready;
		s->phase = STRESS_PHASE_DONE;
		if (owner) {
			sr->users[s->user].ready = true;
			stress_wake_user(sr, s->user);
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
	for (unsigned int i = 0; i < STRESS_ERROR_KINDS; i++) {
		if (sr->error_kinds[i].fmt == NULL)
			break;
		printf("stress: %llu errors of the kind \"%s\"\n",
		       (unsigned long long)sr->error_kinds[i].count,
		       sr->error_kinds[i].fmt);
	}
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

