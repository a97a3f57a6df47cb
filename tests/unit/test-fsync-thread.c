/* Unit tests for lib/fsync-thread.c: jobs run on the thread, their
   callbacks from the loop (or from fsync_thread_wait()), errors name the
   failed call. */
#include "test-common.h"
#include "fsync-thread.h"

#include <fcntl.h>

/* A job not done after this long is stuck: fail the test. */
#define TEST_GUARD_MSECS 10000

struct job_result {
	struct ioloop *ioloop;
	unsigned int calls;
	int error;
	unsigned int failed_op;
	bool stop;
};

static void job_done(struct fsync_job *job, void *context)
{
	struct job_result *res = context;

	res->calls++;
	res->error = job->error;
	res->failed_op = job->failed_op;
	if (res->stop)
		io_loop_stop(res->ioloop);
}

struct guard {
	struct ioloop *ioloop;
	struct timeout *to;
};

static void guard_expired(void *context)
{
	struct guard *guard = context;

	guard->to = NULL;
	test_assert(!"the job's callback never ran");
	io_loop_stop(guard->ioloop);
}

static int tmp_file(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	test_assert(fd != -1);
	test_assert(write(fd, "data\n", 5) == 5);
	return fd;
}

/* The callback runs from the loop, once, after the syncs succeeded. */
static void test_fsync_thread_loop(void)
{
	struct ioloop *ioloop = io_loop_create();
	const char *error = NULL;
	struct fsync_thread *thread = fsync_thread_create(ioloop, &error);
	struct job_result res = { .ioloop = ioloop, .stop = true };
	struct fsync_job job = { .count = 0 };
	int fd = tmp_file("a");

	test_assert(thread != NULL);
	fsync_job_add(&job, fd, FSYNC_OP_FSYNC);
	fsync_job_add(&job, fd, FSYNC_OP_FDATASYNC);
	fsync_job_add(&job, fd, FSYNC_OP_SYNCFS);
	fsync_thread_submit(thread, &job, job_done, &res);
	test_assert(fsync_thread_busy(thread));
	/* never from inside submit */
	test_assert_int(res.calls, 0);
	struct guard guard = { .ioloop = ioloop };
	guard.to = timeout_add(ioloop, TEST_GUARD_MSECS, guard_expired, &guard);
	io_loop_run(ioloop);
	timeout_remove(&guard.to);
	test_assert_int(res.calls, 1);
	test_assert_int(res.error, 0);
	test_assert(!fsync_thread_busy(thread));

	/* a second job on the same thread */
	fsync_thread_submit(thread, &job, job_done, &res);
	guard.to = timeout_add(ioloop, TEST_GUARD_MSECS, guard_expired, &guard);
	io_loop_run(ioloop);
	timeout_remove(&guard.to);
	test_assert_int(res.calls, 2);
	fsync_thread_destroy(&thread);
	test_assert(thread == NULL);
	i_close_fd(&fd);
	io_loop_destroy(&ioloop);
}

/* A failed call is reported with its errno and index;
   fsync_thread_wait() runs the callback at once and the loop never
   runs it again. */
static void test_fsync_thread_error_wait(void)
{
	struct ioloop *ioloop = io_loop_create();
	const char *error = NULL;
	struct fsync_thread *thread = fsync_thread_create(ioloop, &error);
	struct job_result res = { .ioloop = ioloop };
	struct fsync_job job = { .count = 0 };
	int fd = tmp_file("b");

	test_assert(thread != NULL);
	fsync_job_add(&job, fd, FSYNC_OP_FDATASYNC);
	fsync_job_add(&job, -1, FSYNC_OP_FSYNC);
	fsync_job_add(&job, fd, FSYNC_OP_FSYNC);
	fsync_thread_submit(thread, &job, job_done, &res);
	fsync_thread_wait(thread);
	test_assert_int(res.calls, 1);
	test_assert_int(res.error, EBADF);
	test_assert_int(res.failed_op, 1);
	test_assert(!fsync_thread_busy(thread));
	/* nothing in progress: a no-op */
	fsync_thread_wait(thread);
	test_assert_int(res.calls, 1);

	/* destroy waits for a job in progress and runs its callback */
	fsync_job_run(&job);
	test_assert_int(job.error, EBADF);
	job.count = 1;
	fsync_thread_submit(thread, &job, job_done, &res);
	fsync_thread_destroy(&thread);
	test_assert_int(res.calls, 2);
	test_assert_int(res.error, 0);
	i_close_fd(&fd);
	io_loop_destroy(&ioloop);
}

/* A full job on the thread: its calls are made in waves of
   fsync_thread_parallel() at once, the first failed call by index is
   the one reported whatever finished first; on the loop the calls are
   one wave each. */
static void test_fsync_thread_parallel(void)
{
	struct ioloop *ioloop = io_loop_create();
	const char *error = NULL;
	struct fsync_thread *thread = fsync_thread_create(ioloop, &error);
	struct job_result res = { .ioloop = ioloop };
	struct fsync_job job = { .count = 0 };
	int fds[3] = { tmp_file("c0"), tmp_file("c1"), tmp_file("c2") };

	test_assert(thread != NULL);
	/* two helpers start on any machine that runs the tests */
	test_assert_int(fsync_thread_parallel(thread), 3);
	for (unsigned int i = 0; i < FSYNC_JOB_MAX_OPS; i++)
		fsync_job_add(&job, fds[i % 3], i % 2 == 0 ?
			      FSYNC_OP_FSYNC : FSYNC_OP_FDATASYNC);
	fsync_thread_submit(thread, &job, job_done, &res);
	fsync_thread_wait(thread);
	test_assert_int(res.calls, 1);
	test_assert_int(res.error, 0);
	test_assert_int(job.waves, (FSYNC_JOB_MAX_OPS + 2) / 3);

	/* calls 5 and 3 fail; 3 is reported */
	job.fds[5] = -1;
	job.fds[3] = -1;
	for (unsigned int round = 0; round < 20; round++) {
		fsync_thread_submit(thread, &job, job_done, &res);
		fsync_thread_wait(thread);
		test_assert_int(res.error, EBADF);
		test_assert_int(res.failed_op, 3);
	}
	test_assert_int(res.calls, 21);

	/* three calls: one wave on the thread, three on the loop */
	job.count = 3;
	fsync_thread_submit(thread, &job, job_done, &res);
	fsync_thread_wait(thread);
	test_assert_int(res.error, 0);
	test_assert_int(job.waves, 1);
	fsync_job_run(&job);
	test_assert_int(job.error, 0);
	test_assert_int(job.waves, 3);
	fsync_thread_destroy(&thread);
	for (unsigned int i = 0; i < 3; i++)
		i_close_fd(&fds[i]);
	io_loop_destroy(&ioloop);
}

TEST_MAIN(TEST(test_fsync_thread_loop), TEST(test_fsync_thread_error_wait),
	  TEST(test_fsync_thread_parallel))
