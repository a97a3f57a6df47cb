/* See session-feed.h. */
#include "session-feed.h"
#include "log.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

/* Output read per callback; anything works, this is one syscall's worth. */
#define SESSION_FEED_READ_SIZE 65536

struct session_feed {
	int fd;
	struct io *io_write, *io_read;
	const unsigned char *data;
	size_t size, pos;
	io_callback_t *done_callback;
	session_feed_hold_callback_t *hold_eof;
	void *context;
	bool trace;
	bool input_done, output_eof;
};

static void feed_check_done(struct session_feed *feed)
{
	if (session_feed_done(feed))
		feed->done_callback(feed->context);
}

/* With a hold callback, the EOF waits until the server has read all
   the input (nothing of ours is left in its socket: it cannot have
   acted on the last command before) and then while the callback says
   it waits for another process, as a client waits for the answer. */
static bool feed_eof_held(struct session_feed *feed)
{
	int queued;

	if (feed->hold_eof == NULL || feed->output_eof)
		return false;
	if (ioctl(feed->fd, SIOCOUTQ, &queued) < 0)
		i_fatal("fuzz: ioctl(SIOCOUTQ) failed: %s", strerror(errno));
	return queued > 0 || feed->hold_eof(feed->context);
}

static void feed_write(void *context)
{
	struct session_feed *feed = context;
	size_t left = feed->size - feed->pos;
	ssize_t ret = 0;

	if (left > 0) {
		ret = write(feed->fd, feed->data + feed->pos,
			    left < SESSION_FEED_CHUNK ? left : SESSION_FEED_CHUNK);
		if (ret < 0 && errno == EAGAIN)
			return;
	}
	if (ret > 0)
		feed->pos += (size_t)ret;
	/* Called again on the loop's next turn (the socket stays
	   writable) while held. */
	if (ret >= 0 && feed->pos == feed->size && feed_eof_held(feed))
		return;
	/* Done, or the server closed (EPIPE/ECONNRESET): no more input. */
	if (ret < 0 || feed->pos == feed->size) {
		(void)shutdown(feed->fd, SHUT_WR);
		io_remove(&feed->io_write);
		feed->input_done = true;
		feed_check_done(feed);
	}
}

static void feed_read(void *context)
{
	static unsigned char buf[SESSION_FEED_READ_SIZE];
	struct session_feed *feed = context;
	ssize_t ret = read(feed->fd, buf, sizeof(buf));

	if (ret > 0) {
		if (feed->trace)
			(void)fwrite(buf, 1, (size_t)ret, stderr);
		return;
	}
	if (ret < 0 && errno == EAGAIN)
		return;
	io_remove(&feed->io_read);
	feed->output_eof = true;
	feed_check_done(feed);
}

struct session_feed *session_feed_create(struct ioloop *ioloop, int fd,
					 const void *data, size_t size,
					 io_callback_t *done_callback,
					 void *context)
{
	struct session_feed *feed = i_malloc(sizeof(*feed));

	feed->fd = fd;
	feed->data = data;
	feed->size = size;
	feed->done_callback = done_callback;
	feed->context = context;
	feed->trace = getenv("MOAT_FUZZ_TRACE") != NULL;
	feed->io_write = io_add(ioloop, fd, IO_WRITE, feed_write, feed);
	feed->io_read = io_add(ioloop, fd, IO_READ, feed_read, feed);
	return feed;
}

void session_feed_set_hold_eof(struct session_feed *feed,
			       session_feed_hold_callback_t *callback)
{
	feed->hold_eof = callback;
}

bool session_feed_done(const struct session_feed *feed)
{
	return feed->input_done && feed->output_eof;
}

void session_feed_destroy(struct session_feed **_feed)
{
	struct session_feed *feed = *_feed;

	if (feed == NULL)
		return;
	*_feed = NULL;
	io_remove(&feed->io_write);
	io_remove(&feed->io_read);
	i_close_fd(&feed->fd);
	free(feed);
}

void session_feed_quiet_log(void)
{
	if (getenv("MOAT_FUZZ_LOG") != NULL)
		return;
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		i_fatal("open(/dev/null) failed: %s", strerror(errno));
	log_set_fd(fd);
}

/* Open descriptors after setting up: all, and those that are not pipes. */
static unsigned int fds_baseline_all, fds_baseline;

/* Pipes are left out: the sanitizers' symbolizer opens some whenever
   libFuzzer first prints a new function; our code makes none. Without
   skip_pipes (and print) the entries are only counted, no readlink(). */
static unsigned int fds_count(bool skip_pipes, bool print)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *d;
	unsigned int count = 0;
	char path[64], target[256];

	if (dir == NULL)
		return 0;
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] == '.')
			continue;
		if (!skip_pipes && !print) {
			count++;
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		ssize_t len = readlink(path, target, sizeof(target) - 1);
		target[len < 0 ? 0 : len] = '\0';
		if (strncmp(target, "pipe:", 5) == 0)
			continue;
		count++;
		if (print)
			fprintf(stderr, "fuzz: fd %s -> %s\n", d->d_name, target);
	}
	closedir(dir);
	return count;
}

void session_feed_fds_baseline(void)
{
	fds_baseline_all = fds_count(false, false);
	fds_baseline = fds_count(true, false);
}

/* Per input: one readdir() of /proc/self/fd while nothing changed (the
   readlink() of every descriptor was a tenth of a login session's
   time); only when the number differs are the pipes told apart. */
void session_feed_fds_check(void)
{
	unsigned int all = fds_count(false, false);

	if (all == fds_baseline_all)
		return;
	unsigned int count = fds_count(true, false);
	if (count == fds_baseline) {
		/* only the symbolizer's pipes came or went */
		fds_baseline_all = all;
		return;
	}
	fprintf(stderr, "fuzz: %u descriptors open, %u before the input\n",
		count, fds_baseline);
	(void)fds_count(true, true);
	abort();
}
