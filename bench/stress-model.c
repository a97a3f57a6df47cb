/* The stress workload's model of each mailbox (stress.h): its messages,
   their contents and flag histories, and what a session may see of them. */
#include "stress.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const stress_flag_names[STRESS_FLAG_COUNT] = {
	"\\Seen", "\\Answered", "\\Flagged", "\\Draft", "\\Deleted",
	"$Stress1", "$Stress2", "stress3",
};

struct stress_msg *stress_box_find(struct stress_box *box, uint32_t uid)
{
	unsigned int lo = 0, hi = box->count;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		if (box->msgs[mid].uid < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < box->count && box->msgs[lo].uid == uid ?
		&box->msgs[lo] : NULL;
}

struct stress_msg *stress_box_add(struct stress_box *box, uint32_t uid,
				  uint32_t id)
{
	unsigned int pos = box->count;

	while (pos > 0 && box->msgs[pos - 1].uid > uid)
		pos--;
	if (box->count == box->alloc) {
		box->alloc = box->alloc == 0 ? 64 : box->alloc * 2;
		box->msgs = bench_realloc(box->msgs,
					  box->alloc * sizeof(*box->msgs));
	}
	memmove(&box->msgs[pos + 1], &box->msgs[pos],
		(box->count - pos) * sizeof(*box->msgs));
	box->count++;
	struct stress_msg *m = &box->msgs[pos];
	memset(m, 0, sizeof(*m));
	m->uid = uid;
	m->id = id;
	return m;
}

void stress_box_prune(struct stress_run *sr, struct stress_box *box)
{
	uint64_t oldest = UINT64_MAX;
	unsigned int n = 0;

	/* a session syncs (or selects) after a message went: it no longer
	   numbers it, and a new SELECT never shows it */
	for (unsigned int i = 0; i < sr->run->set->clients; i++) {
		struct stress_session *s = sr->run->clients[i].wl_data;
		if (s->user == box->user && s->phase != STRESS_PHASE_DONE &&
		    s->sync_us < oldest)
			oldest = s->sync_us;
	}
	for (unsigned int i = 0; i < box->count; i++) {
		const struct stress_msg *m = &box->msgs[i];
		if (m->gone_us != 0 && m->gone_us < oldest &&
		    m->reserved_by == 0)
			continue;
		box->msgs[n++] = *m;
	}
	box->count = n;
}

const struct stress_change *stress_msg_last(const struct stress_msg *m)
{
	return m->hist_count == 0 ? NULL : &m->hist[m->hist_count - 1];
}

struct stress_change *stress_msg_change(struct stress_msg *m,
					unsigned int session, uint8_t value,
					uint8_t known)
{
	if (m->hist_count == STRESS_HISTORY_MAX) {
		memmove(&m->hist[0], &m->hist[1],
			(STRESS_HISTORY_MAX - 1) * sizeof(m->hist[0]));
		m->hist_count--;
		m->pruned = true;
	}
	struct stress_change *e = &m->hist[m->hist_count++];
	memset(e, 0, sizeof(*e));
	e->sent_us = bench_now_us();
	e->session = session;
	e->value = value;
	e->known = known;
	if ((value & STRESS_FLAG_DELETED) != 0 ||
	    (known & STRESS_FLAG_DELETED) == 0)
		m->deleted_ever = true;
	return e;
}

/* The newest change the session certainly sees: answered OK before its
   sync point, or its own answered before now. -1 if none is left. */
static int msg_visible_floor(const struct stress_msg *m, unsigned int session,
			     uint64_t sync_us, uint64_t now)
{
	int floor = -1;

	for (unsigned int i = 0; i < m->hist_count; i++) {
		const struct stress_change *e = &m->hist[i];
		if (e->acked_us == 0 || e->failed)
			continue;
		if (e->acked_us <= sync_us ||
		    (e->session == session && e->acked_us <= now))
			floor = (int)i;
	}
	return floor;
}

static bool flags_match(const struct stress_change *e, uint8_t flags)
{
	return ((flags ^ e->value) & e->known) == 0;
}

int stress_msg_flags_ok(const struct stress_msg *m, unsigned int session,
			uint64_t sync_us, uint64_t now, uint8_t flags,
			char *why, size_t why_size)
{
	int floor = msg_visible_floor(m, session, sync_us, now);
	size_t len = 0;

	if (floor < 0)
		return -1;	/* lagging behind what is remembered */
	why[0] = '\0';
	for (unsigned int i = (unsigned int)floor; i < m->hist_count; i++) {
		const struct stress_change *e = &m->hist[i];
		if (i > (unsigned int)floor && e->sent_us > now)
			break;
		if (flags_match(e, flags))
			return 1;
		char str[160];
		stress_flags_str(e->value, str, sizeof(str));
		int n = snprintf(why + len, why_size - len, "%s%s (known %02x)",
				 len > 0 ? " or " : "", str, e->known);
		if (n > 0 && (size_t)n < why_size - len)
			len += (size_t)n;
	}
	return 0;
}

void stress_msg_visible(const struct stress_msg *m, unsigned int session,
			uint64_t sync_us, uint64_t now, uint8_t *value_r,
			uint8_t *known_r)
{
	int floor = msg_visible_floor(m, session, sync_us, now);

	*value_r = 0;
	*known_r = 0;
	if (floor < 0)
		return;
	const struct stress_change *base = &m->hist[floor];
	uint8_t known = base->known;
	for (unsigned int i = (unsigned int)floor + 1; i < m->hist_count; i++) {
		const struct stress_change *e = &m->hist[i];
		if (e->sent_us > now)
			break;
		known &= e->known & (uint8_t)~(e->value ^ base->value);
	}
	*value_r = base->value;
	*known_r = known;
}

bool stress_msg_may_be_gone(const struct stress_msg *m)
{
	return m->deleted_ever || m->moved_ever || m->gone_us != 0;
}

void stress_flags_str(uint8_t flags, char *buf, size_t size)
{
	size_t len = 0;

	buf[len++] = '(';
	for (unsigned int i = 0; i < STRESS_FLAG_COUNT; i++) {
		if ((flags & (1U << i)) == 0)
			continue;
		int n = snprintf(buf + len, size - len, "%s%s",
				 len > 1 ? " " : "", stress_flag_names[i]);
		if (n < 0 || (size_t)n >= size - len - 1)
			break;
		len += (size_t)n;
	}
	buf[len++] = ')';
	buf[len] = '\0';
}

bool stress_flags_parse(const struct stress_parse *p,
			const struct stress_node *list, uint8_t *flags_r,
			const char **bad_r)
{
	static char bad[64];
	uint8_t flags = 0;

	if (list == NULL || list->type != STRESS_NODE_LIST) {
		*bad_r = "FLAGS is not a list";
		return false;
	}
	for (unsigned int i = 0; i < list->count; i++) {
		const struct stress_node *n = stress_node_child(p, list, i);
		unsigned int f;
		if (stress_node_is(n, "\\Recent"))
			continue;
		for (f = 0; f < STRESS_FLAG_COUNT; f++) {
			if (stress_node_is(n, stress_flag_names[f]))
				break;
		}
		if (f == STRESS_FLAG_COUNT) {
			snprintf(bad, sizeof(bad), "flag %.*s nobody set",
				 (int)(n->len > 40 ? 40 : n->len), n->data);
			*bad_r = bad;
			return false;
		}
		flags |= (uint8_t)(1U << f);
	}
	*flags_r = flags;
	return true;
}

/* ---- contents ---- */

static uint32_t content_hash(uint32_t id, unsigned int seed)
{
	uint64_t x = ((uint64_t)id << 32 | seed) ^ 0x9E3779B97F4A7C15ULL;

	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 29;
	return (uint32_t)x;
}

void stress_content(uint32_t id, unsigned int seed, struct bench_message *msg)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz";
	uint32_t h = content_hash(id, seed);
	/* mostly a few KB, now and then a bigger one (literals in pieces) */
	unsigned int lines = (h % 16) == 0 ? 200 + h % 100 : 2 + h % 60;
	char *data = msg->data;
	size_t len = 0;

