/* SEARCH program parsing (mail-search.h): RFC 3501 / RFC 9051 search-key,
   RFC 5032 OLDER/YOUNGER, RFC 5182 "$", RFC 8514 SAVED*, RFC 8474
   EMAILID/THREADID. Strings are converted from the CHARSET to UTF-8 and
   case-folded once here. */
#include "lib.h"
#include "strfuncs.h"
#include "mail-search-private.h"
#include "imap-seqset-parse.h"
#include "rfc2047.h"
#include "mailbox-objectid.h"

#include <strings.h>

struct search_parser {
	pool_t pool;
	const char *charset;            /* NULL: UTF-8 / US-ASCII */
	const struct mail_search_saved *saved;
	struct mail_search_program *program;
	const char *error;
	bool badcharset;
};

static int parse_key(struct search_parser *sp, const struct imap_arg **args,
		     unsigned int depth, struct mail_search_arg **arg_r);

static struct mail_search_arg *
arg_new(struct search_parser *sp, enum mail_search_key key)
{
	struct mail_search_arg *arg = p_malloc(sp->pool, sizeof(*arg));

	arg->key = key;
	arg->result = -1;
	return arg;
}

/* prefix ends in the place where what (client text) goes */
static int parse_error(struct search_parser *sp, const char *prefix,
		       const char *what)
{
	sp->error = p_strdup_printf(sp->pool, "%s%s", prefix,
				    str_sanitize(sp->pool, what, 40));
	return -1;
}

/* The next argument as a string (atom, quoted or literal without NULs). */
static int next_astring(struct search_parser *sp, const struct imap_arg **args,
			const char *key, const char **str_r)
{
	if (imap_arg_is_eol(*args) || !imap_arg_get_astring(*args, str_r))
		return parse_error(sp, "Missing or invalid argument for ", key);
	(*args)++;
	return 0;
}

/* A search string: converted to UTF-8 and folded. */
static int next_string(struct search_parser *sp, const struct imap_arg **args,
		       const char *key, struct mail_search_arg *arg)
{
	const char *str;
	buffer_t folded;

	if (next_astring(sp, args, key, &str) < 0)
		return -1;
	if (sp->charset != NULL) {
		str = charset_to_utf8(sp->pool, sp->charset, str, strlen(str));
		if (str == NULL) {
			sp->badcharset = true;
			return -1;
		}
	}
	buffer_init(&folded, mail_search_fold_max(strlen(str)));
	mail_search_fold_utf8((const unsigned char *)str, strlen(str), &folded);
	arg->str = p_memdup(sp->pool, folded.data, folded.used);
	arg->str_len = folded.used;
	buffer_free(&folded);
	return 0;
}

static const char *const month_names[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
};

/* date-text = date-day "-" date-month "-" date-year; 1*2DIGIT day. */
static bool parse_date(const char *s, int64_t *day_r)
{
	int day = 0, month = -1, year = 0, digits = 0;

	for (; *s >= '0' && *s <= '9' && digits < 2; s++, digits++)
		day = day * 10 + (*s - '0');
	if (digits == 0 || *s++ != '-')
		return false;
	for (int i = 0; i < 12; i++) {
		if (strncasecmp(s, month_names[i], 3) == 0)
			month = i + 1;
	}
	if (month < 0 || s[3] != '-')
		return false;
	s += 4;
	for (digits = 0; *s >= '0' && *s <= '9'; s++, digits++)
		year = year * 10 + (*s - '0');
	if (digits != 4 || *s != '\0' || day < 1 || day > 31)
		return false;
	*day_r = mail_search_civil_day(year, month, day);
	return true;
}

static int next_date(struct search_parser *sp, const struct imap_arg **args,
		     const char *key, struct mail_search_arg *arg)
{
	const char *str;

	if (next_astring(sp, args, key, &str) < 0)
		return -1;
	if (!parse_date(str, &arg->day))
		return parse_error(sp, "Invalid date: ", str);
	return 0;
}

static int next_number(struct search_parser *sp, const struct imap_arg **args,
		       const char *key, bool nonzero,
		       struct mail_search_arg *arg)
{
	const char *str;

