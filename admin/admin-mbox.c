/* mboxrd and mboxcl2, read and written one message at a time
   (admin-mbox.h). */
#include "admin-mbox.h"
#include "admin-imap.h"
#include "strfuncs.h"

#include <strings.h>

static const char *const admin_mbox_months[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
};

/* Header fields that carry mbox state, not the message: dropped on
   reading (their flags are taken) and replaced on writing. */
static const char *const admin_mbox_state_fields[] = {
	"Status", "X-Status", "X-Keywords", "X-UID", "X-IMAP", "X-IMAPbase",
	NULL
};

struct admin_mbox_reader {
	int fd;
	/* the file from the current message on: at most one message, its
	   From_ line and a read chunk */
	buffer_t win;
	bool eof;
	size_t max_message;
	uint64_t offset;
	enum admin_mbox_format format;
	char error[256];
};

struct admin_mbox_reader *admin_mbox_reader_init(int fd, size_t max_message)
{
	struct admin_mbox_reader *r = i_malloc(sizeof(*r));

	r->fd = fd;
	r->max_message = max_message;
	buffer_init(&r->win, max_message + ADMIN_MBOX_LINE_MAX + ADMIN_MBOX_CHUNK);
	return r;
}

void admin_mbox_reader_deinit(struct admin_mbox_reader **_r)
{
	struct admin_mbox_reader *r = *_r;

	*_r = NULL;
	buffer_free(&r->win);
	free(r);
}

enum admin_mbox_format admin_mbox_reader_format(struct admin_mbox_reader *r)
{
	return r->format;
}

uint64_t admin_mbox_reader_offset(struct admin_mbox_reader *r)
{
	return r->offset;
}

/* 1 read some, 0 at the end of the file or with the window full, -1. */
static int mbox_fill(struct admin_mbox_reader *r)
{
	if (r->eof)
		return 0;
	size_t room = MIN((size_t)ADMIN_MBOX_CHUNK, r->win.max_size - r->win.used);
	char *dest = room == 0 ? NULL : buffer_reserve(&r->win, room);
	if (dest == NULL)
		return 0;
	ssize_t n;
	do {
		n = read(r->fd, dest, room);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (n == 0) {
		r->eof = true;
		return 0;
	}
	buffer_commit(&r->win, (size_t)n);
	return 1;
}

/* At least n bytes in the window if the file has them; -1 read error. */
static int mbox_ensure(struct admin_mbox_reader *r, size_t n)
{
	while (r->win.used < n) {
		int ret = mbox_fill(r);
		if (ret <= 0)
			return ret;
	}
	return 1;
}

/* The '\n' ending the line at pos: 1 and *end_r; 0 at the end of the
   file (*end_r = the end); -1 read error; -2 the window is full. */
static int mbox_line_end(struct admin_mbox_reader *r, size_t pos,
			 size_t *end_r)
{
	size_t scan = pos;

	for (;;) {
		const char *nl = scan >= r->win.used ? NULL :
			memchr(r->win.data + scan, '\n', r->win.used - scan);
		if (nl != NULL) {
			*end_r = (size_t)(nl - r->win.data);
			return 1;
		}
		scan = r->win.used;
		int ret = mbox_fill(r);
		if (ret < 0)
			return -1;
		if (ret == 0) {
			*end_r = r->win.used;
			return r->eof ? 0 : -2;
		}
	}
}

static bool mbox_is_from(const char *line, size_t len)
{
	return len >= 5 && memcmp(line, "From ", 5) == 0;
}

/* ^>+From : an mboxrd-quoted From_ line. */
static bool mbox_is_quoted_from(const char *line, size_t len)
{
	size_t i = 0;

	while (i < len && line[i] == '>')
		i++;
	return i > 0 && mbox_is_from(line + i, len - i);
}

/* "Name:" at the start of line (case-insensitive); *value_r after it. */
static bool mbox_field_is(const char *line, size_t len, const char *name,
			  const char **value_r)
{
	size_t n = strlen(name);

	if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
		return false;
	*value_r = line + n + 1;
	return true;
}

static bool mbox_keyword_valid(const char *kw, size_t len)
{
	if (len == 0 || len > 255 || kw[0] == '\\')
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)kw[i];
		if (c <= 0x20 || c >= 0x7f || strchr("(){%*\"\\]", c) != NULL)
			return false;
	}
	return true;
}

