#ifndef LOGIN_PROXY_H
#define LOGIN_PROXY_H
/* The rest of a logged-in TLS session: the TLS state lives here, so the
   user's imap process got one end of a socketpair instead of the client
   socket, and this relays plaintext between the pair and the TLS
   connection (both directions, bounded buffers, backpressure). A proxied
   session counts toward client_limit until either side closes.

   With ssl_ktls = yes a session whose record layer the kernel took over
   skips this: imap gets the socket itself (login-client-auth.c). */

struct login_ssl;

/* Takes ownership of ssl, of the client socket fd and of plain_fd (our
   end of the pair). */
void login_proxy_create(struct login_process *lp, struct login_ssl *ssl,
			int fd, int plain_fd);
void login_proxies_destroy_all(struct login_process *lp);

#endif
