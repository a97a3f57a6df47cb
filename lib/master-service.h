#ifndef MASTER_SERVICE_H
#define MASTER_SERVICE_H
/* The child side of master's spawn contract, shared by imap-login, auth
   and imap: fixed descriptor numbers, reading the settings master
   checked, logging, privilege drop and the channel back to master.

   Descriptors a child inherits (everything else is closed):
     0      /dev/null
     1, 2   a pipe to master, which logs each line with the child's prefix
     3      MASTER_CHANNEL_FD: SOCK_SEQPACKET socket to master (ipc.h)
     4      MASTER_CONFIG_FD: a sealed memfd with every setting, in
            moat.conf syntax, as master validated it (moat -a output)
     5      MASTER_AUTH_FD: imap-login and auth-worker: its socket to auth
     6..    MASTER_LISTEN_FD_FIRST: imap-login: listening sockets, in
            the order named by MOAT_LISTENERS
     5..    lmtp: its listening sockets from fd 5 (it has no auth socket),
            in the order named by MOAT_LISTENERS
   key-signer has only 0-4; its sockets to imap-login processes come
   over fd 3 (LOGIN-CONN), as imap-login's to it do (KEYD-CONN).
   Environment: MOAT_SERVICE (service name), MOAT_UID/MOAT_GID (what to
   become), MOAT_CHROOT (or unset), MOAT_LISTENERS ("name:ssl,name:ssl"),
   MOAT_USER/MOAT_HOME/MOAT_MAIL for imap. Master is trusted; the values
   are still checked. */

#include "ioloop.h"
#include "ipc.h"
#include "moat-settings.h"

#define MASTER_CHANNEL_FD 3
#define MASTER_CONFIG_FD 4
#define MASTER_AUTH_FD 5
#define MASTER_LISTEN_FD_FIRST 6
#define MASTER_LMTP_LISTEN_FD_FIRST 5

/* Protocol names and versions of the internal sockets (ipc.h). Records:
   see doc/architecture.md "Internal protocols". */
#define IPC_PROTO_LOGIN_MASTER "moat-login-master"   /* imap-login <-> master */
#define IPC_PROTO_AUTH_CLIENT "moat-auth-client"     /* imap-login <-> auth */
#define IPC_PROTO_AUTH_MASTER "moat-auth-master"     /* master <-> auth */
#define IPC_PROTO_IMAP_MASTER "moat-imap-master"     /* master <-> imap */
#define IPC_PROTO_AUTH_WORKER "moat-auth-worker"     /* auth <-> auth-worker */
#define IPC_PROTO_WORKER_MASTER "moat-worker-master" /* auth-worker <-> master */
#define IPC_PROTO_LMTP_MASTER "moat-lmtp-master"     /* lmtp <-> master */
#define IPC_PROTO_DELIVER "moat-deliver"             /* lmtp <-> imap */
#define IPC_PROTO_KEYD_MASTER "moat-keyd-master"     /* key-signer <-> master */
#define IPC_PROTO_KEYD "moat-keyd"                   /* imap-login <-> key-signer */
#define IPC_PROTO_MAJOR 1
#define IPC_PROTO_MINOR 0

/* Random one-time token auth gives imap-login for master to redeem. */
#define AUTH_TOKEN_BYTES 32

struct master_service;

/* Reads MOAT_SERVICE and the settings from MASTER_CONFIG_FD, sets the log
   prefix and creates the ioloop. Fatal if started other than by master. */
struct master_service *master_service_init(const char *name);
void master_service_deinit(struct master_service **service);

struct ioloop *master_service_get_ioloop(struct master_service *service);
const struct moat_settings *
master_service_get_settings(struct master_service *service);
/* Settings of this process's own service block. */
const struct moat_service_settings *
master_service_get_service_settings(struct master_service *service);

/* restrict_process() with MOAT_UID/MOAT_GID/MOAT_CHROOT, the service's
   vsz_limit and, last, seccomp_profile's filter in the mode of the seccomp
   setting. Logs (once) when not running as root that privileges are not
   dropped (development mode), and when seccomp = log. */
void master_service_drop_privileges(struct master_service *service,
				    enum moat_seccomp_profile seccomp_profile);
/* Before the drop: with landlock = yes, confine the process to reading
   beneath ro_paths and changing beneath rw_paths (NULL-terminated lists,
   NULL = none, lib/landlock.h; kept by the caller until then). Not
   called: no Landlock. */
void master_service_set_landlock(struct master_service *service,
				 const char *const *ro_paths,
				 const char *const *rw_paths);

/* The channel to master on MASTER_CHANNEL_FD with the given protocol. */
struct ipc_conn *
master_service_connect_master(struct master_service *service,
			      const char *protocol,
			      ipc_input_callback_t *callback, void *context);

/* Runs the ioloop until master_service_stop(). */
void master_service_run(struct master_service *service);
void master_service_stop(struct master_service *service);

/* Environment value that master must have set; fatal if missing. */
const char *master_service_getenv(const char *name);

#endif