struct mbox_flags {
	bool seen, answered, flagged, draft, deleted;
	char keywords[ADMIN_MBOX_FLAGS_MAX / 2];
};

static void mbox_add_keywords(struct mbox_flags *fl, const char *p,
			      const char *end)
{
	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ',' ||
				   *p == '\r'))
			p++;
		const char *start = p;
		while (p < end && *p != ' ' && *p != '\t' && *p != ',' &&
		       *p != '\r')
			p++;
		size_t len = (size_t)(p - start), used = strlen(fl->keywords);
		if (!mbox_keyword_valid(start, len) ||
		    used + len + 2 > sizeof(fl->keywords))
			continue;
		if (used > 0)
			fl->keywords[used++] = ' ';
		memcpy(fl->keywords + used, start, len);
		fl->keywords[used + len] = '\0';
	}
}

static void mbox_parse_state(struct mbox_flags *fl, unsigned int field,
			     const char *p, const char *end)
{
	const char *name = admin_mbox_state_fields[field];

	if (strcmp(name, "X-Keywords") == 0) {
		mbox_add_keywords(fl, p, end);
		return;
	}
	for (; p < end; p++) {
		if (strcmp(name, "Status") == 0 && *p == 'R')
			fl->seen = true;
		else if (strcmp(name, "X-Status") == 0) {
			if (*p == 'A') fl->answered = true;
			else if (*p == 'F') fl->flagged = true;
			else if (*p == 'T') fl->draft = true;
			else if (*p == 'D') fl->deleted = true;
		}
	}
}

/* The index of the state field line starts, or -1 (a Content-Length
   counts as one when drop_cl: index of the NULL). */
static int mbox_state_field(const char *line, size_t len, bool drop_cl,
			    const char **value_r)
{
	for (int i = 0; admin_mbox_state_fields[i] != NULL; i++) {
		if (mbox_field_is(line, len, admin_mbox_state_fields[i], value_r))
			return i;
	}
	if (drop_cl && mbox_field_is(line, len, "Content-Length", value_r))
		return (int)N_ELEMENTS(admin_mbox_state_fields) - 1;
	return -1;
}

/* Lines of [p, end) to out with CRLF ends; mboxrd-quoted From_ lines
   lose one '>' when unquote. -1 when out is full. */
static int mbox_copy_lines(buffer_t *out, const char *p, const char *end,
			   bool unquote)
{
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl == NULL ? end : nl;
		size_t len = (size_t)(line_end - p);
		if (len > 0 && p[len - 1] == '\r')
			len--;
		const char *start = p;
		if (unquote && mbox_is_quoted_from(start, len)) {
			start++;
			len--;
		}
		if (buffer_append(out, start, len) < 0 ||
		    (nl != NULL && buffer_append(out, "\r\n", 2) < 0))
			return -1;
		p = nl == NULL ? end : nl + 1;
	}
	return 0;
}

/* The header lines of [p, end) without the state fields (their flags go
   to fl), CRLF ends. */
static int mbox_copy_header(buffer_t *out, const char *p, const char *end,
			    bool drop_cl, struct mbox_flags *fl)
{
	int dropping = -1;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl == NULL ? end : nl;
		size_t len = (size_t)(line_end - p);
		const char *value;
		bool continued = len > 0 && (p[0] == ' ' || p[0] == '\t');
		if (!continued)
			dropping = mbox_state_field(p, len, drop_cl, &value);
		else
			value = p;
		if (dropping >= 0 && admin_mbox_state_fields[dropping] != NULL)
			mbox_parse_state(fl, (unsigned int)dropping, value, line_end);
		if (dropping < 0 &&
		    mbox_copy_lines(out, p, nl == NULL ? end : nl + 1, false) < 0)
			return -1;
		p = nl == NULL ? end : nl + 1;
	}
	return 0;
}

