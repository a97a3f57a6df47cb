/* SEARCH evaluation (mail-search.h). Each message is judged in up to
   three passes, each only when the tree is still undecided after the
   previous one (three-valued logic: a key not evaluated yet is
   "unknown"): cheap keys from the view, then the top-level header read
   line by line up to the blank line, then the text of the body parts. */
#include "lib.h"
#include "mempool.h"
#include "mail-search-private.h"
#include "mailbox.h"
#include "mailbox-read-ahead.h"
#include "message-header.h"
#include "message-parser.h"
#include "message-date.h"
#include "rfc2047.h"
#include "rfc2231.h"
#include "mailbox-objectid.h"
#include "mail-sort-keys.h"

#include <errno.h>
#include <strings.h>
#include <unistd.h>

/* A header field longer than this is cut for matching (the MIME parser's
   own default, so both passes see the same text). */
#define SEARCH_HEADER_FIELD_MAX MESSAGE_PARSER_DEFAULT_MAX_FIELD_SIZE
/* One physical header line is kept up to this; the rest is dropped. */
#define SEARCH_HEADER_LINE_MAX SEARCH_HEADER_FIELD_MAX
/* How much of each file is read ahead when no BODY/TEXT key reads past
   the header. */
#define SEARCH_READ_AHEAD_HEADER (16 * 1024)

struct mail_search_ctx {
	struct mailbox *box;
	struct mail_search_program *program;
	time_t now;
	pool_t msg_pool;              /* per message, cleared after each */
	pool_t field_pool;            /* per header field */
	struct mail_search_text *text;
	unsigned char *chunk;         /* MAIL_SEARCH_CHUNK_SIZE */
	buffer_t line;                /* header line being assembled */
	struct message_header_parser *hparser;
	uint64_t bytes_read;
	/* THREADID keys: the messages' thread keys (created when needed) */
	struct mail_sort_keys_reader *thread_keys;
	mailbox_msg_read_callback_t *read_cb;
	void *read_context;

	/* the files of the next messages, read ahead in a cold folder */
	struct mailbox_read_ahead read_ahead;

	/* the message being judged */
	uint32_t seq;
	int fd;
	bool io_error;
	bool sent_valid;
	int64_t sent_day;
	const char *content_type, *cte;   /* top-level header */
	uint64_t body_offset;
};

struct mail_search_ctx *
mail_search_init(struct mailbox *box, struct mail_search_program *program,
		 time_t now)
{
	struct mail_search_ctx *ctx = i_malloc(sizeof(*ctx));

	ctx->box = box;
	ctx->program = program;
	ctx->now = now;
	ctx->fd = -1;
	ctx->msg_pool = pool_create("mail search message", 16 * 1024);
	ctx->field_pool = pool_create("mail search field", 16 * 1024);
	ctx->text = mail_search_text_init(program);
	ctx->chunk = i_malloc(MAIL_SEARCH_CHUNK_SIZE);
	buffer_init(&ctx->line, SEARCH_HEADER_LINE_MAX);
	ctx->hparser = message_header_parser_init(SEARCH_HEADER_FIELD_MAX);
	return ctx;
}

void mail_search_deinit(struct mail_search_ctx **_ctx)
{
	struct mail_search_ctx *ctx = *_ctx;

	*_ctx = NULL;
	i_close_fd(&ctx->fd);
	if (ctx->thread_keys != NULL)
		mail_sort_keys_reader_deinit(&ctx->thread_keys);
	message_header_parser_deinit(&ctx->hparser);
	buffer_free(&ctx->line);
	i_free(ctx->chunk);
	mail_search_text_deinit(&ctx->text);
	pool_unref(&ctx->field_pool);
	pool_unref(&ctx->msg_pool);
	i_free(ctx);
}

uint64_t mail_search_get_bytes_read(const struct mail_search_ctx *ctx)
{
	return ctx->bytes_read;
}

/* ---- the tree ---- */

static void args_reset(struct mail_search_arg *arg)
{
	for (; arg != NULL; arg = arg->next) {
		arg->result = -1;
		if (arg->subargs != NULL)
			args_reset(arg->subargs);
	}
}

static int eval_list(const struct mail_search_arg *arg);

