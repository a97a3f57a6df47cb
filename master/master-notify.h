#ifndef MASTER_NOTIFY_H
#define MASTER_NOTIFY_H
/* The service manager's readiness protocol (sd_notify(3)): newline-separated
   VAR=value datagrams to the unix socket named by $NOTIFY_SOCKET. Without
   that variable (not started by systemd with Type=notify) every call is a
   no-op. Sending never blocks and a failure is only logged once: the
   manager's view of us is not worth stopping the server for. */

/* Reads and unsets $NOTIFY_SOCKET (children must not speak for master)
   and opens the socket. Call once, before any child is spawned. */
void master_notify_init(void);
void master_notify_deinit(void);

/* Listeners are open and the services started. status is a short text
   for "systemctl status" (STATUS=). */
void master_notify_ready(const char *status);
/* A SIGHUP reload begins (RELOADING=1 with MONOTONIC_USEC, as systemd 253's
   Type=notify-reload expects; older managers ignore the extra field). */
void master_notify_reloading(void);
/* Shutdown begins. */
void master_notify_stopping(void);

#endif