	if (imap_arg_is_eol(*args) || !imap_arg_get_atom(*args, &str))
		return parse_error(sp, "Missing number for ", key);
	(*args)++;
	if (str[0] < '0' || str[0] > '9' ||
	    str_to_uint64(str, &arg->number) < 0 ||
	    (nonzero && arg->number == 0))
		return parse_error(sp, "Invalid number: ", str);
	return 0;
}

_Static_assert(MAIL_SEARCH_STAR == SEQSET_STAR, "one \"*\" for both range types");

/* sequence-set into ranges; "$" into the saved UID ranges. */
static int parse_set(struct search_parser *sp, const char *str,
		     struct mail_search_arg *arg)
{
	if (strcmp(str, "$") == 0) {
		arg->key = MSK_UIDSET;
		sp->program->uses_saved = true;
		if (sp->saved != NULL && sp->saved->count > 0) {
			arg->range_count = sp->saved->count;
			arg->ranges = p_memdup(sp->pool, sp->saved->ranges,
				i_mul_size(sp->saved->count,
					   sizeof(*arg->ranges)));
		}
		return 0;
	}
	struct seq_range *ranges;
	unsigned int count;

	if (imap_seqset_parse(sp->pool, str, &ranges, &count) < 0)
		return parse_error(sp, "Invalid sequence set: ", str);
	struct mail_search_range *out =
		p_malloc(sp->pool, i_mul_size(count, sizeof(*out)));
	for (unsigned int i = 0; i < count; i++) {
		out[i].lo = ranges[i].seq1;
		out[i].hi = ranges[i].seq2;
	}
	arg->ranges = out;
	arg->range_count = count;
	return 0;
}

static int parse_list(struct search_parser *sp, const struct imap_arg *list,
		      unsigned int depth, struct mail_search_arg **first_r)
{
	struct mail_search_arg **tail = first_r;

	*first_r = NULL;
	if (imap_arg_is_eol(list)) {
		sp->error = "Empty search key list";
		return -1;
	}
	while (!imap_arg_is_eol(list)) {
		if (parse_key(sp, &list, depth + 1, tail) < 0)
			return -1;
		tail = &(*tail)->next;
	}
	return 0;
}

struct flag_key {
	const char *name;
	enum mail_flags set, unset;
};
static const struct flag_key flag_keys[] = {
	{ "ANSWERED", MAIL_ANSWERED, 0 },
	{ "DELETED", MAIL_DELETED, 0 },
	{ "DRAFT", MAIL_DRAFT, 0 },
	{ "FLAGGED", MAIL_FLAGGED, 0 },
	{ "NEW", MAIL_RECENT, MAIL_SEEN },
	{ "OLD", 0, MAIL_RECENT },
	{ "RECENT", MAIL_RECENT, 0 },
	{ "SEEN", MAIL_SEEN, 0 },
	{ "UNANSWERED", 0, MAIL_ANSWERED },
	{ "UNDELETED", 0, MAIL_DELETED },
	{ "UNDRAFT", 0, MAIL_DRAFT },
	{ "UNFLAGGED", 0, MAIL_FLAGGED },
	{ "UNSEEN", 0, MAIL_SEEN },
};

struct named_key {
	const char *name;
	enum mail_search_key key;
	const char *header;   /* header keys */
};
static const struct named_key string_keys[] = {
	{ "BCC", MSK_HEADER, "Bcc" },
	{ "BODY", MSK_BODY, NULL },
	{ "CC", MSK_HEADER, "Cc" },
	{ "FROM", MSK_HEADER, "From" },
	{ "SUBJECT", MSK_HEADER, "Subject" },
	{ "TEXT", MSK_TEXT, NULL },
	{ "TO", MSK_HEADER, "To" },
};
static const struct named_key date_keys[] = {
	{ "BEFORE", MSK_BEFORE, NULL },
	{ "ON", MSK_ON, NULL },
	{ "SAVEDBEFORE", MSK_SAVEDBEFORE, NULL },
	{ "SAVEDON", MSK_SAVEDON, NULL },
	{ "SAVEDSINCE", MSK_SAVEDSINCE, NULL },
	{ "SENTBEFORE", MSK_SENTBEFORE, NULL },
	{ "SENTON", MSK_SENTON, NULL },
	{ "SENTSINCE", MSK_SENTSINCE, NULL },
	{ "SINCE", MSK_SINCE, NULL },
};
static const struct named_key number_keys[] = {
	{ "LARGER", MSK_LARGER, NULL },
	{ "OLDER", MSK_OLDER, NULL },
	{ "SMALLER", MSK_SMALLER, NULL },
	{ "YOUNGER", MSK_YOUNGER, NULL },
};