	len += (size_t)snprintf(data, STRESS_MSG_MAX,
		"From: Stress Sender <stress@example.org>\r\n"
		"To: Stress Reader <reader@example.org>\r\n"
		"Subject: stress message %u\r\n"
		"Date: Mon, 7 Feb 1994 21:52:25 -0800\r\n"
		"Message-ID: <%u.%u@stress.example.org>\r\n"
		"X-Stress-Id: %u\r\n"
		"MIME-Version: 1.0\r\n"
		"Content-Type: text/plain; charset=us-ascii\r\n"
		"\r\n", id, id, seed, id);
	for (unsigned int i = 0; i < lines && len + 80 < STRESS_MSG_MAX; i++) {
		len += (size_t)snprintf(data + len, STRESS_MSG_MAX - len,
					"line %u of %u: ", i, id);
		for (unsigned int j = 0; j < 48; j++) {
			h = h * 1103515245 + 12345;
			data[len++] = letters[(h >> 16) % 26];
		}
		data[len++] = '\r';
		data[len++] = '\n';
	}
	msg->size = len;
}

uint32_t stress_content_id(const char *data, size_t len)
{
	static const char name[] = "X-Stress-Id:";
	size_t nlen = sizeof(name) - 1;
	uint32_t id = 0;

	for (size_t i = 0; i + nlen <= len; i++) {
		if (strncasecmp(data + i, name, nlen) != 0)
			continue;
		i += nlen;
		while (i < len && data[i] == ' ')
			i++;
		while (i < len && data[i] >= '0' && data[i] <= '9' &&
		       id < 100000000)
			id = id * 10 + (uint32_t)(data[i++] - '0');
		return id;
	}
	return 0;
}

