/* The sync thread (fsync-thread.h). One mutex guards the handoff: the
   loop sets `job` and signals `cond`; the thread runs it, clears it into
   `done`, writes the eventfd and signals `cond` again. */
#include "lib.h"
#include "log.h"
#include "fsync-thread.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>

struct fsync_thread {
	struct ioloop *ioloop;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int event_fd;
	struct io *io;
	struct fsync_job *job;     /* submitted, not started or running */
	struct fsync_job *done;    /* finished, callback not run */
	struct fsync_job *pending; /* submitted until its callback ran */
	bool stop;
};

void fsync_job_add(struct fsync_job *job, int fd, enum fsync_op op)
{
	i_assert(job->count < FSYNC_JOB_MAX_OPS);
	job->fds[job->count] = fd;
	job->ops[job->count] = op;
	job->count++;
}

static uint64_t now_usecs(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void fsync_job_run_calls(struct fsync_job *job);

void fsync_job_run(struct fsync_job *job)
{
	uint64_t start = now_usecs();

	fsync_job_run_calls(job);
	job->usecs = now_usecs() - start;
}

static void fsync_job_run_calls(struct fsync_job *job)
{
	job->error = 0;
	job->failed_op = 0;
	for (unsigned int i = 0; i < job->count; i++) {
		int ret;
		switch (job->ops[i]) {
		case FSYNC_OP_FSYNC:
			ret = fsync(job->fds[i]);
			break;
		case FSYNC_OP_FDATASYNC:
			ret = fdatasync(job->fds[i]);
			break;
		case FSYNC_OP_SYNCFS:
			ret = syncfs(job->fds[i]);
			break;
		default:
			ret = -1;
			errno = EINVAL;
			break;
		}
		if (ret < 0) {
			job->error = errno;
			job->failed_op = i;
			return;
		}
	}
}

static void *fsync_thread_main(void *context)
{
	struct fsync_thread *thread = context;

	pthread_mutex_lock(&thread->lock);
	for (;;) {
		while (thread->job == NULL && !thread->stop)
			pthread_cond_wait(&thread->cond, &thread->lock);
		if (thread->job == NULL)
			break;
		struct fsync_job *job = thread->job;
		/* the loop does not touch the job while it is submitted */
		pthread_mutex_unlock(&thread->lock);
		fsync_job_run(job);
		pthread_mutex_lock(&thread->lock);
		thread->job = NULL;
		thread->done = job;
		uint64_t one = 1;
		/* cannot fail short of a bug: the counter is drained before it
		   could overflow, and a failed wakeup would hang the loop */
		if (write(thread->event_fd, &one, sizeof(one)) != sizeof(one))
			abort();
		pthread_cond_broadcast(&thread->cond);
	}
	pthread_mutex_unlock(&thread->lock);
	return NULL;
}

/* Take a finished job (under the lock) and run its callback. */
static void fsync_thread_finish(struct fsync_thread *thread)
{
	uint64_t count;

	pthread_mutex_lock(&thread->lock);
	struct fsync_job *job = thread->done;
	thread->done = NULL;
	/* the write happened before done was set: this read drains it */
	if (job != NULL && read(thread->event_fd, &count, sizeof(count)) < 0 &&
	    errno != EAGAIN)
		i_fatal("read(eventfd) failed: %m");
	pthread_mutex_unlock(&thread->lock);
	if (job == NULL)
		return;
	i_assert(thread->pending == job);
	thread->pending = NULL;
	job->callback(job, job->context);
}

static void fsync_thread_input(void *context)
{
	fsync_thread_finish(context);
}

struct fsync_thread *fsync_thread_create(struct ioloop *ioloop,
					 const char **error_r)
{
	struct fsync_thread *thread = i_malloc(sizeof(*thread));

	thread->ioloop = ioloop;
	thread->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (thread->event_fd == -1) {
		*error_r = "eventfd() failed";
		i_free(thread);
		return NULL;
	}
	pthread_mutex_init(&thread->lock, NULL);
	pthread_cond_init(&thread->cond, NULL);
	int err = pthread_create(&thread->thread, NULL, fsync_thread_main,
				 thread);
	if (err != 0) {
		*error_r = "pthread_create() failed";
		pthread_cond_destroy(&thread->cond);
		pthread_mutex_destroy(&thread->lock);
		i_close_fd(&thread->event_fd);
		i_free(thread);
		errno = err;
		return NULL;
	}
	thread->io = io_add(ioloop, thread->event_fd, IO_READ,
			    fsync_thread_input, thread);
	return thread;
}

void fsync_thread_submit(struct fsync_thread *thread, struct fsync_job *job,
			 fsync_job_callback_t *callback, void *context)
{
	i_assert(thread->pending == NULL);
	job->callback = callback;
	job->context = context;
	job->error = 0;
	job->failed_op = 0;
	thread->pending = job;
	pthread_mutex_lock(&thread->lock);
	thread->job = job;
	pthread_cond_broadcast(&thread->cond);
	pthread_mutex_unlock(&thread->lock);
}

bool fsync_thread_busy(struct fsync_thread *thread)
{
	return thread->pending != NULL;
}

void fsync_thread_wait(struct fsync_thread *thread)
{
	if (thread->pending == NULL)
		return;
	pthread_mutex_lock(&thread->lock);
	while (thread->done == NULL)
		pthread_cond_wait(&thread->cond, &thread->lock);
	pthread_mutex_unlock(&thread->lock);
	fsync_thread_finish(thread);
}

void fsync_thread_destroy(struct fsync_thread **_thread)
{
	struct fsync_thread *thread = *_thread;

	if (thread == NULL)
		return;
	*_thread = NULL;
	fsync_thread_wait(thread);
	pthread_mutex_lock(&thread->lock);
	thread->stop = true;
	pthread_cond_broadcast(&thread->cond);
	pthread_mutex_unlock(&thread->lock);
	(void)pthread_join(thread->thread, NULL);
	io_remove(&thread->io);
	i_close_fd(&thread->event_fd);
	pthread_cond_destroy(&thread->cond);
	pthread_mutex_destroy(&thread->lock);
	i_free(thread);
}
