/* The read-ahead thread (prefetch-thread.h). One mutex guards the queue
   (a ring of fixed-size entries) and the counters; the thread takes the
   oldest entry, copies it out, and makes its calls without the lock. */
#include "lib.h"
#include "prefetch-thread.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* The thread makes system calls only: a small stack keeps the process's
   address space (vsz_limit) nearly where it was without it. */
#define PREFETCH_THREAD_STACK_SIZE (256 * 1024)

struct prefetch_dir {
	atomic_uint refs;
	int fd;
};

struct prefetch_entry {
	struct prefetch_dir *dir;
	off_t len;
	char name[NAME_MAX + 1];
};

struct prefetch_thread {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work;   /* the thread waits for entries */
	pthread_cond_t idle;   /* prefetch_thread_wait_idle() waits */
	struct prefetch_entry *ring;
	unsigned int capacity, head, count;
	bool running;          /* the thread is making an entry's calls */
	bool stop;
	struct prefetch_thread_stats stats;
};

struct prefetch_dir *prefetch_dir_create(int dirfd)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);

	if (fd == -1)
		return NULL;
	struct prefetch_dir *dir = i_malloc(sizeof(*dir));
	atomic_init(&dir->refs, 1);
	dir->fd = fd;
	return dir;
}

/* Either thread may drop the last reference: only close() and free()
   here, both safe on any thread. */
static void prefetch_dir_release(struct prefetch_dir *dir)
{
	if (atomic_fetch_sub(&dir->refs, 1) == 1) {
		(void)close(dir->fd);
		free(dir);
	}
}

void prefetch_dir_unref(struct prefetch_dir **_dir)
{
	struct prefetch_dir *dir = *_dir;

	if (dir == NULL)
		return;
	*_dir = NULL;
	prefetch_dir_release(dir);
}

/* One entry's calls. O_NONBLOCK: a FIFO left in a folder must not stop
   the thread (regular files ignore the flag). */
static bool prefetch_entry_run(const struct prefetch_entry *entry)
{
	int fd = openat(entry->dir->fd, entry->name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			O_CLOEXEC);

	if (fd == -1)
		return false;
	(void)posix_fadvise(fd, 0, entry->len, POSIX_FADV_WILLNEED);
	(void)close(fd);
	return true;
}

static void *prefetch_thread_main(void *context)
{
	struct prefetch_thread *thread = context;
	struct prefetch_entry entry;

	pthread_mutex_lock(&thread->lock);
	for (;;) {
		while (thread->count == 0 && !thread->stop)
			pthread_cond_wait(&thread->work, &thread->lock);
		if (thread->stop)
			break;
		struct prefetch_entry *head = &thread->ring[thread->head];
		entry.dir = head->dir;
		entry.len = head->len;
		memcpy(entry.name, head->name, strlen(head->name) + 1);
		thread->head = (thread->head + 1) % thread->capacity;
		thread->count--;
		thread->running = true;
		pthread_mutex_unlock(&thread->lock);

		bool opened = prefetch_entry_run(&entry);
		prefetch_dir_release(entry.dir);

		pthread_mutex_lock(&thread->lock);
		thread->running = false;
		if (opened)
			thread->stats.done++;
		else
			thread->stats.failed++;
		if (thread->count == 0)
			pthread_cond_broadcast(&thread->idle);
	}
	pthread_mutex_unlock(&thread->lock);
	return NULL;
}

struct prefetch_thread *prefetch_thread_create(unsigned int capacity,
					       const char **error_r)
{
	struct prefetch_thread *thread = i_malloc(sizeof(*thread));
	pthread_attr_t attr;
	sigset_t all, old;

	i_assert(capacity > 0);
	thread->capacity = capacity;
	thread->ring = i_malloc(sizeof(*thread->ring) * capacity);
	pthread_mutex_init(&thread->lock, NULL);
	pthread_cond_init(&thread->work, NULL);
	pthread_cond_init(&thread->idle, NULL);

	int err = pthread_attr_init(&attr);
	if (err == 0) {
		(void)pthread_attr_setstacksize(&attr,
						PREFETCH_THREAD_STACK_SIZE);
		/* the process's signals stay with its event loop: the thread
		   starts with every one blocked */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = pthread_create(&thread->thread, &attr,
				     prefetch_thread_main, thread);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		(void)pthread_attr_destroy(&attr);
	}
	if (err != 0) {
		*error_r = "pthread_create() failed";
		pthread_cond_destroy(&thread->idle);
		pthread_cond_destroy(&thread->work);
		pthread_mutex_destroy(&thread->lock);
		i_free(thread->ring);
		i_free(thread);
		errno = err;
		return NULL;
	}
	return thread;
}

bool prefetch_thread_add(struct prefetch_thread *thread,
			 struct prefetch_dir *dir, const char *name, off_t len)
{
	size_t name_len = strlen(name);

	if (name_len > NAME_MAX)
		return false;
	pthread_mutex_lock(&thread->lock);
	if (thread->count == thread->capacity) {
		thread->stats.full++;
		pthread_mutex_unlock(&thread->lock);
		return false;
	}
	struct prefetch_entry *entry = &thread->ring[
		(thread->head + thread->count) % thread->capacity];
	atomic_fetch_add(&dir->refs, 1);
	entry->dir = dir;
	entry->len = len;
	memcpy(entry->name, name, name_len + 1);
	/* the thread only waits with an empty queue */
	if (thread->count++ == 0)
		pthread_cond_signal(&thread->work);
	thread->stats.queued++;
	pthread_mutex_unlock(&thread->lock);
	return true;
}

void prefetch_thread_wait_idle(struct prefetch_thread *thread)
{
	pthread_mutex_lock(&thread->lock);
	while (thread->count > 0 || thread->running)
		pthread_cond_wait(&thread->idle, &thread->lock);
	pthread_mutex_unlock(&thread->lock);
}

void prefetch_thread_get_stats(struct prefetch_thread *thread,
			       struct prefetch_thread_stats *stats_r)
{
	pthread_mutex_lock(&thread->lock);
	*stats_r = thread->stats;
	pthread_mutex_unlock(&thread->lock);
}

void prefetch_thread_destroy(struct prefetch_thread **_thread)
{
	struct prefetch_thread *thread = *_thread;

	if (thread == NULL)
		return;
	*_thread = NULL;
	pthread_mutex_lock(&thread->lock);
	thread->stop = true;
	pthread_cond_signal(&thread->work);
	pthread_mutex_unlock(&thread->lock);
	(void)pthread_join(thread->thread, NULL);
	/* what it did not take: advisory, so dropped */
	for (; thread->count > 0; thread->count--) {
		prefetch_dir_release(thread->ring[thread->head].dir);
		thread->head = (thread->head + 1) % thread->capacity;
	}
	pthread_cond_destroy(&thread->idle);
	pthread_cond_destroy(&thread->work);
	pthread_mutex_destroy(&thread->lock);
	i_free(thread->ring);
	i_free(thread);
}
