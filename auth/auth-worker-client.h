#ifndef AUTH_WORKER_CLIENT_H
#define AUTH_WORKER_CLIENT_H
/* auth's side of moat-auth-worker: the auth-worker processes master hands
   us (WORKER-CONN), one request in flight per worker, and a bounded queue
   of requests waiting for an idle worker. */

#include "auth-common.h"
#include "auth-worker-protocol.h"

/* Requests waiting for a worker; beyond this a lookup fails at once
   (tempfail) rather than piling up behind slow PAM modules. */
#define AUTH_WORKER_QUEUE_MAX 128
/* Worker connections auth accepts (service auth-worker process_limit is
   far below this). */
#define AUTH_WORKER_MAX_CONNS 64

struct auth_worker_job;

/* reply is NULL when the worker died or malformed its answer (treat as
   tempfail). */
typedef void auth_worker_callback_t(const struct auth_worker_reply *reply,
				    void *context);

void auth_worker_conn_create(struct auth *auth, int fd, pid_t pid);
void auth_workers_destroy_all(struct auth *auth);

/* Queue a lookup. NULL if there is no worker or the queue is full (the
   callback is never called then). The password is copied and wiped. */
struct auth_worker_job *
auth_worker_passv(struct auth *auth, const char *driver, const char *args,
		  const char *user, const char *password, const char *rip,
		  auth_worker_callback_t *callback, void *context);
struct auth_worker_job *
auth_worker_user(struct auth *auth, const char *driver, const char *args,
		 const char *user, auth_worker_callback_t *callback,
		 void *context);
/* The requester is going away: its callback will not be called. */
void auth_worker_job_abort(struct auth_worker_job **job);

#endif