static const struct named_key *
find_named(const struct named_key *keys, unsigned int count, const char *name)
{
	for (unsigned int i = 0; i < count; i++) {
		if (strcasecmp(keys[i].name, name) == 0)
			return &keys[i];
	}
	return NULL;
}

/* "MODSEQ [entry-name entry-type-req] mod-sequence-valzer" (RFC 7162
   3.1.5). One modseq per message: the entry is checked and ignored. */
static int parse_modseq(struct search_parser *sp, const struct imap_arg **args,
			struct mail_search_arg *arg)
{
	const char *entry, *type;

	if (!imap_arg_is_eol(*args) && (*args)->type == IMAP_ARG_STRING) {
		if (!imap_arg_get_string(*args, &entry) ||
		    strncasecmp(entry, "/flags/", 7) != 0 || entry[7] == '\0')
			return parse_error(sp, "Invalid MODSEQ entry name", "");
		(*args)++;
		if (imap_arg_is_eol(*args) || !imap_arg_get_atom(*args, &type) ||
		    (strcasecmp(type, "priv") != 0 &&
		     strcasecmp(type, "shared") != 0 &&
		     strcasecmp(type, "all") != 0))
			return parse_error(sp, "Invalid MODSEQ entry type", "");
		(*args)++;
	}
	arg->key = MSK_MODSEQ;
	sp->program->uses_modseq = true;
	if (next_number(sp, args, "MODSEQ", false, arg) < 0)
		return -1;
	/* mod-sequence-valzer is 63 bits (RFC 7162 7) */
	if (arg->number > 9223372036854775807ULL)
		return parse_error(sp, "Invalid MODSEQ value", "");
	return 0;
}

/* "EMAILID objectid", "THREADID objectid" (RFC 8474 6); an id that is
   not an objectid is a client error. */
static int parse_objectid(struct search_parser *sp, const char *name,
			  const struct imap_arg **args,
			  struct mail_search_arg *arg)
{
	const char *id;

	if (imap_arg_is_eol(*args) || !imap_arg_get_atom(*args, &id) ||
	    !mailbox_objectid_is_valid(id))
		return parse_error(sp, "Missing or invalid object id for ",
				   name);
	(*args)++;
	arg->key = strcasecmp(name, "EMAILID") == 0 ? MSK_EMAILID :
		MSK_THREADID;
	arg->str = (const unsigned char *)p_strdup(sp->pool, id);
	arg->str_len = strlen(id);
	return 0;
}

/* Keys that take no argument or one typed argument. */
static int parse_simple_key(struct search_parser *sp, const char *name,
			    const struct imap_arg **args,
			    struct mail_search_arg *arg)
{
	const struct named_key *nk;

