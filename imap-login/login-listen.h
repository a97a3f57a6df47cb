#ifndef LOGIN_LISTEN_H
#define LOGIN_LISTEN_H
/* The listening sockets master opened and every imap-login process
   shares (fd MASTER_LISTEN_FD_FIRST.., named by MOAT_LISTENERS as
   "name:ssl:haproxy,...", each flag 0 or 1). Accepting is non-blocking:
   another process may win the race, EAGAIN is normal. */

struct login_process;

/* Parse MOAT_LISTENERS and take the fds. Fatal if it is malformed. */
void login_listen_init(struct login_process *lp);
/* Close our copies of the listening sockets. */
void login_listen_deinit(struct login_process *lp);
/* Watch the sockets if the process may accept now (not at client_limit,
   not done, not shutting down), else stop watching. */
void login_listen_update(struct login_process *lp);

#endif