static int eval_arg(const struct mail_search_arg *arg)
{
	int r, r2;

	switch (arg->key) {
	case MSK_SUB:
		r = eval_list(arg->subargs);
		break;
	case MSK_OR:
		r = eval_arg(arg->subargs);
		r2 = eval_arg(arg->subargs->next);
		r = r == 1 || r2 == 1 ? 1 : r == 0 && r2 == 0 ? 0 : -1;
		break;
	default:
		r = arg->result;
		break;
	}
	return r < 0 ? r : arg->not ? !r : r;
}

/* AND of the siblings: 0 wins, then unknown. */
static int eval_list(const struct mail_search_arg *arg)
{
	int result = 1;

	for (; arg != NULL; arg = arg->next) {
		int r = eval_arg(arg);
		if (r == 0)
			return 0;
		if (r < 0)
			result = -1;
	}
	return result;
}

/* Leaves of a class that are still unknown after their pass: false. */
static void args_settle(struct mail_search_arg *arg,
			enum mail_search_class class)
{
	for (; arg != NULL; arg = arg->next) {
		if (arg->subargs != NULL)
			args_settle(arg->subargs, class);
		else if (arg->result < 0 &&
			 mail_search_key_class(arg->key) == class)
			arg->result = 0;
	}
}

/* ---- cheap keys ---- */

static bool ranges_match(const struct mail_search_arg *arg, uint32_t num,
			 uint32_t star)
{
	for (unsigned int i = 0; i < arg->range_count; i++) {
		uint32_t lo = arg->ranges[i].lo, hi = arg->ranges[i].hi;
		if (lo == MAIL_SEARCH_STAR)
			lo = star;
		if (hi == MAIL_SEARCH_STAR)
			hi = star;
		if (num >= MIN(lo, hi) && num <= MAX(lo, hi))
			return true;
	}
	return false;
}

static int keyword_match(struct mail_search_ctx *ctx, const char *name)
{
	static const struct { const char *name; enum mail_flags flag; }
	system_flags[] = {
		{ "\\Answered", MAIL_ANSWERED }, { "\\Flagged", MAIL_FLAGGED },
		{ "\\Deleted", MAIL_DELETED }, { "\\Seen", MAIL_SEEN },
		{ "\\Draft", MAIL_DRAFT }, { "\\Recent", MAIL_RECENT },
	};
	const char *error;
	unsigned int idx;

	for (unsigned int i = 0; i < N_ELEMENTS(system_flags); i++) {
		if (strcasecmp(name, system_flags[i].name) == 0)
			return (mailbox_msg_flags(ctx->box, ctx->seq) &
				system_flags[i].flag) != 0;
	}
	if (mailbox_keyword_get(ctx->box, name, false, &idx, &error) <= 0)
		return 0;   /* a keyword nobody set matches nothing */
	return (mailbox_msg_keywords(ctx->box, ctx->seq) & (1U << idx)) != 0;
}

static int day_compare(int64_t msg_day, const struct mail_search_arg *arg)
{
	switch (arg->key) {
	case MSK_BEFORE:
	case MSK_SENTBEFORE:
	case MSK_SAVEDBEFORE:
		return msg_day < arg->day;
	case MSK_ON:
	case MSK_SENTON:
	case MSK_SAVEDON:
		return msg_day == arg->day;
	default:
		return msg_day >= arg->day;
	}
}

/* INTERNALDATE has no zone of its own: its day is the server's. */
static int64_t local_day(time_t t)
{
	struct tm tm;

	localtime_r(&t, &tm);
	return mail_search_civil_day(tm.tm_year + 1900, tm.tm_mon + 1,
				     tm.tm_mday);
}

/* RFC 8514 SAVEDBEFORE/ON/SINCE. A message whose save date was lost
   (it lives in the cache) is compared by its INTERNALDATE, as the RFC
   says for storage without save dates. */
static int savedate_leaf(struct mail_search_ctx *ctx,
			 const struct mail_search_arg *arg)
{
	const char *error;
	time_t date;

	if (mailbox_msg_savedate(ctx->box, ctx->seq, &date) <= 0 &&
	    mailbox_msg_internaldate(ctx->box, ctx->seq, &date, &error) < 0)
		return -1;
	return day_compare(local_day(date), arg);
}

