/* auth <-> auth-worker: see auth-worker-client.h. */
#include "auth-common.h"
#include "auth-worker-client.h"

#define AUTH_WORKER_JOB_ARGS 8

struct auth_worker_conn {
	struct auth_worker_conn *prev, *next;
	struct auth_workers *workers;
	struct ipc_conn *conn;
	pid_t pid;
	struct auth_worker_job *job;     /* in flight, or NULL */
};

struct auth_worker_job {
	struct auth_worker_job *next;    /* in the queue */
	struct auth_workers *workers;
	struct auth_worker_conn *conn;   /* while in flight */
	unsigned int id;
	char *args[AUTH_WORKER_JOB_ARGS]; /* the record; NULL-terminated */
	unsigned int password_idx;       /* args[] index to wipe, or 0 */
	auth_worker_callback_t *callback; /* NULL once aborted */
	void *context;
};

struct auth_workers {
	struct auth *auth;
	struct auth_worker_conn *conns;
	unsigned int conn_count;
	struct auth_worker_job *queue_head, *queue_tail;
	unsigned int queue_count;
	unsigned int next_id;
};

static struct auth_workers *workers_get(struct auth *auth)
{
	if (auth->workers == NULL) {
		auth->workers = i_malloc(sizeof(*auth->workers));
		auth->workers->auth = auth;
	}
	return auth->workers;
}

static void job_free(struct auth_worker_job *job)
{
	for (unsigned int i = 0; job->args[i] != NULL; i++) {
		if (i == job->password_idx && i > 0)
			safe_memset(job->args[i], 0, strlen(job->args[i]));
		free(job->args[i]);
	}
	free(job);
}

static void job_finish(struct auth_worker_job *job,
		       const struct auth_worker_reply *reply)
{
	if (job->callback != NULL)
		job->callback(reply, job->context);
	job_free(job);
}

static void conn_input(void *context, const char *const *args, int fd);

/* Give queued jobs to idle workers. */
static void workers_dispatch(struct auth_workers *workers)
{
	struct auth_worker_conn *conn;

	for (conn = workers->conns; conn != NULL && workers->queue_head != NULL;
	     conn = conn->next) {
		struct auth_worker_job *job;

		if (conn->job != NULL)
			continue;
		job = workers->queue_head;
		workers->queue_head = job->next;
		if (workers->queue_head == NULL)
			workers->queue_tail = NULL;
		workers->queue_count--;
		job->next = NULL;
		job->conn = conn;
		conn->job = job;
		/* A failed send shows as the connection's EOF soon after. */
		(void)ipc_send(conn->conn, (const char *const *)job->args, -1);
	}
}

static void conn_destroy(struct auth_worker_conn *conn)
{
	struct auth_workers *workers = conn->workers;
	struct auth_worker_job *job = conn->job;

	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		workers->conns = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	workers->conn_count--;
	if (conn->conn != NULL)
		ipc_conn_destroy(&conn->conn);
	free(conn);
	if (job != NULL)
		job_finish(job, NULL);
}

void auth_worker_conn_create(struct auth *auth, int fd, pid_t pid)
{
	struct auth_workers *workers = workers_get(auth);
	struct auth_worker_conn *conn;
	char name[64];

	if (workers->conn_count >= AUTH_WORKER_MAX_CONNS) {
		i_error("master: already %u auth-worker connections, refusing "
			"pid %ld", workers->conn_count, (long)pid);
		close(fd);
		return;
	}
	conn = i_malloc(sizeof(*conn));
	conn->workers = workers;
	conn->pid = pid;
	snprintf(name, sizeof(name), "auth-worker %ld", (long)pid);
	conn->conn = ipc_conn_create(auth->ioloop, fd, name,
				     IPC_PROTO_AUTH_WORKER, IPC_PROTO_MAJOR,
				     IPC_PROTO_MINOR, conn_input, conn);
	conn->next = workers->conns;
	if (workers->conns != NULL)
		workers->conns->prev = conn;
	workers->conns = conn;
	workers->conn_count++;
	workers_dispatch(workers);
}

