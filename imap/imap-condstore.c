/* CONDSTORE and QRESYNC (RFC 7162): enabling, modseq values and
   VANISHED (EARLIER) responses (imap-condstore.h). */
#include "imap-common.h"
#include "imap-condstore.h"

#include <stdlib.h>

bool imap_arg_get_modseq(const struct imap_arg *arg, bool allow_zero,
			 uint64_t *modseq_r)
{
	const char *str;
	uint64_t value = 0;

	if (!imap_arg_get_atom(arg, &str) || *str == '\0')
		return false;
	for (; *str != '\0'; str++) {
		if (*str < '0' || *str > '9')
			return false;
		unsigned int digit = (unsigned int)(*str - '0');
		if (value > (IMAP_MODSEQ_MAX - digit) / 10)
			return false;
		value = value * 10 + digit;
	}
	if (value == 0 && !allow_zero)
		return false;
	*modseq_r = value;
	return true;
}

void imap_send_highestmodseq(struct client *client)
{
	if (client->mailbox == NULL)
		return;
	client_send_linef(client, "* OK [HIGHESTMODSEQ %llu] Highest",
		(unsigned long long)mailbox_get_reported_modseq(client->mailbox));
}

void imap_condstore_enable(struct client *client)
{
	if (client->condstore)
		return;
	client->condstore = true;
	/* RFC 7162 3.1: the first one with a mailbox selected */
	imap_send_highestmodseq(client);
}

static int range_cmp(const void *p1, const void *p2)
{
	const struct seq_range *r1 = p1, *r2 = p2;

	return r1->seq1 < r2->seq1 ? -1 : r1->seq1 > r2->seq1 ? 1 : 0;
}

void imap_uid_ranges_normalize(struct seq_range *ranges, unsigned int *count)
{
	unsigned int n = 0;

	qsort(ranges, *count, sizeof(*ranges), range_cmp);
	for (unsigned int i = 0; i < *count; i++) {
		if (n > 0 && (uint64_t)ranges[n - 1].seq2 + 1 >= ranges[i].seq1) {
			ranges[n - 1].seq2 = MAX(ranges[n - 1].seq2,
						 ranges[i].seq2);
		} else {
			ranges[n++] = ranges[i];
		}
	}
	*count = n;
}

/* ---- VANISHED (EARLIER) ---- */

/* Add the part of uid1..uid2 inside the known set. */
static void vanished_add_run(void *context, uint32_t uid1, uint32_t uid2)
{
	struct imap_vanished *v = context;
	unsigned int lo = 0, hi = v->known_count;

	/* the first known range that ends at or after uid1 */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		if (v->known[mid].seq2 < uid1)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < v->known_count && v->known[lo].seq1 <= uid2; lo++) {
		uint32_t a = MAX(uid1, v->known[lo].seq1);
		uint32_t b = MIN(uid2, v->known[lo].seq2);
		if (a <= b)
			uidset_add_range(&v->set, a, b);
	}
}

/* The numbers of a parsed set in the order given. */
struct set_walk {
	const struct seq_range *ranges;
	unsigned int count, idx;
	uint32_t next;
};

static bool set_walk_next(struct set_walk *w, uint32_t *num_r)
{
	while (w->idx < w->count) {
		const struct seq_range *r = &w->ranges[w->idx];
		if (w->next == 0)
			w->next = r->seq1;
		if (w->next <= r->seq2 && w->next != 0) {
			*num_r = w->next;
			w->next = w->next == r->seq2 ? 0 : w->next + 1;
			if (w->next == 0)
				w->idx++;
			return true;
		}
		w->idx++;
		w->next = 0;
	}
	return false;
}

/* RFC 7162 3.2.5.2: the pairs that match the mailbox, up to the first
   that does not, prove the client knows every expunge up to the last
   matching UID. Returns the lowest UID to report. */
static uint32_t seqmatch_lower(struct mailbox *box,
			       const struct seq_range *seqs, unsigned int nseq,
			       const struct seq_range *uids, unsigned int nuid)
{
	struct set_walk ws = { seqs, nseq, 0, 0 }, wu = { uids, nuid, 0, 0 };
	uint32_t count = mailbox_get_count(box), seq, uid, lower = 1;

	/* sequence numbers ascend: past the count none can match, so this
	   is at most count + 1 steps whatever the client sent */
	while (set_walk_next(&ws, &seq) && set_walk_next(&wu, &uid)) {
		if (seq > count || mailbox_msg_uid(box, seq) != uid)
			break;
		lower = uid == UINT32_MAX ? uid : uid + 1;
	}
	return lower;
}

