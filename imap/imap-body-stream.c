/* Reading one section in CRLF form, filtered or decoded in chunks
   (imap-fetch-body.h). Every filter is a byte-at-a-time state machine, so
   a chunk may end anywhere. */
#include "imap-common.h"
#include "imap-fetch-body.h"

#include <ctype.h>
#include <strings.h>

enum hf_state { HF_LINE_START = 0, HF_NAME, HF_COPY, HF_SKIP, HF_DONE };
enum qp_state { QP_TEXT = 0, QP_CR, QP_EQ, QP_EQ_HEX, QP_EQ_WS, QP_EQ_CR };

void imap_body_stream_init(struct imap_body_stream *s, int fd, bool convert,
			   const struct imap_section *sec,
			   const struct imap_body_source *src)
{
	unsigned char prev;

	memset(s, 0, offsetof(struct imap_body_stream, name));
	s->sec = sec;
	s->src = *src;
	s->in_left = src->found ? src->virt_size : 0;
	/* lines before the first field (continuations of nothing) are no
	   listed field: only .NOT keeps them, as Dovecot does */
	s->include = src->filter == IMAP_BODY_FILTER_HEADER_FIELDS_NOT;
	mail_crlf_init(&s->crlf, fd, convert);
	s->crlf.phys_pos = src->phys_pos;
	/* an LF right after a CR of the file is not bare */
	if (src->phys_pos > 0 &&
	    pread(fd, &prev, 1, (off_t)(src->phys_pos - 1)) == 1)
		s->crlf.last_cr = prev == '\r';
}

static void out_c(struct imap_body_stream *s, unsigned char c)
{
	i_assert(s->out_len < sizeof(s->out));
	s->out[s->out_len++] = c;
}

static void out_data(struct imap_body_stream *s, const void *data, size_t size)
{
	i_assert(s->out_len + size <= sizeof(s->out));
	memcpy(s->out + s->out_len, data, size);
	s->out_len += size;
}

/* ---- HEADER.FIELDS / HEADER.FIELDS.NOT ---- */

static bool hf_name_listed(struct imap_body_stream *s)
{
	size_t len = s->name_len;

	while (len > 0 && (s->name[len - 1] == ' ' || s->name[len - 1] == '\t'))
		len--;
	for (unsigned int i = 0; i < s->sec->field_count; i++) {
		if (strlen(s->sec->fields[i]) == len &&
		    strncasecmp(s->sec->fields[i], s->name, len) == 0)
			return true;
	}
	return false;
}

/* The field name is complete (or too long to be listed): decide. */
static void hf_decide(struct imap_body_stream *s, bool can_match)
{
	bool listed = can_match && hf_name_listed(s);

	s->include = listed == (s->src.filter == IMAP_BODY_FILTER_HEADER_FIELDS);
	if (s->include)
		out_data(s, s->name, s->name_len);
	s->state = s->include ? HF_COPY : HF_SKIP;
}

static void hf_byte(struct imap_body_stream *s, unsigned char c)
{
	switch ((enum hf_state)s->state) {
	case HF_LINE_START:
		if (c == ' ' || c == '\t') {
			/* a continuation belongs to the previous field */
			s->state = s->include ? HF_COPY : HF_SKIP;
			if (s->include)
				out_c(s, c);
		} else if (c == '\r' || c == '\n') {
			s->state = HF_DONE;   /* the header's end */
		} else {
			s->name_len = 0;
			s->name[s->name_len++] = (char)c;
			s->state = HF_NAME;
		}
		return;
	case HF_NAME:
		if (c == ':') {
			hf_decide(s, true);
			if (s->include)
				out_c(s, c);
		} else if (c == '\n') {
			/* a line without a colon names no listed field: only
			   .NOT keeps it (as Dovecot does) */
			hf_decide(s, false);
			if (s->include)
				out_c(s, c);
			s->state = HF_LINE_START;
		} else if (s->name_len == IMAP_SECTION_FIELD_NAME_MAX) {
			hf_decide(s, false);
			if (s->include)
				out_c(s, c);
		} else {
			s->name[s->name_len++] = (char)c;
		}
		return;
	case HF_COPY:
	case HF_SKIP:
		if (s->state == HF_COPY)
			out_c(s, c);
		if (c == '\n')
			s->state = HF_LINE_START;
		return;
	case HF_DONE:
		return;
	}
}

/* ---- base64 ---- */


static void b64_byte(struct imap_body_stream *s, unsigned char c)
{
	int v = base64_char_value(c);

	/* line breaks, padding and junk are skipped (RFC 2045 6.8) */
	if (v < 0)
		return;
	s->b64_bits = (s->b64_bits << 6) | (uint32_t)v;
	if (++s->b64_count == 4) {
		out_c(s, (unsigned char)(s->b64_bits >> 16));
		out_c(s, (unsigned char)(s->b64_bits >> 8));
		out_c(s, (unsigned char)s->b64_bits);
		s->b64_bits = 0;
		s->b64_count = 0;
	}
}

