/* The SEARCHRES saved result (imap-search.h). */
#include "imap-common.h"
#include "imap-client.h"
#include "imap-search.h"

struct imap_search_saved {
	struct mail_search_saved saved;   /* ranges point into uids */
	struct mail_search_range *uids;
};

void imap_search_saved_set(struct client *client,
			   const struct mail_search_range *uids,
			   unsigned int count)
{
	struct imap_search_saved *s;

	imap_search_saved_clear(client);
	s = i_malloc(sizeof(*s));
	if (count > 0) {
		s->uids = i_malloc(i_mul_size(count, sizeof(*uids)));
		memcpy(s->uids, uids, count * sizeof(*uids));
	}
	s->saved.ranges = s->uids;
	s->saved.count = count;
	client->search_saved = s;
}

void imap_search_saved_clear(struct client *client)
{
	struct imap_search_saved *s = client->search_saved;

	if (s == NULL)
		return;
	client->search_saved = NULL;
	i_free(s->uids);
	i_free(s);
}

const struct mail_search_saved *imap_search_saved_get(struct client *client)
{
	static const struct mail_search_saved empty = { NULL, 0 };

	return client->search_saved == NULL ? &empty :
		&client->search_saved->saved;
}

/* The saved UIDs as sequence ranges of box (UIDs grow with sequence
   numbers, so each UID range is one run of sequence numbers). */
static void saved_to_seqs(struct client_command *cmd, struct mailbox *box,
			  struct seq_range **ranges_r, unsigned int *count_r)
{
	const struct mail_search_saved *saved =
		imap_search_saved_get(cmd->client);
	uint32_t msgs = mailbox_get_count(box);
	struct seq_range *ranges = p_malloc(cmd->pool,
		i_mul_size(saved->count + 1, sizeof(*ranges)));
	unsigned int count = 0;

	for (unsigned int i = 0; i < saved->count; i++) {
		uint32_t seq = mailbox_uid_to_seq_ge(box, saved->ranges[i].lo);
		if (seq == 0)
			break;
		uint32_t last = seq - 1;
		while (last < msgs &&
		       mailbox_msg_uid(box, last + 1) <= saved->ranges[i].hi)
			last++;
		if (last < seq)
			continue;
		ranges[count].seq1 = seq;
		ranges[count].seq2 = last;
		count++;
	}
	*ranges_r = ranges;
	*count_r = count;
}

int imap_search_seqset(struct client_command *cmd, const char *str,
		       struct seq_range **ranges_r, unsigned int *count_r)
{
	struct mailbox *box = cmd->client->mailbox;

	if (strcmp(str, "$") == 0) {
		saved_to_seqs(cmd, box, ranges_r, count_r);
		return 0;
	}
	if (imap_seqset_parse(cmd->pool, str, ranges_r, count_r) < 0)
		return -1;
	return imap_seqset_resolve(box, cmd->uid, *ranges_r, count_r);
}

static bool partial_number(const char *str, const char **end_r,
			   uint32_t *num_r)
{
	char *end;

	if (*str < '1' || *str > '9')
		return false;
	errno = 0;
	unsigned long long n = strtoull(str, &end, 10);
	if (errno != 0 || n > UINT32_MAX)
		return false;
	*num_r = (uint32_t)n;
	*end_r = end;
	return true;
}

bool imap_search_partial_parse(const char *str,
			       struct imap_search_partial *partial_r)
{
	struct imap_search_partial p = { .from_end = str[0] == '-' };
	uint32_t a, b;
	const char *end;

	if (p.from_end)
		str++;
	if (!partial_number(str, &end, &a) || *end != ':')
		return false;
	str = end + 1;
	if (p.from_end && *str++ != '-')
		return false;
	if (!partial_number(str, &end, &b) || *end != '\0')
		return false;
	p.lo = MIN(a, b);
	p.hi = MAX(a, b);
	*partial_r = p;
	return true;
}