/* RFC 8474 6: an exact, case-sensitive match. Only ids of our form can
   match (mailbox-objectid.h), so others are decided without a lookup. */
static int objectid_leaf(struct mail_search_ctx *ctx,
			 const struct mail_search_arg *arg)
{
	char id[MAILBOX_MSG_OBJECTID_LEN + 1];
	const char *error;
	int ret;

	if (arg->str_len != MAILBOX_MSG_OBJECTID_LEN ||
	    arg->str[0] != (arg->key == MSK_EMAILID ? 'M' : 'T'))
		return 0;
	if (arg->key == MSK_EMAILID)
		ret = mailbox_msg_emailid(ctx->box, ctx->seq, id, &error);
	else {
		if (ctx->thread_keys == NULL) {
			ctx->thread_keys =
				mail_sort_keys_reader_init(ctx->box, NULL, 0);
		}
		ret = mailbox_msg_threadid(ctx->thread_keys, ctx->box,
					   ctx->seq, id, &error);
	}
	if (ret <= 0)
		return -1;
	return memcmp(id, arg->str, MAILBOX_MSG_OBJECTID_LEN) == 0;
}

/* Returns 0/1, or -1 if the message is gone or unreadable. */
static int cheap_leaf(struct mail_search_ctx *ctx,
		      const struct mail_search_arg *arg)
{
	uint32_t count = mailbox_get_count(ctx->box);
	enum mail_flags flags;
	uint64_t vsize;
	time_t date;
	const char *error;

	switch (arg->key) {
	case MSK_ALL:
		return 1;
	case MSK_SEQSET:
		return ranges_match(arg, ctx->seq, count);
	case MSK_UIDSET:
		return ranges_match(arg, mailbox_msg_uid(ctx->box, ctx->seq),
				    mailbox_msg_uid(ctx->box, count));
	case MSK_FLAGS:
		flags = mailbox_msg_flags(ctx->box, ctx->seq);
		return (flags & arg->flags_set) == arg->flags_set &&
			(flags & arg->flags_unset) == 0;
	case MSK_KEYWORD:
		return keyword_match(ctx, arg->keyword);
	case MSK_MODSEQ:
		return mailbox_msg_modseq(ctx->box, ctx->seq) >= arg->number;
	case MSK_LARGER:
	case MSK_SMALLER:
		if (mailbox_msg_vsize(ctx->box, ctx->seq, &vsize, &error) < 0)
			return -1;
		return arg->key == MSK_LARGER ? vsize > arg->number :
			vsize < arg->number;
	case MSK_BEFORE:
	case MSK_ON:
	case MSK_SINCE:
	case MSK_OLDER:
	case MSK_YOUNGER:
		if (mailbox_msg_internaldate(ctx->box, ctx->seq, &date,
					     &error) < 0)
			return -1;
		if (arg->key == MSK_OLDER)
			return (int64_t)ctx->now - date > (int64_t)arg->number;
		if (arg->key == MSK_YOUNGER)
			return (int64_t)ctx->now - date <= (int64_t)arg->number;
		return day_compare(local_day(date), arg);
	case MSK_SAVEDBEFORE:
	case MSK_SAVEDON:
	case MSK_SAVEDSINCE:
		return savedate_leaf(ctx, arg);
	case MSK_SAVEDATESUPPORTED:
		return 1;
	case MSK_EMAILID:
	case MSK_THREADID:
		return objectid_leaf(ctx, arg);
	default:
		/* an empty BODY/TEXT string is in every message */
		if (mail_search_key_class(arg->key) == MSC_BODY &&
		    arg->str_len == 0)
			return 1;
		return -2;
	}
}

static int args_cheap(struct mail_search_ctx *ctx, struct mail_search_arg *arg)
{
	for (; arg != NULL; arg = arg->next) {
		if (arg->subargs != NULL) {
			if (args_cheap(ctx, arg->subargs) < 0)
				return -1;
			continue;
		}
		int r = cheap_leaf(ctx, arg);
		if (r == -1)
			return -1;
		if (r >= 0)
			arg->result = r;
	}
	return 0;
}