	for (unsigned int i = 0; i < N_ELEMENTS(flag_keys); i++) {
		if (strcasecmp(flag_keys[i].name, name) == 0) {
			arg->key = MSK_FLAGS;
			arg->flags_set = flag_keys[i].set;
			arg->flags_unset = flag_keys[i].unset;
			return 0;
		}
	}
	if (strcasecmp(name, "ALL") == 0)
		return 0;
	if (strcasecmp(name, "SAVEDATESUPPORTED") == 0) {
		arg->key = MSK_SAVEDATESUPPORTED;
		return 0;
	}
	if (strcasecmp(name, "MODSEQ") == 0)
		return parse_modseq(sp, args, arg);
	if (strcasecmp(name, "EMAILID") == 0 ||
	    strcasecmp(name, "THREADID") == 0)
		return parse_objectid(sp, name, args, arg);
	if ((nk = find_named(string_keys, N_ELEMENTS(string_keys),
			     name)) != NULL) {
		arg->key = nk->key;
		arg->header = nk->header;
		/* the envelope's address structure, RFC 9051 6.4.4 */
		arg->address = nk->key == MSK_HEADER &&
			strcasecmp(nk->name, "SUBJECT") != 0;
		return next_string(sp, args, nk->name, arg);
	}
	if ((nk = find_named(date_keys, N_ELEMENTS(date_keys), name)) != NULL) {
		arg->key = nk->key;
		return next_date(sp, args, nk->name, arg);
	}
	if ((nk = find_named(number_keys, N_ELEMENTS(number_keys),
			     name)) != NULL) {
		arg->key = nk->key;
		/* WITHIN intervals are nz-number */
		return next_number(sp, args, nk->name,
				   nk->key == MSK_OLDER ||
				   nk->key == MSK_YOUNGER, arg);
	}
	return 1;
}

static int parse_keyword(struct search_parser *sp, const char *name,
			 const struct imap_arg **args,
			 struct mail_search_arg *arg)
{
	const char *kw;

	if (imap_arg_is_eol(*args) || !imap_arg_get_atom(*args, &kw) ||
	    kw[0] == '\0')
		return parse_error(sp, "Missing keyword for ", name);
	(*args)++;
	arg->key = MSK_KEYWORD;
	arg->keyword = p_strdup(sp->pool, kw);
	arg->not = strcasecmp(name, "UNKEYWORD") == 0;
	return 0;
}

static int parse_named_key(struct search_parser *sp, const char *name,
			   const struct imap_arg **args, unsigned int depth,
			   struct mail_search_arg *arg)
{
	int ret = parse_simple_key(sp, name, args, arg);

	if (ret <= 0)
		return ret;
	if (strcasecmp(name, "KEYWORD") == 0 ||
	    strcasecmp(name, "UNKEYWORD") == 0)
		return parse_keyword(sp, name, args, arg);
	if (strcasecmp(name, "HEADER") == 0) {
		const char *field;
		arg->key = MSK_HEADER;
		if (next_astring(sp, args, "HEADER", &field) < 0)
			return -1;
		arg->header = p_strdup(sp->pool, field);
		return next_string(sp, args, "HEADER", arg);
	}
	if (strcasecmp(name, "UID") == 0) {
		const char *set;
		arg->key = MSK_UIDSET;
		if (imap_arg_is_eol(*args) || !imap_arg_get_atom(*args, &set))
			return parse_error(sp, "Missing sequence set for ",
					   "UID");
		(*args)++;
		return parse_set(sp, set, arg);
	}
	if (strcasecmp(name, "NOT") == 0) {
		struct mail_search_arg *sub;
		if (parse_key(sp, args, depth + 1, &sub) < 0)
			return -1;
		*arg = *sub;
		arg->not = !sub->not;
		arg->next = NULL;
		return 0;
	}
	if (strcasecmp(name, "OR") == 0) {
		arg->key = MSK_OR;
		if (parse_key(sp, args, depth + 1, &arg->subargs) < 0 ||
		    parse_key(sp, args, depth + 1, &arg->subargs->next) < 0)
			return -1;
		return 0;
	}
	if ((name[0] >= '0' && name[0] <= '9') || name[0] == '*' ||
	    name[0] == '$') {
		arg->key = MSK_SEQSET;
		if (parse_set(sp, name, arg) < 0)
			return -1;
		if (arg->key == MSK_SEQSET)
			sp->program->uses_seqset = true;
		return 0;
	}
	return parse_error(sp, "Unknown search key: ", name);
}