static void mbox_flags_string(const struct mbox_flags *fl, char *buf,
			      size_t size)
{
	snprintf(buf, size, "%s%s%s%s%s%s",
		 fl->seen ? "\\Seen " : "", fl->answered ? "\\Answered " : "",
		 fl->flagged ? "\\Flagged " : "", fl->draft ? "\\Draft " : "",
		 fl->deleted ? "\\Deleted " : "", fl->keywords);
	size_t len = strlen(buf);
	if (len > 0 && buf[len - 1] == ' ')
		buf[len - 1] = '\0';
}

/* "From sender Wed Jan  1 10:00:00 2020" to IMAP's date-time (UTC). */
static void mbox_from_date(const char *line, size_t len, char *date,
			   size_t size)
{
	char copy[256], wday[4], mon[4];
	int d, H, M, S, Y;

	date[0] = '\0';
	if (len >= sizeof(copy))
		len = sizeof(copy) - 1;
	memcpy(copy, line, len);
	copy[len] = '\0';
	const char *p = copy + 5;
	while (*p == ' ')
		p++;
	p += strcspn(p, " ");     /* the sender */
	if (sscanf(p, " %3s %3s %d %d:%d:%d %d", wday, mon, &d, &H, &M, &S,
		   &Y) != 7 || d < 1 || d > 31 || H > 23 || M > 59 || S > 60 ||
	    H < 0 || M < 0 || S < 0 || Y < 1970 || Y > 9999)
		return;
	for (unsigned int i = 0; i < N_ELEMENTS(admin_mbox_months); i++) {
		if (strcasecmp(mon, admin_mbox_months[i]) == 0) {
			snprintf(date, size, "%02d-%s-%04d %02d:%02d:%02d +0000",
				 d, admin_mbox_months[i], Y, H, M, S);
			return;
		}
	}
}

/* Whether a Content-Length of cl after body_start ends the message:
   the end of the file or a From_ line follows. */
static bool mbox_cl_fits(struct admin_mbox_reader *r, size_t body_start,
			 uint64_t cl)
{
	if (cl > r->max_message)
		return false;
	size_t end = body_start + (size_t)cl;
	if (mbox_ensure(r, end + 7) < 0 || r->win.used < end)
		return false;
	const char *p = r->win.data + end;
	size_t left = r->win.used - end;
	while (left > 0 && (*p == '\n' || *p == '\r')) {
		p++;
		left--;
	}
	return (left == 0 && r->eof) || mbox_is_from(p, left);
}

static int mbox_fail(struct admin_mbox_reader *r, const char **error_r,
		     const char *what)
{
	snprintf(r->error, sizeof(r->error), "at byte %llu: %s",
		 (unsigned long long)r->offset, what);
	*error_r = r->error;
	return -1;
}

static const char *mbox_line_error(int ret)
{
	return ret == -1 ? "read error" :
		"message larger than the limit (imap_max_append_size)";
}

/* Past the empty lines before a message; 0 at the end of the file. */
static int mbox_skip_blank(struct admin_mbox_reader *r)
{
	for (;;) {
		int ret = mbox_ensure(r, 2);
		if (ret < 0 || r->win.used == 0)
			return ret;
		size_t n = r->win.data[0] == '\n' ? 1 :
			(r->win.used >= 2 && r->win.data[0] == '\r' &&
			 r->win.data[1] == '\n') ? 2 : 0;
		if (n == 0)
			return 1;
		buffer_delete_head(&r->win, n);
		r->offset += n;
	}
}

struct mbox_layout {
	size_t hdr_start, hdr_end, body_start, body_end, next;
	bool have_blank, have_cl;
	uint64_t cl;
};

/* The header from hdr_start: its end, the body's start, Content-Length. */
static int mbox_scan_header(struct admin_mbox_reader *r,
			    struct mbox_layout *l)
{
	size_t pos = l->hdr_start, end;
	const char *value;