/* ---- reading the file ---- */

/* pread that counts (and reads ahead: mailbox-read-ahead.h); returns
   bytes (0 at EOF) or -1. */
static ssize_t search_read(struct mail_search_ctx *ctx, uint64_t offset,
			   size_t size)
{
	off_t ahead_len = ctx->program->text_leaf_count > 0 ? 0 :
		SEARCH_READ_AHEAD_HEADER;
	ssize_t ret;

	size = MIN(size, MAIL_SEARCH_CHUNK_SIZE);
	ret = mailbox_read_ahead_pread(ctx->box, &ctx->read_ahead, ctx->seq,
				       ctx->fd, ctx->chunk, size, offset,
				       ahead_len);
	if (ret < 0)
		ctx->io_error = true;
	else
		ctx->bytes_read += (uint64_t)ret;
	return ret;
}

/* ---- the top-level header ---- */

static bool field_is(const struct message_header_field *field,
		     const char *name)
{
	return strcasecmp(field->name, name) == 0;
}

/* The decoded, unfolded value (from field_pool). */
static const char *field_decode(struct mail_search_ctx *ctx,
				const struct message_header_field *field,
				size_t *len_r)
{
	char *value = (char *)rfc2047_decode(ctx->field_pool, field->value,
					     field->value_len);
	size_t j = 0;

	for (size_t i = 0; value[i] != '\0'; i++) {
		if (value[i] != '\n' && value[i] != '\r')
			value[j++] = value[i];
	}
	value[j] = '\0';
	*len_r = j;
	return value;
}

/* Whether the folded key is in text once folded. */
static bool folded_contains(const struct mail_search_arg *leaf,
			    const char *text, size_t len)
{
	buffer_t folded;
	bool found;

	buffer_init(&folded, mail_search_fold_max(len));
	mail_search_fold_utf8((const unsigned char *)text, len, &folded);
	found = memmem(folded.data, folded.used, leaf->str,
		       leaf->str_len) != NULL;
	buffer_free(&folded);
	return found;
}

/* value is the decoded header text. An address key also matches the
   address form of the raw value (addr_text, made on first use). */
static void header_leaf_match(struct mail_search_ctx *ctx,
			      struct mail_search_arg *leaf,
			      const struct message_header_field *field,
			      const char *value, size_t len,
			      const char **addr_text, size_t *addr_len)
{
	if (folded_contains(leaf, value, len)) {
		leaf->result = 1;
		return;
	}
	if (!leaf->address)
		return;
	if (*addr_text == NULL)
		*addr_text = mail_search_address_text(ctx->field_pool,
						      field->value,
						      field->value_len,
						      addr_len);
	if (folded_contains(leaf, *addr_text, *addr_len))
		leaf->result = 1;
}

static void header_remember(struct mail_search_ctx *ctx,
			    const struct message_header_field *field)
{
	time_t t;
	int tz;

	if (field_is(field, "Date") && !ctx->sent_valid &&
	    message_date_parse(field->value, field->value_len, &t, &tz) == 0) {
		t += (time_t)tz * 60;
		struct tm tm;
		gmtime_r(&t, &tm);
		ctx->sent_day = mail_search_civil_day(tm.tm_year + 1900,
						      tm.tm_mon + 1,
						      tm.tm_mday);
		ctx->sent_valid = true;
	} else if (field_is(field, "Content-Type") &&
		   ctx->content_type == NULL) {
		ctx->content_type = p_strdup(ctx->msg_pool, field->value);
	} else if (field_is(field, "Content-Transfer-Encoding") &&
		   ctx->cte == NULL) {
		ctx->cte = p_strdup(ctx->msg_pool, field->value);
	}
}