int imap_vanished_init(struct imap_vanished *v, struct client *client,
		       uint64_t since, const struct seq_range *known,
		       unsigned int known_count, const struct seq_range *mseqs,
		       unsigned int mseq_count, const struct seq_range *muids,
		       unsigned int muid_count)
{
	struct mailbox *box = client->mailbox;
	const char *error;

	memset(v, 0, sizeof(*v));
	v->client = client;
	v->known = known;
	v->known_count = known_count;
	buffer_init(&v->line, IMAP_VANISHED_LINE_MAX + 64);
	int ret = mailbox_expunged_since(box, since, vanished_add_run, v,
					 &error);
	if (ret < 0) {
		i_error("VANISHED: %s", error);
		return -1;
	}
	v->exact = ret > 0;
	if (!v->exact) {
		/* no history back to since: every known UID not here */
		v->next_uid = mseq_count == 0 ? 1 :
			seqmatch_lower(box, mseqs, mseq_count, muids,
				       muid_count);
	}
	return 0;
}

void imap_vanished_deinit(struct imap_vanished *v)
{
	uidset_free(&v->set);
	if (v->line.data != NULL)
		buffer_free(&v->line);
}

/* Add a range to the line, sending the line when it is full. */
static void vanished_put(struct imap_vanished *v, uint32_t lo, uint32_t hi)
{
	buffer_t *line = &v->line;
	int ret = 0;

	if (line->used == 0)
		ret |= buffer_append_str(line, "* VANISHED (EARLIER) ");
	else
		ret |= buffer_append_c(line, ',');
	ret |= lo == hi ? buffer_printf(line, "%u", lo) :
		buffer_printf(line, "%u:%u", lo, hi);
	i_assert(ret == 0);
	if (line->used >= IMAP_VANISHED_LINE_MAX) {
		client_send_line(v->client, (const char *)line->data);
		buffer_reset(line);
	}
}

/* The next gap of the current known range (uids not in the mailbox). */
static bool vanished_next_gap(struct imap_vanished *v, uint32_t *lo_r,
			      uint32_t *hi_r)
{
	struct mailbox *box = v->client->mailbox;

	while (v->pos < v->known_count) {
		const struct seq_range *r = &v->known[v->pos];
		uint32_t from = MAX(r->seq1, v->next_uid);
		if (from > r->seq2 || v->next_uid == 0) {
			v->pos++;
			continue;
		}
		uint32_t seq = mailbox_uid_to_seq_ge(box, from);
		uint32_t count = mailbox_get_count(box);
		/* step over the messages that are there */
		while (seq != 0 && seq <= count &&
		       mailbox_msg_uid(box, seq) == from) {
			if (from == r->seq2) {
				from = 0;
				break;
			}
			from++;
			seq++;
		}
		if (from == 0 || from > r->seq2) {
			v->pos++;
			continue;
		}
		uint32_t next = seq != 0 && seq <= count ?
			mailbox_msg_uid(box, seq) : 0;
		uint32_t hi = next != 0 && next <= r->seq2 ? next - 1 : r->seq2;
		*lo_r = from;
		*hi_r = hi;
		if (hi == r->seq2) {
			v->pos++;
		} else {
			v->next_uid = next;
		}
		return true;
	}
	return false;
}

bool imap_vanished_send(struct imap_vanished *v)
{
	struct client *client = v->client;
	uint32_t lo, hi;

	for (;;) {
		if (client->disconnected)
			return true;
		if (o_stream_get_buffer_avail(client->output) <
		    CLIENT_OUTPUT_SLICE_MIN_AVAIL)
			return false;
		if (v->exact) {
			if (v->pos >= v->set.count)
				break;
			lo = v->set.ranges[v->pos].lo;
			hi = v->set.ranges[v->pos].hi;
			v->pos++;
		} else if (!vanished_next_gap(v, &lo, &hi)) {
			break;
		}
		vanished_put(v, lo, hi);
	}
	if (v->line.used > 0) {
		client_send_line(client, (const char *)v->line.data);
		buffer_reset(&v->line);
	}
	return true;
}