	for (;;) {
		int ret = mbox_line_end(r, pos, &end);
		if (ret < 0)
			return ret;
		const char *line = r->win.data + pos;
		size_t len = end - pos;
		if (len > 0 && line[len - 1] == '\r')
			len--;
		if ((ret == 0 && end == pos) || mbox_is_from(line, len)) {
			/* no empty line: the message is its header */
			l->hdr_end = l->body_start = pos;
			return 0;
		}
		if (len == 0) {
			l->hdr_end = pos;
			l->body_start = end + 1;
			l->have_blank = true;
			return 0;
		}
		if (mbox_field_is(line, len, "Content-Length", &value)) {
			char num[24];
			size_t n = MIN(len - (size_t)(value - line), sizeof(num) - 1);
			memcpy(num, value, n);
			num[n] = '\0';
			char *num_end;
			unsigned long long v = strtoull(num, &num_end, 10);
			l->have_cl = num_end != num;
			l->cl = v;
		}
		if (ret == 0) {
			l->hdr_end = l->body_start = end;
			return 0;
		}
		pos = end + 1;
	}
}

/* mboxrd: the body ends before the next From_ line (less the empty
   line the writer put there) or at the end of the file. */
static int mbox_scan_body_rd(struct admin_mbox_reader *r, struct mbox_layout *l)
{
	size_t pos = l->body_start, end;

	for (;;) {
		int ret = mbox_line_end(r, pos, &end);
		if (ret < 0)
			return ret;
		if (ret == 1 && mbox_is_from(r->win.data + pos, end - pos))
			break;
		if (ret == 0) {
			pos = end;
			break;
		}
		pos = end + 1;
	}
	l->next = pos;
	l->body_end = pos;
	const char *d = r->win.data;
	/* the separator: one empty line ("\n" or "\r\n") */
	if (pos > l->body_start && d[pos - 1] == '\n') {
		size_t nl = pos - 1;
		if (nl > l->body_start && d[nl - 1] == '\r')
			nl--;
		if (nl == l->body_start || d[nl - 1] == '\n')
			l->body_end = nl;
	}
	return 0;
}

int admin_mbox_read(struct admin_mbox_reader *r, buffer_t *msg,
		    struct admin_mbox_meta *meta_r, const char **error_r)
{
	struct mbox_layout l;
	struct mbox_flags fl;
	size_t from_end;

	buffer_reset(msg);
	memset(meta_r, 0, sizeof(*meta_r));
	memset(&l, 0, sizeof(l));
	memset(&fl, 0, sizeof(fl));
	int ret = mbox_skip_blank(r);
	if (ret < 0)
		return mbox_fail(r, error_r, "read error");
	if (ret == 0)
		return 0;
	if (mbox_ensure(r, 5) < 0 || !mbox_is_from(r->win.data, r->win.used))
		return mbox_fail(r, error_r, "no From_ line: not an mbox file");
	ret = mbox_line_end(r, 0, &from_end);
	if (ret < 0 || from_end > ADMIN_MBOX_LINE_MAX)
		return mbox_fail(r, error_r, "From_ line too long");
	mbox_from_date(r->win.data, from_end, meta_r->date, sizeof(meta_r->date));
	l.hdr_start = from_end + (ret == 1 ? 1 : 0);
	if ((ret = mbox_scan_header(r, &l)) < 0)
		return mbox_fail(r, error_r, mbox_line_error(ret));
	if (r->format == ADMIN_MBOX_UNKNOWN) {
		r->format = l.have_blank && l.have_cl &&
			mbox_cl_fits(r, l.body_start, l.cl) ?
			ADMIN_MBOX_CL2 : ADMIN_MBOX_RD;
	}
	if (r->format == ADMIN_MBOX_CL2 && l.have_blank && l.have_cl &&
	    l.cl <= r->max_message) {
		l.body_end = l.next = l.body_start + (size_t)l.cl;
		if (mbox_ensure(r, l.body_end) < 0 || r->win.used < l.body_end)
			return mbox_fail(r, error_r, "Content-Length beyond the "
					 "end of the file");
	} else if (!l.have_blank) {
		l.body_end = l.next = l.body_start;
	} else if ((ret = mbox_scan_body_rd(r, &l)) < 0) {
		return mbox_fail(r, error_r, mbox_line_error(ret));
	}
	bool cl2 = r->format == ADMIN_MBOX_CL2;
	const char *d = r->win.data;
	if (mbox_copy_header(msg, d + l.hdr_start, d + l.hdr_end, cl2, &fl) < 0 ||
	    (l.have_blank && buffer_append(msg, "\r\n", 2) < 0) ||
	    mbox_copy_lines(msg, d + l.body_start, d + l.body_end, !cl2) < 0)
		return mbox_fail(r, error_r, mbox_line_error(-2));
	mbox_flags_string(&fl, meta_r->flags, sizeof(meta_r->flags));
	buffer_delete_head(&r->win, l.next);
	r->offset += l.next;
	return 1;
}

