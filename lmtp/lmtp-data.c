/* The message of a transaction in a memfd (lmtp-data.h). */
#include "lib.h"
#include "lmtp-data.h"

#include <fcntl.h>
#include <sys/mman.h>

enum data_state {
	DATA_LINE_START = 0,
	DATA_MID_LINE,
	DATA_DOT,       /* a '.' began the line */
	DATA_DOT_CR,    /* ".\r" began the line */
	DATA_DONE,
};

struct lmtp_data {
	int fd;
	uint64_t limit, size;
	enum data_state state;
	bool too_big, failed;
	int failed_errno;
	size_t used;
	unsigned char buf[LMTP_DATA_BUFFER_SIZE];
};

struct lmtp_data *lmtp_data_create(uint64_t limit)
{
	int fd = memfd_create("lmtp-message", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return NULL;
	struct lmtp_data *data = i_malloc(sizeof(*data));
	data->fd = fd;
	data->limit = limit;
	return data;
}

void lmtp_data_destroy(struct lmtp_data **_data)
{
	struct lmtp_data *data = *_data;

	if (data == NULL)
		return;
	*_data = NULL;
	i_close_fd(&data->fd);
	i_free(data);
}

static void data_flush(struct lmtp_data *data)
{
	size_t pos = 0;

	while (pos < data->used && !data->failed) {
		ssize_t ret = write(data->fd, data->buf + pos, data->used - pos);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0) {
			data->failed = true;
			data->failed_errno = ret < 0 ? errno : EIO;
			break;
		}
		pos += (size_t)ret;
	}
	data->used = 0;
}

/* size bytes of message; past the limit they are only counted. */
static void data_put(struct lmtp_data *data, const unsigned char *p,
		     size_t size)
{
	data->size += size;
	if (data->limit != 0 && data->size > data->limit)
		data->too_big = true;
	while (size > 0 && !data->too_big && !data->failed) {
		if (data->used == sizeof(data->buf))
			data_flush(data);
		size_t n = MIN(size, sizeof(data->buf) - data->used);
		memcpy(data->buf + data->used, p, n);
		data->used += n;
		p += n;
		size -= n;
	}
}

size_t lmtp_data_feed_dotted(struct lmtp_data *data, const void *bytes,
			     size_t size)
{
	static const unsigned char cr = '\r';
	const unsigned char *p = bytes;
	size_t i = 0;

	while (i < size && data->state != DATA_DONE) {
		unsigned char c = p[i];
		switch (data->state) {
		case DATA_LINE_START:
			if (c == '.') {
				data->state = DATA_DOT;
				i++;
				break;
			}
			data->state = DATA_MID_LINE;
			break;
		case DATA_MID_LINE: {
			/* the rest of the line in one piece */
			const unsigned char *lf = memchr(p + i, '\n', size - i);
			size_t n = lf == NULL ? size - i : (size_t)(lf - (p + i)) + 1;
			data_put(data, p + i, n);
			i += n;
			if (lf != NULL)
				data->state = DATA_LINE_START;
			break;
		}
		case DATA_DOT:
			/* a leading dot is dropped (transparency, RFC 5321
			   4.5.2); alone on its line it ends the data */
			if (c == '\r') {
				data->state = DATA_DOT_CR;
				i++;
			} else if (c == '\n') {
				data->state = DATA_DONE;
				i++;
			} else {
				data->state = DATA_MID_LINE;
			}
			break;
		case DATA_DOT_CR:
			if (c == '\n') {
				data->state = DATA_DONE;
				i++;
				break;
			}
			/* ".\rX": the dot was stuffing, the CR is data */
			data_put(data, &cr, 1);
			data->state = DATA_MID_LINE;
			break;
		case DATA_DONE:
			i_unreached();
		}
	}
	return i;
}

void lmtp_data_feed_raw(struct lmtp_data *data, const void *bytes, size_t size)
{
	data_put(data, bytes, size);
}

bool lmtp_data_is_done(const struct lmtp_data *data)
{
	return data->state == DATA_DONE;
}

int lmtp_data_finish(struct lmtp_data *data)
{
	data_flush(data);
	if (!data->failed &&
	    fcntl(data->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
		  F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		data->failed = true;
		data->failed_errno = errno;
	}
	if (data->failed) {
		errno = data->failed_errno;
		return -1;
	}
	return data->fd;
}

bool lmtp_data_too_big(const struct lmtp_data *data)
{
	return data->too_big;
}

uint64_t lmtp_data_size(const struct lmtp_data *data)
{
	return data->size;
}