static void header_field(struct mail_search_ctx *ctx,
			 const struct message_header_field *field)
{
	const struct mail_search_program *prog = ctx->program;
	const char *value = NULL, *addr_text = NULL;
	size_t len = 0, addr_len = 0;

	header_remember(ctx, field);
	for (unsigned int i = 0; i < prog->header_leaf_count; i++) {
		struct mail_search_arg *leaf = prog->header_leaves[i];
		if (leaf->key != MSK_HEADER || leaf->result >= 0 ||
		    !field_is(field, leaf->header))
			continue;
		if (value == NULL)
			value = field_decode(ctx, field, &len);
		header_leaf_match(ctx, leaf, field, value, len, &addr_text,
				  &addr_len);
	}
	/* a BODY-only program, or TEXT already found: no decoding */
	if (prog->text_leaf_count > 0 &&
	    mail_search_text_wants_header(ctx->text)) {
		if (value == NULL)
			value = field_decode(ctx, field, &len);
		size_t name_len = strlen(field->name);
		char *line = p_malloc(ctx->field_pool, name_len + 2 + len + 1);
		memcpy(line, field->name, name_len);
		memcpy(line + name_len, ": ", 2);
		memcpy(line + name_len + 2, value, len);
		mail_search_text_match_utf8(ctx->text, line,
					    name_len + 2 + len, true);
	}
	pool_clear(ctx->field_pool);
}

/* One physical line (without LF). Returns true at the blank line. */
static bool header_line(struct mail_search_ctx *ctx, bool truncated)
{
	struct message_header_field field;
	size_t len = ctx->line.used;
	const unsigned char *p = (const unsigned char *)ctx->line.data;

	if (len > 0 && p[len - 1] == '\r' && !truncated)
		len--;
	if (len == 0 && !truncated) {
		if (message_header_parser_flush(ctx->hparser, &field))
			header_field(ctx, &field);
		return true;
	}
	if (message_header_parser_line(ctx->hparser, p, len, truncated, &field))
		header_field(ctx, &field);
	return false;
}

/* Feed a chunk; returns true when the header ended (body_offset set). */
static bool header_chunk(struct mail_search_ctx *ctx, uint64_t offset,
			 size_t size, bool *skipping)
{
	const unsigned char *p = ctx->chunk, *end = p + size;

	while (p < end) {
		const unsigned char *lf = memchr(p, '\n', (size_t)(end - p));
		size_t n = lf == NULL ? (size_t)(end - p) : (size_t)(lf - p);
		if (!*skipping && buffer_append(&ctx->line, p, n) < 0) {
			/* over-long line: keep its start, drop the rest */
			size_t room = ctx->line.max_size - ctx->line.used;
			if (buffer_append(&ctx->line, p, MIN(room, n)) < 0)
				i_unreached();
			(void)header_line(ctx, true);
			*skipping = true;
		}
		if (lf == NULL)
			break;
		bool done = !*skipping && header_line(ctx, false);
		*skipping = false;
		buffer_reset(&ctx->line);
		p = lf + 1;
		if (done) {
			ctx->body_offset = offset + (uint64_t)(p - ctx->chunk);
			return true;
		}
	}
	return false;
}

static int header_pass(struct mail_search_ctx *ctx)
{
	struct message_header_field field;
	uint64_t offset = 0;
	bool skipping = false;
	ssize_t ret;

	message_header_parser_reset(ctx->hparser);
	buffer_reset(&ctx->line);
	while ((ret = search_read(ctx, offset, MAIL_SEARCH_CHUNK_SIZE)) > 0) {
		if (header_chunk(ctx, offset, (size_t)ret, &skipping))
			return 0;
		offset += (uint64_t)ret;
	}
	if (ret < 0)
		return -1;
	/* no blank line: the whole file is header */
	if (ctx->line.used > 0 && !skipping)
		(void)header_line(ctx, false);
	if (message_header_parser_flush(ctx->hparser, &field))
		header_field(ctx, &field);
	ctx->body_offset = offset;
	return 0;
}

static void header_settle(struct mail_search_ctx *ctx)
{
	const struct mail_search_program *prog = ctx->program;

	for (unsigned int i = 0; i < prog->header_leaf_count; i++) {
		struct mail_search_arg *leaf = prog->header_leaves[i];
		if (leaf->key != MSK_HEADER)
			leaf->result = ctx->sent_valid &&
				day_compare(ctx->sent_day, leaf);
		else if (leaf->result < 0)
			leaf->result = 0;
	}
}

/* ---- body text ---- */