/* ---- writing ---- */

static void mbox_write_line(FILE *f, const char *p, size_t len, bool quote)
{
	if (len > 0 && p[len - 1] == '\r')
		len--;
	if (quote && (mbox_is_from(p, len) || mbox_is_quoted_from(p, len)))
		fputc('>', f);
	fwrite(p, 1, len, f);
	fputc('\n', f);
}

/* The body's bytes as written (LF ends, a final newline). */
static uint64_t mbox_body_length(const char *p, const char *end)
{
	uint64_t n = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl == NULL ? end : nl) - p);
		if (len > 0 && p[len - 1] == '\r')
			len--;
		n += len + 1;
		p = nl == NULL ? end : nl + 1;
	}
	return n;
}

static void mbox_write_state(FILE *f, const char *flags)
{
	char xstatus[8] = "", keywords[ADMIN_MBOX_FLAGS_MAX] = "";
	bool seen = false, recent = false;
	const char *p = flags;

	while (*p != '\0') {
		while (*p == ' ')
			p++;
		size_t len = strcspn(p, " ");
		if (len == 0)
			break;
		if (len == 5 && strncasecmp(p, "\\Seen", 5) == 0) seen = true;
		else if (len == 7 && strncasecmp(p, "\\Recent", 7) == 0) recent = true;
		else if (len == 9 && strncasecmp(p, "\\Answered", 9) == 0) strcat(xstatus, "A");
		else if (len == 8 && strncasecmp(p, "\\Flagged", 8) == 0) strcat(xstatus, "F");
		else if (len == 6 && strncasecmp(p, "\\Draft", 6) == 0) strcat(xstatus, "T");
		else if (len == 8 && strncasecmp(p, "\\Deleted", 8) == 0) strcat(xstatus, "D");
		else if (p[0] != '\\' &&
			 strlen(keywords) + len + 2 < sizeof(keywords)) {
			if (keywords[0] != '\0')
				strcat(keywords, " ");
			strncat(keywords, p, len);
		}
		p += len;
	}
	if (seen || !recent)
		fprintf(f, "Status: %s%s\n", seen ? "R" : "", recent ? "" : "O");
	if (xstatus[0] != '\0')
		fprintf(f, "X-Status: %s\n", xstatus);
	if (keywords[0] != '\0')
		fprintf(f, "X-Keywords: %s\n", keywords);
}

int admin_mbox_write(FILE *f, enum admin_mbox_format format,
		     time_t internaldate, const char *flags,
		     const void *msg, size_t size)
{
	const char *p = msg, *end = p + size, *value;
	bool rd = format != ADMIN_MBOX_CL2, dropping = false;
	struct tm tm;
	char date[64];

	if (gmtime_r(&internaldate, &tm) == NULL ||
	    strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", &tm) == 0)
		snprintf(date, sizeof(date), "Thu Jan  1 00:00:00 1970");
	fprintf(f, "From MAILER-DAEMON %s\n", date);
	/* the header, less the old state fields */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl == NULL ? end : nl) - p);
		size_t text_len = len > 0 && p[len - 1] == '\r' ? len - 1 : len;
		const char *next = nl == NULL ? end : nl + 1;
		if (text_len == 0) {
			p = next;
			break;
		}
		if (p[0] != ' ' && p[0] != '\t')
			dropping = mbox_state_field(p, text_len, !rd, &value) >= 0;
		if (!dropping)
			mbox_write_line(f, p, len, rd);
		p = next;
	}
	mbox_write_state(f, flags);
	if (!rd)
		fprintf(f, "Content-Length: %llu\n",
			(unsigned long long)mbox_body_length(p, end));
	fputc('\n', f);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl == NULL ? end : nl) - p);
		mbox_write_line(f, p, len, rd);
		p = nl == NULL ? end : nl + 1;
	}
	fputc('\n', f);
	return ferror(f) ? -1 : 0;
}

