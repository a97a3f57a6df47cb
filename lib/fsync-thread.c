/* The sync thread (fsync-thread.h). One mutex guards the handoff: the
   loop sets `job` and signals `cond`; the thread runs it, clears it into
   `done`, writes the eventfd and signals `cond` again. A job of several
   calls is `running` while the thread and its helpers take its calls one
   by one (`next_op`) and count them done (`ops_done`); the thread waits
   for the last one. */
#include "lib.h"
#include "log.h"
#include "fsync-thread.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>

/* Helpers beside the sync thread: a job's calls are made this many + 1
   at a time. On this disk (virtio, ext4 without a journal) every
   fsync/fdatasync ends in a device cache flush; flushes issued together
   are merged by the block layer, so a publish's three per-file syncs
   made at once cost about one flush instead of three one after the
   other (doc/performance.md, "Concurrent per-file syncs"). Two helpers
   cover a folder's three syncs, the common case of step 3. */
#define FSYNC_THREAD_HELPERS 2
/* A helper makes system calls only; a small stack keeps the process's
   address space (vsz_limit) nearly where it was without them. */
#define FSYNC_HELPER_STACK_SIZE (256 * 1024)

struct fsync_thread {
	struct ioloop *ioloop;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* the helpers wait on their own condition, so that the handoffs
	   of the loop and the sync thread do not wake them */
	pthread_cond_t work;
	int event_fd;
	struct io *io;
	struct fsync_job *job;     /* submitted, not started or running */
	struct fsync_job *done;    /* finished, callback not run */
	struct fsync_job *pending; /* submitted until its callback ran */
	/* the job whose calls the thread and the helpers are making */
	struct fsync_job *running;
	unsigned int next_op, ops_done;
	int op_errors[FSYNC_JOB_MAX_OPS];
	pthread_t helpers[FSYNC_THREAD_HELPERS];
	unsigned int helper_count;
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

/* Make job's call i; 0 or its errno. */
static int fsync_job_call(const struct fsync_job *job, unsigned int i)
{
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
	return ret < 0 ? errno : 0;
}

static void fsync_job_run_calls(struct fsync_job *job)
{
	job->error = 0;
	job->failed_op = 0;
	job->waves = job->count;
	for (unsigned int i = 0; i < job->count; i++) {
		int err = fsync_job_call(job, i);
		if (err != 0) {
			job->error = err;
			job->failed_op = i;
			return;
		}
	}
}

/* Under the lock: make the running job's calls that nobody has taken
   yet, each without the lock. */
static void fsync_thread_take_calls(struct fsync_thread *thread)
{
	while (thread->running != NULL &&
	       thread->next_op < thread->running->count) {
		struct fsync_job *job = thread->running;
		unsigned int i = thread->next_op++;
		pthread_mutex_unlock(&thread->lock);
		int err = fsync_job_call(job, i);
		pthread_mutex_lock(&thread->lock);
		/* job is still running: the thread waits for every call */
		thread->op_errors[i] = err;
		/* the loop may wait on cond too (fsync_thread_wait()) */
		if (++thread->ops_done == job->count)
			pthread_cond_broadcast(&thread->cond);
	}
}

static void *fsync_helper_main(void *context)
{
	struct fsync_thread *thread = context;

	pthread_mutex_lock(&thread->lock);
	while (!thread->stop) {
		fsync_thread_take_calls(thread);
		if (!thread->stop)
			pthread_cond_wait(&thread->work, &thread->lock);
	}
	pthread_mutex_unlock(&thread->lock);
	return NULL;
}

/* Under the lock: job's calls at once, by the thread and the helpers;
   every call is made, the first failed one (by index) is reported. */
static void fsync_thread_run_parallel(struct fsync_thread *thread,
				      struct fsync_job *job)
{
	uint64_t start = now_usecs();

	thread->running = job;
	thread->next_op = 0;
	thread->ops_done = 0;
	/* as many helpers as there are calls beyond the thread's own */
	for (unsigned int i = 1; i < job->count && i <= thread->helper_count; i++)
		pthread_cond_signal(&thread->work);
	fsync_thread_take_calls(thread);
	while (thread->ops_done < job->count)
		pthread_cond_wait(&thread->cond, &thread->lock);
	thread->running = NULL;
	job->error = 0;
	job->failed_op = 0;
	for (unsigned int i = 0; i < job->count; i++) {
		if (thread->op_errors[i] != 0) {
			job->error = thread->op_errors[i];
			job->failed_op = i;
			break;
		}
	}
	unsigned int par = thread->helper_count + 1;
	job->waves = (job->count + par - 1) / par;
	job->usecs = now_usecs() - start;
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
		if (job->count > 1 && thread->helper_count > 0) {
			fsync_thread_run_parallel(thread, job);
		} else {
			pthread_mutex_unlock(&thread->lock);
			fsync_job_run(job);
			pthread_mutex_lock(&thread->lock);
		}
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
	pthread_cond_init(&thread->work, NULL);
	int err = pthread_create(&thread->thread, NULL, fsync_thread_main,
				 thread);
	if (err != 0) {
		*error_r = "pthread_create() failed";
		pthread_cond_destroy(&thread->work);
		pthread_cond_destroy(&thread->cond);
		pthread_mutex_destroy(&thread->lock);
		i_close_fd(&thread->event_fd);
		i_free(thread);
		errno = err;
		return NULL;
	}
	/* fewer helpers (none) only make the calls one after the other */
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) == 0) {
		(void)pthread_attr_setstacksize(&attr, FSYNC_HELPER_STACK_SIZE);
		pthread_mutex_lock(&thread->lock);
		while (thread->helper_count < FSYNC_THREAD_HELPERS &&
		       pthread_create(&thread->helpers[thread->helper_count],
				      &attr, fsync_helper_main, thread) == 0)
			thread->helper_count++;
		pthread_mutex_unlock(&thread->lock);
		(void)pthread_attr_destroy(&attr);
	}
	thread->io = io_add(ioloop, thread->event_fd, IO_READ,
			    fsync_thread_input, thread);
	return thread;
}

unsigned int fsync_thread_parallel(const struct fsync_thread *thread)
{
	/* written only before the thread is handed out */
	return thread->helper_count + 1;
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
	pthread_cond_broadcast(&thread->work);
	pthread_mutex_unlock(&thread->lock);
	(void)pthread_join(thread->thread, NULL);
	for (unsigned int i = 0; i < thread->helper_count; i++)
		(void)pthread_join(thread->helpers[i], NULL);
	io_remove(&thread->io);
	i_close_fd(&thread->event_fd);
	pthread_cond_destroy(&thread->work);
	pthread_cond_destroy(&thread->cond);
	pthread_mutex_destroy(&thread->lock);
	i_free(thread);
}