bool imap_search_partial_window(const struct imap_search_partial *partial,
				uint32_t total, uint32_t *first_r,
				uint32_t *last_r)
{
	if (partial->lo > total)
		return false;
	uint32_t hi = MIN(partial->hi, total);
	if (partial->from_end) {
		*first_r = total - hi;
		*last_r = total - partial->lo;
	} else {
		*first_r = partial->lo - 1;
		*last_r = hi - 1;
	}
	return true;
}

int imap_search_partial_head(const struct imap_search_partial *partial,
			     buffer_t *out)
{
	const char *minus = partial->from_end ? "-" : "";

	return buffer_printf(out, " PARTIAL (%s%u:%s%u ", minus, partial->lo,
			     minus, partial->hi);
}

bool imap_search_parse_return(const struct imap_arg **args, bool *extended_r,
			      enum imap_search_return *ret_r,
			      struct imap_search_partial *partial_r,
			      const struct imap_arg **update_atts_r)
{
	static const struct {
		const char *name;
		enum imap_search_return ret;
	} options[] = {
		{ "MIN", IMAP_SEARCH_RETURN_MIN },
		{ "MAX", IMAP_SEARCH_RETURN_MAX },
		{ "ALL", IMAP_SEARCH_RETURN_ALL },
		{ "COUNT", IMAP_SEARCH_RETURN_COUNT },
		{ "SAVE", IMAP_SEARCH_RETURN_SAVE },
		{ "CONTEXT", IMAP_SEARCH_RETURN_CONTEXT },
		{ "UPDATE", IMAP_SEARCH_RETURN_UPDATE },
	};
	const struct imap_arg *list;
	unsigned int count;

	if (!imap_arg_atom_equals(*args, "RETURN"))
		return true;
	if (!imap_arg_get_list(&(*args)[1], &list, &count))
		return false;
	*args += 2;
	*extended_r = true;
	for (unsigned int i = 0; i < count; i++) {
		const char *range;
		if (imap_arg_atom_equals(&list[i], "PARTIAL")) {
			if ((*ret_r & IMAP_SEARCH_RETURN_PARTIAL) != 0 ||
			    i + 1 >= count ||
			    !imap_arg_get_atom(&list[++i], &range) ||
			    !imap_search_partial_parse(range, partial_r))
				return false;
			*ret_r |= IMAP_SEARCH_RETURN_PARTIAL;
			continue;
		}
		/* RFC 5465 7, 8: modifier-update = "UPDATE" ["(" fetch-att
		   *(SP fetch-att) ")"] */
		if (imap_arg_atom_equals(&list[i], "UPDATE") &&
		    i + 1 < count && list[i + 1].type == IMAP_ARG_LIST) {
			if ((*ret_r & IMAP_SEARCH_RETURN_UPDATE) != 0)
				return false;
			*ret_r |= IMAP_SEARCH_RETURN_UPDATE;
			*update_atts_r = &list[++i];
			continue;
		}
		unsigned int j;
		for (j = 0; j < N_ELEMENTS(options); j++) {
			if (imap_arg_atom_equals(&list[i], options[j].name))
				break;
		}
		if (j == N_ELEMENTS(options))
			return false;
		*ret_r |= options[j].ret;
	}
	/* RFC 4731 3.1, RFC 5267 3.3: RETURN () is RETURN (ALL); the hint
	   CONTEXT changes nothing (RFC 5267 4.2), so with only it too.
	   UPDATE is an option of its own: alone it asks for no data (as
	   Dovecot answers it) */
	if ((*ret_r & (IMAP_SEARCH_RETURN_DATA | IMAP_SEARCH_RETURN_SAVE |
		       IMAP_SEARCH_RETURN_UPDATE)) == 0)
		*ret_r |= IMAP_SEARCH_RETURN_ALL;
	/* RFC 9394 3.1: one of PARTIAL and ALL at most */
	return (*ret_r & IMAP_SEARCH_RETURN_PARTIAL) == 0 ||
		(*ret_r & IMAP_SEARCH_RETURN_ALL) == 0;
}