/* ---- errors ---- */

void stress_error(struct stress_run *sr, struct bench_client *c,
		  const char *fmt, ...)
{
	char text[1024];
	va_list args;

	va_start(args, fmt);
	vsnprintf(text, sizeof(text), fmt, args);
	va_end(args);
	bench_stats_error(&sr->run->stats, "stress: %s", text);
	for (unsigned int i = 0; i < STRESS_ERROR_KINDS; i++) {
		if (sr->error_kinds[i].fmt == NULL)
			sr->error_kinds[i].fmt = fmt;
		if (sr->error_kinds[i].fmt == fmt) {
			sr->error_kinds[i].count++;
			break;
		}
	}
	if (sr->errors_printed++ >= STRESS_ERRORS_DETAILED)
		return;
	if (c == NULL) {
		printf("stress error: %s\n", text);
		return;
	}
	struct stress_session *s = c->wl_data;
	printf("stress error: client %u (%s, %s%s): %s\n", c->idx, c->user,
	       s->box == NULL ? "no mailbox" : s->box->name,
	       s->readonly ? ", read-only" : "", text);
	printf("  transcript of client %u (ms since the window opened):\n",
	       c->idx);
	bench_client_dump_transcript(c, stdout, sr->run->start_us, "    ");
	fflush(stdout);
}

void stress_msg_dump(const struct stress_run *sr, const struct stress_msg *m,
		     FILE *out)
{
	uint64_t t0 = sr->run->start_us;
	char str[160];

	if (sr->errors_printed > STRESS_ERRORS_DETAILED)
		return;
	fprintf(out, "  uid %u (message %u)%s%s%s: flag changes%s:\n", m->uid,
		m->id, m->deleted_ever ? ", \\Deleted once" : "",
		m->moved_ever ? ", moved" : "",
		m->gone_us != 0 ? ", expunged" : "",
		m->pruned ? " (older ones dropped)" : "");
	for (unsigned int i = 0; i < m->hist_count; i++) {
		const struct stress_change *e = &m->hist[i];
		stress_flags_str(e->value, str, sizeof(str));
		if (e->sent_us == 0) {
			fprintf(out, "    created by client %u with %s (known "
				"%02x)\n", e->session, str, e->known);
			continue;
		}
		fprintf(out, "    client %u sent %.3f ms, %s %.3f ms: %s "
			"(known %02x)\n", e->session,
			(double)((int64_t)(e->sent_us - t0)) / 1000.0,
			e->acked_us == 0 ? "in flight" :
			e->failed ? "NO at" : "OK at",
			e->acked_us == 0 ? 0.0 :
			(double)((int64_t)(e->acked_us - t0)) / 1000.0,
			str, e->known);
	}
	if (m->gone_us != 0) {
		fprintf(out, "    expunge reported to client %u at %.3f ms\n",
			m->gone_session,
			(double)((int64_t)(m->gone_us - t0)) / 1000.0);
	}
	fflush(out);
}