static void b64_finish(struct imap_body_stream *s)
{
	if (s->b64_count == 2) {
		out_c(s, (unsigned char)(s->b64_bits >> 4));
	} else if (s->b64_count == 3) {
		out_c(s, (unsigned char)(s->b64_bits >> 10));
		out_c(s, (unsigned char)(s->b64_bits >> 2));
	}
}

/* ---- quoted-printable ---- */


static void qp_flush_ws(struct imap_body_stream *s)
{
	out_data(s, s->ws, s->ws_len);
	s->ws_len = 0;
}

/* Returns false when c must be looked at again in the new state. */
static bool qp_step(struct imap_body_stream *s, unsigned char c)
{
	switch ((enum qp_state)s->state) {
	case QP_TEXT:
		if (c == ' ' || c == '\t') {
			if (s->ws_len == sizeof(s->ws))
				qp_flush_ws(s);
			s->ws[s->ws_len++] = c;
			return true;
		}
		if (c == '\r') {
			s->state = QP_CR;
			return true;
		}
		if (c == '\n') {
			/* a line end drops the whitespace before it */
			s->ws_len = 0;
			out_data(s, "\r\n", 2);
			return true;
		}
		qp_flush_ws(s);
		if (c == '=')
			s->state = QP_EQ;
		else
			out_c(s, c);
		return true;
	case QP_CR:
		s->state = QP_TEXT;
		if (c == '\n') {
			s->ws_len = 0;
			out_data(s, "\r\n", 2);
			return true;
		}
		qp_flush_ws(s);
		out_c(s, '\r');
		return false;
	case QP_EQ:
		if (hex_digit_value(c) >= 0) {
			s->qp_hi = c;
			s->state = QP_EQ_HEX;
		} else if (c == '\r') {
			s->state = QP_EQ_CR;
		} else if (c == '\n') {
			s->state = QP_TEXT;      /* soft line break */
		} else if (c == ' ' || c == '\t') {
			s->state = QP_EQ_WS;
			return false;    /* QP_EQ_WS holds it */
		} else {
			out_c(s, '=');
			s->state = QP_TEXT;
			return false;
		}
		return true;
	case QP_EQ_HEX:
		s->state = QP_TEXT;
		if (hex_digit_value(c) >= 0) {
			out_c(s, (unsigned char)(hex_digit_value(s->qp_hi) * 16 +
						 hex_digit_value(c)));
			return true;
		}
		out_c(s, '=');
		out_c(s, s->qp_hi);
		return false;
	case QP_EQ_WS:
		/* "=" and white space: a soft line break if the line ends
		   here (transport padding, RFC 2045 6.7 rule 3); otherwise
		   the "=" starts no escape and stays, with the white space */
		if (c == ' ' || c == '\t') {
			if (s->ws_len == sizeof(s->ws)) {
				out_c(s, '=');
				qp_flush_ws(s);
				s->state = QP_TEXT;
				return false;
			}
			s->ws[s->ws_len++] = c;
			return true;
		}
		if (c == '\n') {
			s->ws_len = 0;
			s->state = QP_TEXT;
			return true;
		}
		if (c == '\r') {
			s->state = QP_EQ_CR;   /* the white space waits */
			return true;
		}
		out_c(s, '=');
		qp_flush_ws(s);
		s->state = QP_TEXT;
		return false;
	case QP_EQ_CR:
		s->state = QP_TEXT;
		if (c == '\n') {
			s->ws_len = 0;
			return true;
		}
		/* "=" and a bare CR: no line break, so no soft break */
		out_c(s, '=');
		qp_flush_ws(s);
		out_c(s, '\r');
		return false;
	}
	i_unreached();
}

static void qp_finish(struct imap_body_stream *s)
{
	switch ((enum qp_state)s->state) {
	case QP_CR:
		/* a bare CR is no line end: the white space before stays */
		qp_flush_ws(s);
		out_c(s, '\r');
		break;
	case QP_EQ:
	case QP_EQ_WS:
		/* the end of the data ends the last line: a soft break */
		break;
	case QP_EQ_CR:
		out_c(s, '=');
		qp_flush_ws(s);
		out_c(s, '\r');
		break;
	case QP_EQ_HEX:
		out_c(s, '=');
		out_c(s, s->qp_hi);
		break;
	default:
		break;
	}
	/* trailing whitespace at the end is dropped as at a line end */
	s->ws_len = 0;
}

/* ---- the reader ---- */

static void filter_data(struct imap_body_stream *s, const unsigned char *data,
			size_t size)
{
	for (size_t i = 0; i < size; i++) {
		switch (s->src.filter) {
		case IMAP_BODY_FILTER_NONE:
			out_c(s, data[i]);
			break;
		case IMAP_BODY_FILTER_HEADER_FIELDS:
		case IMAP_BODY_FILTER_HEADER_FIELDS_NOT:
			hf_byte(s, data[i]);
			break;
		case IMAP_BODY_FILTER_BASE64:
			b64_byte(s, data[i]);
			break;
		case IMAP_BODY_FILTER_QP:
			while (!qp_step(s, data[i])) ;
			break;
		}
	}
}