/* Stream [offset, offset + size) of the file through the text matcher. */
static int text_range(struct mail_search_ctx *ctx, uint64_t offset,
		      uint64_t size, const char *cte, const char *charset)
{
	ssize_t ret = 0;

	mail_search_text_begin(ctx->text, cte, charset);
	while (size > 0 && !mail_search_text_all_found(ctx->text)) {
		ret = search_read(ctx, offset, (size_t)MIN(size,
						MAIL_SEARCH_CHUNK_SIZE));
		if (ret <= 0)
			break;
		mail_search_text_feed(ctx->text, ctx->chunk, (size_t)ret);
		offset += (uint64_t)ret;
		size -= (uint64_t)ret;
	}
	mail_search_text_end(ctx->text);
	return ret < 0 ? -1 : 0;
}

static const char *content_charset(struct mail_search_ctx *ctx,
				   const char *content_type)
{
	struct mime_value mv;

	if (content_type == NULL)
		return NULL;
	rfc2231_parse(ctx->msg_pool, content_type, true, &mv);
	return mime_value_get_param(&mv, "charset");
}

/* Headers of encapsulated messages are text of the outer body. */
static void part_header_cb(struct message_part *part,
			   const struct message_header_field *field,
			   void *context)
{
	struct mail_search_ctx *ctx = context;
	size_t len;

	if (part->parent == NULL ||
	    (part->parent->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) == 0)
		return;
	const char *value = field_decode(ctx, field, &len);
	const char *line = p_strdup_printf(ctx->field_pool, "%s: %s",
					   field->name, value);
	mail_search_text_match_utf8(ctx->text, line, strlen(line), false);
	pool_clear(ctx->field_pool);
}

static int text_parts(struct mail_search_ctx *ctx,
		      const struct message_part *part)
{
	for (; part != NULL; part = part->next) {
		if (mail_search_text_all_found(ctx->text))
			return 0;
		if (part->children != NULL) {
			if (text_parts(ctx, part->children) < 0)
				return -1;
			continue;
		}
		if ((part->flags & MESSAGE_PART_FLAG_TEXT) == 0)
			continue;
		uint64_t body = part->physical_pos + part->header_size.physical;
		if (text_range(ctx, body, part->body_size.physical,
			       part->fields[MPF_CONTENT_TRANSFER_ENCODING],
			       content_charset(ctx,
					part->fields[MPF_CONTENT_TYPE])) < 0)
			return -1;
	}
	return 0;
}

/* A MIME tree: one pass for the structure, then read the text parts. */
static int body_pass_multipart(struct mail_search_ctx *ctx)
{
	struct message_parser *parser = message_parser_init(ctx->msg_pool, NULL);
	uint64_t offset = 0;
	ssize_t ret;

	message_parser_set_header_callback(parser, part_header_cb, ctx);
	while ((ret = search_read(ctx, offset, MAIL_SEARCH_CHUNK_SIZE)) > 0) {
		message_parser_feed(parser, ctx->chunk, (size_t)ret);
		offset += (uint64_t)ret;
	}
	struct message_part *root = message_parser_finish(&parser);
	if (ret < 0)
		return -1;
	return text_parts(ctx, root);
}

static int body_pass(struct mail_search_ctx *ctx)
{
	const char *type = ctx->content_type;

	while (type != NULL && (*type == ' ' || *type == '\t'))
		type++;
	if (type != NULL && (strncasecmp(type, "multipart/", 10) == 0 ||
			     strncasecmp(type, "message/", 8) == 0))
		return body_pass_multipart(ctx);
	/* a single part: its body follows the header we read; a
	   Content-Type without a '/' is invalid and means text/plain */
	if (type != NULL && strncasecmp(type, "text/", 5) != 0 &&
	    strchr(type, '/') != NULL)
		return 0;   /* not text: nothing to match */
	return text_range(ctx, ctx->body_offset, UINT64_MAX, ctx->cte,
			  content_charset(ctx, type));
}

/* ---- per message ---- */

