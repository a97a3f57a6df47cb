#ifndef AUTH_CLIENT_H
#define AUTH_CLIENT_H
/* One imap-login process's connection (moat-auth-client protocol), handed
   to auth by master in a LOGIN-CONN record. Everything it sends is
   untrusted: records are checked, a protocol error closes this
   connection only, and each connection has a bounded number of
   requests in progress. */

#include "auth-common.h"

/* Requests in progress per imap-login process: with failures delayed up
   to 15 s a busy login process can legitimately have many; beyond this
   new ones are answered FAIL tempfail. */
#define AUTH_CLIENT_MAX_REQUESTS 100
/* imap-login processes auth serves at once (process_limit is 64 by
   default; this only stops a runaway master from exhausting fds). */
#define AUTH_MAX_CLIENTS 1024

struct auth_request;

/* Takes ownership of fd. */
struct auth_client *auth_client_create(struct auth *auth, int fd,
				       pid_t login_pid);
void auth_client_destroy(struct auth_client **client);
void auth_clients_destroy_all(struct auth *auth);

pid_t auth_client_get_pid(const struct auth_client *client);
/* Send a record (NULL-terminated args) to the login process. */
void auth_client_send(struct auth_client *client, const char *const *args);
/* The request answered: unlink and free it. */
void auth_client_request_done(struct auth_client *client,
			      struct auth_request *request);

#endif