static int parse_key(struct search_parser *sp, const struct imap_arg **args,
		     unsigned int depth, struct mail_search_arg **arg_r)
{
	const struct imap_arg *list;
	unsigned int count;
	const char *name;

	if (depth > MAIL_SEARCH_MAX_DEPTH) {
		sp->error = "Search keys nested too deeply";
		return -1;
	}
	if (imap_arg_is_eol(*args)) {
		sp->error = "Missing search key";
		return -1;
	}
	struct mail_search_arg *arg = arg_new(sp, MSK_ALL);
	*arg_r = arg;
	if (imap_arg_get_list(*args, &list, &count)) {
		(*args)++;
		arg->key = MSK_SUB;
		return parse_list(sp, list, depth, &arg->subargs);
	}
	if (!imap_arg_get_atom(*args, &name)) {
		sp->error = "Search key is not an atom";
		return -1;
	}
	(*args)++;
	return parse_named_key(sp, name, args, depth, arg);
}

/* Collect the header and text leaves (the passes visit only those). */
static void collect_leaves(struct mail_search_program *prog,
			   struct mail_search_arg *arg, bool count_only)
{
	for (; arg != NULL; arg = arg->next) {
		if (arg->key == MSK_SUB || arg->key == MSK_OR) {
			collect_leaves(prog, arg->subargs, count_only);
			continue;
		}
		switch (mail_search_key_class(arg->key)) {
		case MSC_CHEAP:
			break;
		case MSC_HEADER:
			if (!count_only)
				prog->header_leaves[prog->header_leaf_count] = arg;
			prog->header_leaf_count++;
			break;
		case MSC_BODY:
			if (!count_only)
				prog->text_leaves[prog->text_leaf_count] = arg;
			prog->text_leaf_count++;
			prog->max_text_len = MAX(prog->max_text_len,
						 arg->str_len);
			break;
		}
	}
}

static int parse_charset(struct search_parser *sp,
			 const struct imap_arg **args)
{
	const char *charset;

	if (!imap_arg_atom_equals(*args, "CHARSET"))
		return 0;
	(*args)++;
	if (next_astring(sp, args, "CHARSET", &charset) < 0)
		return -1;
	if (strcasecmp(charset, "UTF-8") == 0 ||
	    strcasecmp(charset, "US-ASCII") == 0)
		return 0;
	if (charset_to_utf8(sp->pool, charset, "", 0) == NULL) {
		sp->badcharset = true;
		return -1;
	}
	sp->charset = p_strdup(sp->pool, charset);
	return 0;
}

enum mail_search_parse_result
mail_search_parse(pool_t pool, const struct imap_arg *args,
		  const struct mail_search_saved *saved,
		  struct mail_search_program **program_r,
		  const char **error_r)
{
	struct search_parser sp = { .pool = pool, .saved = saved };
	struct mail_search_arg **tail;

	sp.program = p_malloc(pool, sizeof(*sp.program));
	sp.program->pool = pool;
	tail = &sp.program->args;
	if (parse_charset(&sp, &args) == 0) {
		if (imap_arg_is_eol(args))
			sp.error = "Missing search key";
		while (sp.error == NULL && !imap_arg_is_eol(args)) {
			if (parse_key(&sp, &args, 0, tail) < 0)
				break;
			tail = &(*tail)->next;
		}
	}
	if (sp.badcharset) {
		*error_r = MAIL_SEARCH_BADCHARSET " Unknown charset";
		return MAIL_SEARCH_PARSE_BADCHARSET;
	}
	if (sp.error != NULL) {
		*error_r = sp.error;
		return MAIL_SEARCH_PARSE_BAD;
	}
	struct mail_search_program *prog = sp.program;
	collect_leaves(prog, prog->args, true);
	prog->header_leaves = p_malloc(pool, i_mul_size(
		prog->header_leaf_count + 1, sizeof(*prog->header_leaves)));
	prog->text_leaves = p_malloc(pool, i_mul_size(
		prog->text_leaf_count + 1, sizeof(*prog->text_leaves)));
	prog->header_leaf_count = prog->text_leaf_count = 0;
	collect_leaves(prog, prog->args, false);
	*program_r = prog;
	return MAIL_SEARCH_PARSE_OK;
}

bool mail_search_program_uses_saved(const struct mail_search_program *program)
{
	return program->uses_saved;
}

bool mail_search_program_uses_modseq(const struct mail_search_program *program)
{
	return program->uses_modseq;
}

bool mail_search_program_uses_seqset(const struct mail_search_program *program)
{
	return program->uses_seqset;
}
