#ifndef MAIL_SEARCH_PRIVATE_H
#define MAIL_SEARCH_PRIVATE_H
/* The parsed search tree, shared by mail-search-parse.c (building it),
   mail-search.c (evaluating it) and mail-search-text.c (matching text). */

#include "mail-search.h"
#include "mail-flags.h"
#include "buffer.h"

enum mail_search_key {
	MSK_ALL,
	MSK_SUB,          /* parenthesized list: all of subargs (AND) */
	MSK_OR,           /* subargs holds exactly two */
	MSK_SEQSET,
	MSK_UIDSET,
	MSK_FLAGS,        /* flags_set all present, flags_unset all absent */
	MSK_KEYWORD,
	MSK_LARGER,
	MSK_SMALLER,
	MSK_BEFORE,       /* internal date, day granularity */
	MSK_ON,
	MSK_SINCE,
	MSK_OLDER,        /* RFC 5032: internal date, seconds */
	MSK_YOUNGER,
	MSK_SAVEDBEFORE,  /* RFC 8514: save date (else internal date), days */
	MSK_SAVEDON,
	MSK_SAVEDSINCE,
	MSK_SAVEDATESUPPORTED,   /* every message: our storage has them */
	MSK_MODSEQ,       /* RFC 7162 3.1.5: modseq >= number */
	MSK_EMAILID,      /* RFC 8474 6: str is the id */
	MSK_THREADID,
	/* --- need the header --- */
	MSK_SENTBEFORE,
	MSK_SENTON,
	MSK_SENTSINCE,
	MSK_HEADER,
	/* --- need the body (TEXT also matches the header) --- */
	MSK_BODY,
	MSK_TEXT,
};

/* The cost class of a key: evaluation proceeds class by class. */
enum mail_search_class {
	MSC_CHEAP = 0,
	MSC_HEADER,
	MSC_BODY,
};

struct mail_search_arg {
	struct mail_search_arg *next;   /* siblings are ANDed */
	enum mail_search_key key;
	bool not;
	/* For the message being evaluated: -1 unknown, 0, 1. */
	int result;

	struct mail_search_arg *subargs;          /* SUB, OR */
	struct mail_search_range *ranges;         /* SEQSET, UIDSET */
	unsigned int range_count;
	enum mail_flags flags_set, flags_unset;   /* FLAGS */
	const char *keyword;                      /* KEYWORD (as given) */
	uint64_t number;      /* LARGER, SMALLER, OLDER, YOUNGER */
	int64_t day;          /* date keys: days since 1970-01-01 */
	const char *header;   /* HEADER: field name */
	/* FROM, TO, CC, BCC: also match the address form of the field
	   (mail_search_address_text()) */
	bool address;
	/* HEADER, BODY, TEXT: the string, UTF-8 and case-folded. */
	const unsigned char *str;
	size_t str_len;
};

struct mail_search_program {
	pool_t pool;
	struct mail_search_arg *args;
	bool uses_saved;
	bool uses_modseq;     /* a MODSEQ key (RFC 7162 3.1.5) */
	bool uses_seqset;     /* a sequence-set key (not "$") */
	/* Leaves by class, for the header and body passes. */
	struct mail_search_arg **header_leaves, **text_leaves;
	unsigned int header_leaf_count, text_leaf_count;
	size_t max_text_len;   /* longest BODY/TEXT string */
};

static inline enum mail_search_class
mail_search_key_class(enum mail_search_key key)
{
	if (key >= MSK_BODY)
		return MSC_BODY;
	if (key >= MSK_SENTBEFORE)
		return MSC_HEADER;
	return MSC_CHEAP;
}

/* Address form of an address header's value (mail-search-address.c),
   from pool; at most MAIL_SEARCH_ADDRESS_TEXT_MAX bytes (the rest of a
   longer one is dropped). Not folded. */
#define MAIL_SEARCH_ADDRESS_TEXT_MAX (128 * 1024)
const char *mail_search_address_text(pool_t pool, const char *value,
				     size_t len, size_t *len_r);

/* Days since 1970-01-01 of a civil date. */
int64_t mail_search_civil_day(int year, int month, int day);

/* ---- text matching (mail-search-text.c) ---- */

/* Feeds decoded text of one part (or one header field) to the BODY and
   TEXT leaves still unresolved, matching across chunk boundaries. */
struct mail_search_text;

struct mail_search_text *
mail_search_text_init(struct mail_search_program *program);
void mail_search_text_deinit(struct mail_search_text **text);
/* Start a text part: cte is the Content-Transfer-Encoding value (or
   NULL), charset the charset parameter (or NULL = US-ASCII). Leaves
   of key body_only_key or MSK_TEXT are fed (BODY parts feed both). */
void mail_search_text_begin(struct mail_search_text *text, const char *cte,
			    const char *charset);
void mail_search_text_feed(struct mail_search_text *text,
			   const void *data, size_t size);
void mail_search_text_end(struct mail_search_text *text);
/* Match already decoded UTF-8 (a header field) as a unit; only_text:
   feed TEXT leaves only (the top-level header). */
void mail_search_text_match_utf8(struct mail_search_text *text,
				 const char *str, size_t len, bool only_text);
/* Whether every BODY/TEXT leaf matched already (stop reading). */
bool mail_search_text_all_found(const struct mail_search_text *text);
/* Whether a TEXT leaf is still unresolved: only those read the
   top-level header (BODY leaves never do). */
bool mail_search_text_wants_header(const struct mail_search_text *text);

#endif