time_t admin_mbox_imap_date_parse(const char *str)
{
	char mon[4], sign;
	int d, Y, H, M, S, zh, zm;
	struct tm tm;

	if (sscanf(str, " %d-%3s-%d %d:%d:%d %c%2d%2d", &d, mon, &Y, &H, &M,
		   &S, &sign, &zh, &zm) != 9 || (sign != '+' && sign != '-'))
		return (time_t)-1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_mon = -1;
	for (unsigned int i = 0; i < N_ELEMENTS(admin_mbox_months); i++) {
		if (strcasecmp(mon, admin_mbox_months[i]) == 0)
			tm.tm_mon = (int)i;
	}
	if (tm.tm_mon < 0 || d < 1 || d > 31 || Y < 1900 || H < 0 || H > 23 ||
	    M < 0 || M > 59 || S < 0 || S > 60)
		return (time_t)-1;
	tm.tm_mday = d;
	tm.tm_year = Y - 1900;
	tm.tm_hour = H;
	tm.tm_min = M;
	tm.tm_sec = S;
	time_t t = timegm(&tm);
	int offset = (zh * 60 + zm) * 60;
	return sign == '+' ? t - offset : t + offset;
}

void admin_export_resp_parse(pool_t pool, const char *resp, size_t len,
			     struct admin_export_resp *r_r)
{
	static const char *const keys[] = {
		"FLAGS", "INTERNALDATE", "BODY[]", "UID"
	};
	const char *pos = resp, *end = resp + len;
	struct admin_imap_value seq, word, list;
	struct admin_imap_value values[N_ELEMENTS(keys)];
	const struct admin_imap_value *flags = &values[0], *date = &values[1];
	const struct admin_imap_value *body = &values[2], *uid = &values[3];
	const char *p;
	unsigned int num;

	memset(r_r, 0, sizeof(*r_r));
	const char *head = p_strndup(pool, resp, MIN(len, (size_t)64));
	if (str_begins(head, "OK [UIDNEXT ", &p) &&
	    str_to_uint(p_strndup(pool, p, strspn(p, "0123456789")), &num) == 0) {
		r_r->has_uidnext = true;
		r_r->uidnext = num;
		return;
	}
	if (str_begins(head, "OK [UIDVALIDITY ", &p) &&
	    str_to_uint(p_strndup(pool, p, strspn(p, "0123456789")), &num) == 0) {
		r_r->has_uidvalidity = true;
		r_r->uidvalidity = num;
		return;
	}
	admin_imap_value_next(pool, &pos, end, &seq);
	admin_imap_value_next(pool, &pos, end, &word);
	if (word.type == ADMIN_IMAP_VALUE_ATOM &&
	    strcasecmp(word.data, "EXISTS") == 0 &&
	    str_to_uint(seq.data, &num) == 0) {
		r_r->has_exists = true;
		r_r->exists = num;
	}
	if (word.type != ADMIN_IMAP_VALUE_ATOM ||
	    strcasecmp(word.data, "FETCH") != 0)
		return;
	admin_imap_value_next(pool, &pos, end, &list);
	memset(values, 0, sizeof(values));   /* ADMIN_IMAP_VALUE_END */
	admin_imap_list_pairs(pool, &list, keys, N_ELEMENTS(keys), values);
	if (body->type != ADMIN_IMAP_VALUE_STRING)
		return;
	time_t t = date->type == ADMIN_IMAP_VALUE_STRING ?
		admin_mbox_imap_date_parse(date->data) : (time_t)-1;
	r_r->message = true;
	if (uid->type != ADMIN_IMAP_VALUE_ATOM ||
	    str_to_uint(uid->data, &r_r->uid) < 0)
		r_r->uid = 0;
	r_r->internaldate = t == (time_t)-1 ? 0 : t;
	r_r->flags = flags->type == ADMIN_IMAP_VALUE_LIST ?
		p_strndup(pool, flags->data, flags->size) : "";
	r_r->body = body->data;
	r_r->body_size = body->size;
}