static void conn_input(void *context, const char *const *args, int fd)
{
	struct auth_worker_conn *conn = context;
	struct auth_workers *workers = conn->workers;
	struct auth_worker_job *job = conn->job;
	struct auth_worker_reply reply;

	if (args == NULL) {
		i_error("auth-worker %ld: connection lost", (long)conn->pid);
		conn_destroy(conn);
		workers_dispatch(workers);
		return;
	}
	if (fd >= 0 || auth_worker_parse_reply(args, &reply) < 0 ||
	    job == NULL || reply.id != job->id) {
		i_close_fd(&fd);
		i_error("auth-worker %ld: unexpected or malformed record, "
			"dropping it", (long)conn->pid);
		conn_destroy(conn);
		workers_dispatch(workers);
		return;
	}
	conn->job = NULL;
	job_finish(job, &reply);
	workers_dispatch(workers);
}

static struct auth_worker_job *
job_queue(struct auth *auth, const char *const *args, unsigned int password_idx,
	  auth_worker_callback_t *callback, void *context)
{
	struct auth_workers *workers = workers_get(auth);
	struct auth_worker_job *job;
	char id[16];

	if (workers->conn_count == 0 ||
	    workers->queue_count >= AUTH_WORKER_QUEUE_MAX)
		return NULL;
	job = i_malloc(sizeof(*job));
	job->workers = workers;
	job->id = ++workers->next_id;
	job->password_idx = password_idx;
	job->callback = callback;
	job->context = context;
	snprintf(id, sizeof(id), "%u", job->id);
	job->args[0] = i_strdup(args[0]);
	job->args[1] = i_strdup(id);
	for (unsigned int i = 1; args[i] != NULL; i++) {
		i_assert(i + 1 < AUTH_WORKER_JOB_ARGS);
		job->args[i + 1] = i_strdup(args[i]);
	}
	if (workers->queue_tail != NULL)
		workers->queue_tail->next = job;
	else
		workers->queue_head = job;
	workers->queue_tail = job;
	workers->queue_count++;
	workers_dispatch(workers);
	return job;
}

struct auth_worker_job *
auth_worker_passv(struct auth *auth, const char *driver, const char *args,
		  const char *user, const char *password, const char *rip,
		  auth_worker_callback_t *callback, void *context)
{
	pool_t pool = pool_create("auth-worker passv", 256);
	char *b64 = p_base64_encode(pool, password, strlen(password));
	const char *record[] = { "PASSV", driver, args, user, b64, rip, NULL };
	struct auth_worker_job *job;

	/* args index 5 once the id is inserted at 1 */
	job = job_queue(auth, record, 5, callback, context);
	safe_memset(b64, 0, strlen(b64));
	pool_unref(&pool);
	return job;
}

struct auth_worker_job *
auth_worker_user(struct auth *auth, const char *driver, const char *args,
		 const char *user, auth_worker_callback_t *callback,
		 void *context)
{
	const char *record[] = { "USER", driver, args, user, NULL };

	return job_queue(auth, record, 0, callback, context);
}

void auth_worker_job_abort(struct auth_worker_job **_job)
{
	struct auth_worker_job *job = *_job;
	struct auth_workers *workers = job->workers;
	struct auth_worker_job **p;

	*_job = NULL;
	if (job->conn != NULL) {
		/* In flight: the worker's answer is dropped. */
		job->callback = NULL;
		return;
	}
	for (p = &workers->queue_head; *p != NULL; p = &(*p)->next) {
		if (*p != job)
			continue;
		*p = job->next;
		if (workers->queue_tail == job) {
			struct auth_worker_job *last = workers->queue_head;
			while (last != NULL && last->next != NULL)
				last = last->next;
			workers->queue_tail = last;
		}
		workers->queue_count--;
		break;
	}
	job_free(job);
}

void auth_workers_destroy_all(struct auth *auth)
{
	struct auth_workers *workers = auth->workers;

	if (workers == NULL)
		return;
	while (workers->conns != NULL)
		conn_destroy(workers->conns);
	while (workers->queue_head != NULL) {
		struct auth_worker_job *job = workers->queue_head;
		workers->queue_head = job->next;
		job_finish(job, NULL);
	}
	free(workers);
	auth->workers = NULL;
}
