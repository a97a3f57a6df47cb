/* LF -> CRLF reading of message files (mail-crlf.h). */
#include "lib.h"
#include "mail-crlf.h"

void mail_crlf_init(struct mail_crlf *r, int fd, bool convert)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->convert = convert;
}

static ssize_t crlf_pread(int fd, void *buf, size_t size, uint64_t pos)
{
	ssize_t ret;

	do {
		ret = pread(fd, buf, size, (off_t)pos);
	} while (ret < 0 && errno == EINTR);
	return ret;
}

/* Copy runs between LFs with memcpy: messages are mostly long lines, and
   a byte loop here was the biggest cost of FETCH BODY[]. */
static ssize_t crlf_convert(struct mail_crlf *r, unsigned char *buf,
			    size_t size, size_t n)
{
	unsigned char in[MAIL_CRLF_CHUNK];
	ssize_t got = crlf_pread(r->fd, in, MIN(size - n, sizeof(in)),
				 r->phys_pos);
	size_t i = 0, len;

	if (got < 0)
		return -1;
	len = (size_t)got;
	while (i < len && n < size) {
		const unsigned char *lf = memchr(in + i, '\n', len - i);
		size_t run = (lf == NULL ? len : (size_t)(lf - in)) - i;

		run = MIN(run, size - n);
		if (run > 0) {
			memcpy(buf + n, in + i, run);
			n += run;
			i += run;
			r->last_cr = in[i - 1] == '\r';
		}
		if (i == len || n == size)
			break;
		/* in[i] is an LF */
		if (!r->last_cr) {
			buf[n++] = '\r';
			if (n == size) {
				/* the LF goes out with the next read */
				r->pending_lf = true;
				i++;
				break;
			}
		}
		buf[n++] = '\n';
		r->last_cr = false;
		i++;
	}
	r->phys_pos += i;
	return (ssize_t)n;
}

ssize_t mail_crlf_read(struct mail_crlf *r, unsigned char *buf, size_t size)
{
	size_t n = 0;

	if (size == 0)
		return 0;
	if (r->pending_lf) {
		buf[n++] = '\n';
		r->pending_lf = false;
		r->last_cr = false;
		if (n == size)
			return (ssize_t)n;
	}
	if (r->convert)
		return crlf_convert(r, buf, size, n);
	ssize_t ret = crlf_pread(r->fd, buf + n, size - n, r->phys_pos);
	if (ret < 0)
		return -1;
	r->phys_pos += (uint64_t)ret;
	return (ssize_t)n + ret;
}

int mail_crlf_skip(struct mail_crlf *r, uint64_t count)
{
	unsigned char scratch[MAIL_CRLF_CHUNK];

	if (!r->convert) {
		r->phys_pos += count;
		return 0;
	}
	while (count > 0) {
		ssize_t ret = mail_crlf_read(r, scratch,
					     (size_t)MIN(count, sizeof(scratch)));
		if (ret < 0)
			return -1;
		if (ret == 0)
			break;
		count -= (uint64_t)ret;
	}
	return 0;
}
