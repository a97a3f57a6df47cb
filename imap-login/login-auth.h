#ifndef LOGIN_AUTH_H
#define LOGIN_AUTH_H
/* The moat-auth-client connection to auth (doc/architecture.md).
   imap-login asks; auth answers CONT/OK/FAIL for the request id. If the
   connection is lost, in-flight requests fail with "tempfail" and master
   is asked for a new one (AUTH-RECONNECT, answered by AUTH-CONN +fd). */

struct login_process;

/* Use fd (takes ownership) as the auth connection, replacing any old one
   (whose in-flight requests then fail with tempfail). */
void login_auth_connect(struct login_process *lp, int fd);
void login_auth_deinit(struct login_process *lp);
bool login_auth_is_connected(struct login_process *lp);

/* AUTH <id> <mech> <remote_ip> <local_ip> <secured> <b64 ir>
   [cbind=<cbind_b64>] [cert_user=<cert_user>] (NULL: field left out).
   Returns 0, or -1 if there is no connection (then it was lost: the
   caller answers its client with tempfail; other clients were already
   answered). */
int login_auth_request(struct login_process *lp, unsigned int id,
		       const char *mech, const char *remote_ip,
		       const char *local_ip, bool secured, const char *ir_b64,
		       const char *cbind_b64, const char *cert_user);
/* CONT <id> <b64 response or "*">. Same return values. */
int login_auth_continue(struct login_process *lp, unsigned int id,
			const char *response);

#endif