static void filter_finish(struct imap_body_stream *s)
{
	switch (s->src.filter) {
	case IMAP_BODY_FILTER_HEADER_FIELDS:
		/* the selected fields end with the blank line */
		out_data(s, "\r\n", 2);
		break;
	case IMAP_BODY_FILTER_HEADER_FIELDS_NOT:
		/* a last line cut off before its colon names no listed
		   field: kept, as a line without a colon is */
		if (s->state == HF_NAME)
			out_data(s, s->name, s->name_len);
		/* the blank line only if the header had one (Dovecot does
		   the same) */
		if (s->state == HF_DONE)
			out_data(s, "\r\n", 2);
		break;
	case IMAP_BODY_FILTER_BASE64:
		b64_finish(s);
		break;
	case IMAP_BODY_FILTER_QP:
		qp_finish(s);
		break;
	case IMAP_BODY_FILTER_NONE:
		break;
	}
	s->finished = true;
}

/* Produce more output. Returns 1, 0 at the end, -1 on error. */
static int stream_fill(struct imap_body_stream *s)
{
	unsigned char in[IMAP_BODY_STREAM_CHUNK];

	s->out_pos = s->out_len = 0;
	while (s->out_len == 0) {
		if (s->in_left == 0) {
			if (s->finished)
				return 0;
			filter_finish(s);
			continue;
		}
		ssize_t ret = mail_crlf_read(&s->crlf, in,
			(size_t)MIN(s->in_left, sizeof(in)));
		if (ret < 0)
			return -1;
		if (ret == 0) {
			/* the file is shorter than its parsed structure */
			errno = EIO;
			return -1;
		}
		s->in_left -= (uint64_t)ret;
		filter_data(s, in, (size_t)ret);
	}
	return 1;
}

/* Unfiltered: straight from the file into buf, no staging copy. */
static ssize_t stream_read_direct(struct imap_body_stream *s,
				  unsigned char *buf, size_t size)
{
	if (s->in_left == 0)
		return 0;
	ssize_t ret = mail_crlf_read(&s->crlf, buf,
				     (size_t)MIN(s->in_left, size));
	if (ret == 0) {
		/* the file is shorter than its index entry says */
		errno = EIO;
		return -1;
	}
	if (ret > 0)
		s->in_left -= (uint64_t)ret;
	return ret;
}

ssize_t imap_body_stream_read(struct imap_body_stream *s, unsigned char *buf,
			      size_t size)
{
	size_t n;

	if (s->src.filter == IMAP_BODY_FILTER_NONE &&
	    s->out_pos == s->out_len) {
		ssize_t ret = stream_read_direct(s, buf, size);
		if (ret <= 0)
			return ret;
		n = (size_t)ret;
	} else {
		if (s->out_pos == s->out_len) {
			int ret = stream_fill(s);
			if (ret <= 0)
				return ret;
		}
		n = MIN(size, s->out_len - s->out_pos);
		memcpy(buf, s->out + s->out_pos, n);
		s->out_pos += n;
	}
	if (!s->sec->binary) {
		/* a literal may not hold NUL (RFC 3501 4.3): like Dovecot,
		   send 0x80 instead; BINARY has literal8 for them */
		unsigned char *nul = buf;
		while ((nul = memchr(nul, '\0', n - (size_t)(nul - buf))) != NULL)
			*nul++ = 0x80;
	}
	return (ssize_t)n;
}

int imap_body_stream_skip(struct imap_body_stream *s, uint64_t count)
{
	unsigned char scratch[IMAP_BODY_STREAM_CHUNK];

	if (s->src.filter == IMAP_BODY_FILTER_NONE && s->out_len == 0) {
		count = MIN(count, s->in_left);
		s->in_left -= count;
		return mail_crlf_skip(&s->crlf, count);
	}
	while (count > 0) {
		ssize_t ret = imap_body_stream_read(s, scratch,
			(size_t)MIN(count, sizeof(scratch)));
		if (ret <= 0)
			return (int)ret;
		count -= (uint64_t)ret;
	}
	return 0;
}

int imap_body_stream_measure(struct imap_body_stream *s, uint64_t *size_r,
			     bool *has_nul_r)
{
	unsigned char buf[IMAP_BODY_STREAM_CHUNK];
	struct imap_body_source src = s->src;
	const struct imap_section *sec = s->sec;
	bool convert = s->crlf.convert;
	int fd = s->crlf.fd;
	ssize_t ret;

	*size_r = 0;
	*has_nul_r = false;
	if (src.filter == IMAP_BODY_FILTER_NONE && !sec->binary) {
		*size_r = s->in_left;
		return 0;
	}
	while ((ret = imap_body_stream_read(s, buf, sizeof(buf))) > 0) {
		*size_r += (uint64_t)ret;
		if (!*has_nul_r && memchr(buf, '\0', (size_t)ret) != NULL)
			*has_nul_r = true;
	}
	imap_body_stream_init(s, fd, convert, sec, &src);
	return ret < 0 ? -1 : 0;
}
