#ifndef LOGIN_MASTER_H
#define LOGIN_MASTER_H
/* The moat-login-master channel (fd 3, doc/architecture.md): HANDOFF of
   authenticated clients, AUTH-RECONNECT, LISTEN-DONE, CONNECT and
   DISCONNECT (login_max_connections_per_ip, counted by master over all
   imap-login processes); from master HANDOFF-OK/-FAIL/-RETRY,
   CONNECT-OK/-FAIL, AUTH-CONN and SHUTDOWN. A malformed record from
   master is a bug in a trusted peer: the process exits. Losing master
   stops the process (no handoff is possible any more). */

struct login_process;

void login_master_connect(struct login_process *lp);
void login_master_deinit(struct login_process *lp);

/* Send the HANDOFF record with client_fd attached (we keep our copy).
   tls: the TLS protocol version ("TLSv1.3") or "none", for master's
   login log line.
   Returns 0 or -1 (master gone). */
int login_master_handoff(struct login_process *lp, unsigned int id,
			 const char *token, const char *tag,
			 const char *remote_ip, unsigned int remote_port,
			 const char *local_ip, unsigned int local_port,
			 bool secured, const char *mech, const char *tls,
			 const void *bytes, size_t bytes_size, int client_fd);
/* CONNECT <id> <remote_ip>: may this client be served (master answers
   CONNECT-OK or CONNECT-FAIL with the id)? DISCONNECT <id>: a client
   master allowed is logged in or gone. Return 0 or -1 (master gone). */
int login_master_connect_check(struct login_process *lp, unsigned int id,
			       const char *remote_ip);
void login_master_disconnect(struct login_process *lp, unsigned int id);
void login_master_auth_reconnect(struct login_process *lp);
void login_master_listen_done(struct login_process *lp);
/* LOAD <clients> <accepting:0|1>: sent when the process starts or stops
   accepting (client_limit) and when it becomes idle or busy, so master
   can start more processes (up to process_limit) and stop idle ones
   (idle_kill). */
void login_master_load(struct login_process *lp, unsigned int clients,
		       bool accepting);

#endif