static int match_file(struct mail_search_ctx *ctx, const char **error_r)
{
	struct mail_search_program *prog = ctx->program;
	int r;

	ctx->fd = mailbox_msg_open(ctx->box, ctx->seq, error_r);
	if (ctx->fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (header_pass(ctx) < 0)
		goto io_error;
	if (ctx->read_cb != NULL)
		ctx->read_cb(ctx->box, ctx->seq, ctx->fd, ctx->read_context);
	header_settle(ctx);
	if ((r = eval_list(prog->args)) >= 0)
		return r;
	if (body_pass(ctx) < 0)
		goto io_error;
	args_settle(prog->args, MSC_BODY);
	r = eval_list(prog->args);
	i_assert(r >= 0);
	return r;
io_error:
	*error_r = p_strdup_printf(ctx->msg_pool, "read(message %u): %s",
				   ctx->seq, strerror(errno));
	return -1;
}

void mail_search_set_read_callback(struct mail_search_ctx *ctx,
				   mailbox_msg_read_callback_t *cb,
				   void *context)
{
	ctx->read_cb = cb;
	ctx->read_context = context;
}

int mail_search_match(struct mail_search_ctx *ctx, uint32_t seq,
		      const char **error_r)
{
	struct mail_search_program *prog = ctx->program;
	int r;

	i_assert(seq >= 1 && seq <= mailbox_get_count(ctx->box));
	ctx->seq = seq;
	if (mailbox_msg_is_expunged(ctx->box, seq))
		return 0;
	pool_clear(ctx->msg_pool);
	ctx->sent_valid = false;
	ctx->content_type = ctx->cte = NULL;
	ctx->body_offset = 0;
	ctx->io_error = false;
	args_reset(prog->args);
	if (args_cheap(ctx, prog->args) < 0)
		return 0;   /* vanished while we looked */
	if ((r = eval_list(prog->args)) >= 0)
		return r;
	r = match_file(ctx, error_r);
	i_close_fd(&ctx->fd);
	return r;
}

/* The UID runs of arg's sequence ranges in box: counted (ranges NULL),
   or written. */
static unsigned int seqs_to_uid_runs(const struct mail_search_arg *arg,
				     struct mailbox *box,
				     struct mail_search_range *ranges)
{
	uint32_t count = mailbox_get_count(box);
	unsigned int n = 0;

	for (unsigned int i = 0; i < arg->range_count; i++) {
		uint32_t lo = arg->ranges[i].lo, hi = arg->ranges[i].hi;
		if (lo == MAIL_SEARCH_STAR)
			lo = count;
		if (hi == MAIL_SEARCH_STAR)
			hi = count;
		uint32_t first = MAX(MIN(lo, hi), 1), last = MIN(MAX(lo, hi),
								   count);
		for (uint32_t seq = first; seq != 0 && seq <= last; seq++) {
			uint32_t uid = mailbox_msg_uid(box, seq);
			if (n > 0 && ranges != NULL &&
			    ranges[n - 1].hi + 1 == uid) {
				ranges[n - 1].hi = uid;
				continue;
			}
			if (n > 0 && ranges == NULL && seq > first) {
				/* counting: consecutive UIDs of consecutive
				   messages stay one run */
				if (mailbox_msg_uid(box, seq - 1) + 1 == uid)
					continue;
			}
			if (ranges != NULL)
				ranges[n].lo = ranges[n].hi = uid;
			n++;
		}
	}
	return n;
}

static void args_seqs_to_uids(pool_t pool, struct mail_search_arg *arg,
			      struct mailbox *box)
{
	for (; arg != NULL; arg = arg->next) {
		if (arg->key == MSK_SUB || arg->key == MSK_OR) {
			args_seqs_to_uids(pool, arg->subargs, box);
			continue;
		}
		if (arg->key != MSK_SEQSET)
			continue;
		unsigned int n = seqs_to_uid_runs(arg, box, NULL);
		struct mail_search_range *ranges = n == 0 ? NULL :
			p_malloc(pool, i_mul_size(n, sizeof(*ranges)));
		unsigned int written = seqs_to_uid_runs(arg, box, ranges);
		i_assert(written <= n);
		arg->ranges = ranges;
		arg->range_count = written;
		arg->key = MSK_UIDSET;
	}
}

void mail_search_program_seqs_to_uids(struct mail_search_program *program,
				      struct mailbox *box)
{
	if (!program->uses_seqset)
		return;
	args_seqs_to_uids(program->pool, program->args, box);
	program->uses_seqset = false;
}
