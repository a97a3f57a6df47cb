#ifndef MASTER_ACTIVATION_H
#define MASTER_ACTIVATION_H
/* Socket activation (sd_listen_fds(3)): a service manager that opened the
   listening sockets (systemd's moat.socket, systemd-socket-activate) passes
   them as fds 3.. with $LISTEN_PID and $LISTEN_FDS. master takes such a
   socket in place of binding a configured listener whose address it has,
   so the configuration still decides which service and settings (ssl,
   haproxy) a socket gets; an inherited socket no listener names is closed
   with a warning. */

#include <stdbool.h>

/* The most sockets taken from the manager; more is a configuration error. */
#define MASTER_ACTIVATION_MAX_FDS 64

/* Reads and unsets $LISTEN_PID, $LISTEN_FDS and $LISTEN_FDNAMES (children
   must not think the sockets are theirs). Call first in main(), before
   anything opens an fd. */
void master_activation_init(void);
/* The inherited listening TCP socket bound to address (numeric, or "*")
   and port, or -1. Each socket is given out once. */
int master_activation_take_inet(const char *address, unsigned int port);
/* The inherited listening unix socket bound to path, or -1. */
int master_activation_take_unix(const char *path);
/* After the first opening of the listeners: close, with a warning, every
   inherited socket no listener took. */
void master_activation_close_unused(void);
/* Sockets taken from the manager (for the start-up log line). */
unsigned int master_activation_count(void);

#endif
