#ifndef FSYNC_THREAD_H
#define FSYNC_THREAD_H
/* A helper thread that makes files durable while the event loop goes on
   serving (doc/durability.md, "The sync thread"). The loop hands it one
   job at a time: a short list of fsync(2) / fdatasync(2) / syncfs(2)
   calls on descriptors the job's owner keeps open until the job is done.
   The calls have no order among them: the thread and its two helper
   threads make up to three at once (the device merges the flushes).
   The thread touches nothing else: no memory of the loop's, no logging,
   no allocation, so nothing else in the process needs to be thread-safe.
   When the job is done the loop is woken through an eventfd and runs the
   job's callback; fsync_thread_wait() does the same synchronously.

   The thread is started by fsync_thread_create(), which must run after
   the process installed its seccomp filter, so that the thread inherits
   it (the filter then has to allow clone(CLONE_THREAD), futex,
   set_robust_list and rseq: the "thread" group of lib/seccomp-table.c). */

#include "lib.h"
#include "ioloop.h"

/* Calls in one job: a group commit's step makes one syncfs or a few
   per-file syncs (imap/imap-commit.c). The bound keeps a job a
   fixed-size struct. */
#define FSYNC_JOB_MAX_OPS 8

enum fsync_op {
	FSYNC_OP_FSYNC,
	FSYNC_OP_FDATASYNC,
	FSYNC_OP_SYNCFS,
};

struct fsync_job;
typedef void fsync_job_callback_t(struct fsync_job *job, void *context);

/* Filled by the caller with fsync_job_add(); owned by the caller, who
   keeps it (and its descriptors) until the callback has run. */
struct fsync_job {
	int fds[FSYNC_JOB_MAX_OPS];
	enum fsync_op ops[FSYNC_JOB_MAX_OPS];
	unsigned int count;
	/* results, valid in the callback: 0, or the errno of the first call
	   (by index) that failed and its index. fsync_job_run() stops
	   there; on the thread the calls run at once and all are made. */
	int error;
	unsigned int failed_op;
	/* how long the calls took (the caller's cost estimate: doc of
	   imap/imap-commit.c), also when one failed, and in how many waves
	   of calls made at once (count when one after the other) */
	uint64_t usecs;
	unsigned int waves;
	fsync_job_callback_t *callback;
	void *context;
};

struct fsync_thread;

/* Returns NULL with *error_r set (a constant text; errno says why) if
   the thread or its eventfd cannot be created (the caller then syncs on
   the loop: fsync_job_run()). */
struct fsync_thread *fsync_thread_create(struct ioloop *ioloop,
					 const char **error_r);
/* Waits for a job in progress (its callback runs first), then stops and
   joins the thread. *thread = NULL. */
void fsync_thread_destroy(struct fsync_thread **thread);

/* How many of a job's calls the thread makes at once (1 when its
   helpers could not be started). */
unsigned int fsync_thread_parallel(const struct fsync_thread *thread);

/* Add one call to job (at most FSYNC_JOB_MAX_OPS). */
void fsync_job_add(struct fsync_job *job, int fd, enum fsync_op op);
/* Run job's calls here and now, on the calling thread (no callback). */
void fsync_job_run(struct fsync_job *job);

/* Start job on the thread; its callback runs from the loop once it is
   done. Only one job at a time: none may be in progress. */
void fsync_thread_submit(struct fsync_thread *thread, struct fsync_job *job,
			 fsync_job_callback_t *callback, void *context);
/* Is a job in progress (submitted, callback not run yet)? */
bool fsync_thread_busy(struct fsync_thread *thread);
/* Block until the job in progress is done and run its callback now (so
   it never runs later from the loop). No-op when none is. */
void fsync_thread_wait(struct fsync_thread *thread);

#endif
