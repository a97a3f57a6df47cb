/* Lingering close; see sock-linger.h. */
#include "lib.h"
#include "sock-linger.h"

#include <sys/socket.h>

/* Input is read in slices of this size into one static buffer. */
#define SOCK_LINGER_READ_SIZE 4096

struct sock_linger {
	struct sock_linger *prev, *next;   /* oldest first */
	struct sock_linger_set *set;
	int fd;
	size_t discarded;
	struct io *io;
	struct timeout *to;
};

struct sock_linger_set {
	struct ioloop *ioloop;
	unsigned int max_count, count;
	struct sock_linger *head, *tail;
	void (*done)(void *context);
	void *context;
};

struct sock_linger_set *sock_linger_set_create(struct ioloop *ioloop,
				     unsigned int max_count,
				     void (*done)(void *context),
				     void *context)
{
	struct sock_linger_set *set = i_malloc(sizeof(struct sock_linger_set));

	i_assert(max_count > 0);
	set->ioloop = ioloop;
	set->max_count = max_count;
	set->done = done;
	set->context = context;
	return set;
}

static void sock_linger_free(struct sock_linger *l, bool notify)
{
	struct sock_linger_set *set = l->set;

	if (l->prev != NULL)
		l->prev->next = l->next;
	else
		set->head = l->next;
	if (l->next != NULL)
		l->next->prev = l->prev;
	else
		set->tail = l->prev;
	set->count--;
	io_remove(&l->io);
	if (l->to != NULL)
		timeout_remove(&l->to);
	i_close_fd(&l->fd);
	i_free(l);
	if (notify && set->done != NULL)
		set->done(set->context);
}

void sock_linger_set_destroy(struct sock_linger_set **_set)
{
	struct sock_linger_set *set = *_set;

	*_set = NULL;
	while (set->head != NULL)
		sock_linger_free(set->head, false);
	i_free(set);
}

static void sock_linger_input(void *context)
{
	static unsigned char scratch[SOCK_LINGER_READ_SIZE];
	struct sock_linger *l = context;
	ssize_t ret;

	/* Level-triggered: one read per wakeup keeps a flood from holding
	   the loop; the io fires again while input remains. */
	ret = recv(l->fd, scratch, sizeof(scratch), 0);
	if (ret > 0) {
		l->discarded += (size_t)ret;
		if (l->discarded < SOCK_LINGER_MAX_BYTES)
			return;
	} else if (ret < 0 && (errno == EAGAIN || errno == EINTR)) {
		return;
	}
	/* EOF, an error or enough: the peer had its chance. */
	sock_linger_free(l, true);
}

static void sock_linger_timeout(void *context)
{
	struct sock_linger *l = context;

	l->to = NULL;
	sock_linger_free(l, true);
}

void sock_linger_close(struct sock_linger_set *set, int *fd)
{
	struct sock_linger *l;

	i_assert(*fd >= 0);
	/* FIN follows what is queued; input stays readable. A socket that
	   cannot be shut down (already reset) has nothing to wait for. */
	if (shutdown(*fd, SHUT_WR) < 0) {
		i_close_fd(fd);
		return;
	}
	if (set->count >= set->max_count)
		sock_linger_free(set->head, false);
	l = i_malloc(sizeof(struct sock_linger));
	l->set = set;
	l->fd = *fd;
	*fd = -1;
	l->prev = set->tail;
	if (set->tail != NULL)
		set->tail->next = l;
	else
		set->head = l;
	set->tail = l;
	set->count++;
	l->io = io_add(set->ioloop, l->fd, IO_READ, sock_linger_input, l);
	l->to = timeout_add(set->ioloop, SOCK_LINGER_MAX_MSECS,
			    sock_linger_timeout, l);
}

unsigned int sock_linger_set_count(const struct sock_linger_set *set)
{
	return set->count;
}
