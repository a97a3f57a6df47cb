#ifndef MOAT_SETTINGS_H
#define MOAT_SETTINGS_H
/* moat.conf: the settings every process shares, their defaults and
   validation. master parses the admin's file once (config-parser.h) and
   hands children the checked result (serialized with
   moat_settings_write(), read back with moat_settings_read_fd()).
   Documented in doc/configuration.md and moat.conf(5); keep them in step. */

#include "mempool.h"
#include "buffer.h"
#include "seccomp-filter.h"

enum moat_fsync_mode {
	MOAT_FSYNC_OPTIMIZED = 0,  /* fsync what an OK promises (default, safe) */
	MOAT_FSYNC_ALWAYS,         /* also fsync index updates */
	MOAT_FSYNC_NEVER,          /* testing only: an OK may be lost on crash */
};

/* ssl: "no" offers no TLS at all; "yes" offers it (STARTTLS and ssl
   listeners) when ssl_cert is set; "required" also refuses every
   authentication before TLS except on a same-host connection. */
enum moat_ssl_mode {
	MOAT_SSL_NO = 0,
	MOAT_SSL_YES,
	MOAT_SSL_REQUIRED,
};

/* RFC 8996: nothing older than TLS 1.2. */
enum moat_ssl_protocol {
	MOAT_SSL_TLSV1_2 = 0,
	MOAT_SSL_TLSV1_3,
};

/* The client certificate subject field that names the user (EXTERNAL). */
enum moat_ssl_cert_username_field {
	MOAT_SSL_CERT_USERNAME_COMMONNAME = 0,
	MOAT_SSL_CERT_USERNAME_EMAILADDRESS,
	MOAT_SSL_CERT_USERNAME_X500UNIQUEIDENTIFIER,
};

/* An inet_listener (TCP) or, with unix set, a unix_listener: a socket
   whose name is its path, relative to base_dir unless absolute. */
struct moat_listener_settings {
	const char *name;          /* "imap", "imaps"; unix: the path */
	bool unix_socket;          /* unix_listener */
	const char *address;       /* "127.0.0.1", "*", "::" */
	unsigned int port;         /* 0 = disabled */
	bool ssl;                  /* implicit TLS (issue: TLS) */
	/* every connection starts with a PROXY protocol header, from an
	   address in haproxy_trusted_networks (lib/haproxy-header.h) */
	bool haproxy;
	/* unix_listener: the socket's mode (octal text) and owner; ""
	   user/group = the master's (root) */
	const char *mode;
	const char *user;
	const char *group;
};

struct moat_service_settings {
	const char *name;          /* "imap-login", "auth", "imap" */
	const char *user;          /* imap: empty (runs as the mail user) */
	const char *chroot;        /* relative to base_dir unless absolute; "" = none */
	unsigned int process_limit;
	unsigned int process_min_avail;
	unsigned int client_limit;
	unsigned int service_count;  /* clients before exit; 0 = unlimited */
	uint64_t vsz_limit;          /* bytes; 0 = unlimited */
	unsigned int idle_kill;      /* seconds; 0 = never */
	struct moat_listener_settings *listeners;
	unsigned int listener_count;
};

struct moat_db_settings {
	const char *driver;        /* "passwd-file" (more later) */
	const char *args;          /* driver arguments, e.g. the file path */
	const char *default_fields;  /* userdb: "uid=moat-vmail home=/x/%u" */
	const char *override_fields;
};

struct moat_settings {
	pool_t pool;               /* owns everything below */

	const char *base_dir;      /* runtime: pid file, empty chroot dir */
	const char *log_path;      /* "" = stderr */
	bool log_debug;
	const char *default_login_user;     /* imap-login's uid */
	const char *default_internal_user;  /* auth's uid */
	const char *protocols;
	/* The group (besides root) that may use master's admin socket
	   (moatadm); "" = root only. */
	const char *admin_group;

	/* mail */
	const char *mail_location;   /* "maildir:~/Maildir" */
	const char *mail_uid;        /* for users without their own uid */
	const char *mail_gid;
	unsigned int first_valid_uid;
	unsigned int last_valid_uid; /* 0 = no upper bound */
	enum moat_fsync_mode mail_fsync;
	/* SPECIAL-USE folders created at login ("" = none), UTF-8 */
	const char *mailbox_drafts;
	const char *mailbox_sent;
	const char *mailbox_trash;
	const char *mailbox_junk;
	const char *mailbox_archive;
	/* Messages one mailbox may hold: COPY, MOVE and APPEND that would
	   go past it answer NO [LIMIT]; 0 = unlimited. */
	unsigned int mailbox_max_messages;

	/* imap */
	uint64_t imap_max_line_length;
	uint64_t imap_max_literal_size;
	uint64_t imap_max_append_size;
	unsigned int imap_max_bad_commands;
	/* Commands answered while the client has not read the replies
	   (they wait in the output buffer); then input is not read until
	   it does: pipelined commands wait in the socket. */
	unsigned int imap_max_pipelined_commands;
	/* SEARCH RETURN (UPDATE) contexts per connection (RFC 5267). */
	unsigned int imap_max_update_contexts;
	/* APPENDs of the process's sessions waiting for one group commit;
	   at this count they are committed before the next one queues. */
	unsigned int imap_commit_batch_max;
	/* Advertise LITERAL- instead of LITERAL+ (RFC 7888 5: a server
	   advertises one): non-synchronizing literals only up to 4096. */
	bool imap_literal_minus;
	unsigned int imap_idle_timeout;     /* seconds without a command */
	/* NOTIFY (RFC 5465 5.8): unread output past this many bytes turns
	   a session's NOTIFY off with NOTIFICATIONOVERFLOW */
	uint64_t imap_notify_max_buffer;
	/* NOTIFY: folders per imap process whose other writers are watched
	   (inotify), shared by all its sessions (0 = none) */
	unsigned int imap_notify_max_watches;
	unsigned int imap_process_linger;   /* seconds after the last connection */
	/* Index handles kept open for STATUS per imap process (0 = none). */
	unsigned int imap_status_cache_mailboxes;
	uint64_t imap_fetch_text_memo;
	uint64_t imap_thread_cache_size;

	/* delivery (lmtp, moat-lda) */
	uint64_t message_size_limit;        /* bytes; 0 = unlimited */
	const char *recipient_delimiter;    /* "+": user+detail@domain */
	bool lmtp_save_to_detail_mailbox;
	/* The userdb key of a recipient address, after the detail is
	   removed: %u the address, %n its local part, %d its domain; %L
	   lowercases (Dovecot's auth_username_format syntax). */
	const char *lmtp_username_format;
	const char *lmtp_hostname;          /* "" = the system's name */
	/* Most recipients one LMTP transaction accepts (452 4.5.3 after). */
	unsigned int lmtp_max_recipients;
	/* Deliveries per folder the user's imap process remembers, and
	   reads back from the folder's newest messages when it first
	   delivers there, to know a retry whose answer was lost. */
	unsigned int lmtp_retry_window;

	/* quota (RFC 9208): defaults for users whose userdb entry has no
	   quota_storage / quota_messages field; 0 = no limit */
	uint64_t quota_storage;
	unsigned int quota_messages;
	/* "10%" of the storage limit, or a size: how far one save may go
	   over the limit from below it */
	const char *quota_grace;
	/* "80 95": percentages of a limit whose crossing sends the user a
	   warning message */
	const char *quota_warning;
	/* a full mailbox is a temporary failure for LMTP (452 4.2.2) and
	   moat-lda (75) instead of a bounce (552 5.2.2, 77) */
	bool quota_full_tempfail;

	/* login / auth */
	unsigned int login_timeout;         /* seconds to authenticate */
	/* Bytes of one pre-auth command, its literals included. */
	uint64_t login_max_command_size;
	bool disable_plaintext_auth;        /* loopback counts as secured */
	const char *auth_mechanisms;        /* "plain login" */
	/* Milliseconds: the penalty after the first failure (auth). */
	unsigned int auth_failure_delay;
	/* Addresses in the penalty table (auth) and in master's copy. */
	unsigned int auth_penalty_max_ips;
	/* The password verification cache (auth/auth-cache.h): bytes (0 =
	   none) and seconds a right and a wrong password are remembered. */
	uint64_t auth_cache_size;
	unsigned int auth_cache_ttl;
	unsigned int auth_cache_negative_ttl;
	/* Connection limits (0 = unlimited, except imap_max_auth_attempts):
	   per user and remote IP, per user (both in the user's imap
	   process), pre-auth per remote IP in each imap-login process, and
	   failed authentications per connection. */
	unsigned int mail_max_userip_connections;
	unsigned int mail_max_user_connections;
	unsigned int login_max_connections_per_ip;
	unsigned int imap_max_auth_attempts;
	/* While an imap-login process has no connection to auth (a reload
	   or a crash of auth), at most this many of its LOGIN/AUTHENTICATE
	   requests wait for the new one, each at most
	   login_auth_park_timeout seconds (0 = none wait). */
	unsigned int login_auth_park_limit;
	unsigned int login_auth_park_timeout;
	/* "10.0.0.0/8 2001:db8::/32 192.0.2.1": clients there count as
	   secured, are not penalised, and may pass the real client address
	   in ID x-originating-ip (proxies, webmail). */
	const char *login_trusted_networks;
	/* The load balancers whose PROXY headers a haproxy = yes listener
	   accepts (same syntax); nobody else may connect to such a
	   listener. The header must arrive within haproxy_timeout secs. */
	const char *haproxy_trusted_networks;
	unsigned int haproxy_timeout;
	/* OpenMetrics from master: a unix socket (relative to base_dir
	   unless absolute; "" = none) and a 127.0.0.1 port (0 = none). */
	const char *metrics_listener;
	unsigned int metrics_port;

	/* TLS (imap-login). ssl_cert, ssl_key and ssl_ca hold PEM text (the
	   config says "ssl_cert = </path": master reads the file). ssl_key is
	   secret: moat_settings_write() leaves it out; only the copy of the
	   process that signs (key-signer, or imap-login with
	   ssl_key_isolation = no) has it (moat_settings_write_secrets()). */
	enum moat_ssl_mode ssl;
	const char *ssl_cert;
	const char *ssl_key;
	const char *ssl_ca;                 /* "" = no client certificates */
	bool ssl_verify_client_cert;
	enum moat_ssl_protocol ssl_min_protocol;
	const char *ssl_cipher_list;        /* TLS 1.2; "" = OpenSSL's default */
	const char *ssl_cipher_suites;      /* TLS 1.3; "" = OpenSSL's default */
	bool ssl_prefer_server_ciphers;
	/* Hand logged-in TLS sessions to imap as kernel TLS sockets where the
	   kernel and OpenSSL offload both directions (lib/ktls.h). */
	bool ssl_ktls;
	/* yes: imap-login gets only ssl_cert and a socket to the key-signer
	   process, which holds ssl_key and signs (doc/security.md); no: the
	   key is loaded into imap-login as before. */
	bool ssl_key_isolation;
	enum moat_ssl_cert_username_field ssl_cert_username_field;
	/* Syscall allowlists of the children (lib/seccomp-filter.h). */
	enum moat_seccomp_mode seccomp;
	/* Landlock for imap: only its own home and mail root (lib/landlock.h). */
	bool landlock;

	struct moat_service_settings *services;
	unsigned int service_count;
	struct moat_db_settings *passdbs;
	unsigned int passdb_count;
	struct moat_db_settings *userdbs;
	unsigned int userdb_count;
};

/* Bounds on the lists a file can create. */
#define MOAT_SETTINGS_LISTENERS_MAX 16  /* listeners per service */
/* A unix_listener path (relative or absolute): sun_path is 108 bytes,
   and base_dir comes in front of a relative one. */
#define MOAT_SETTINGS_UNIX_PATH_MAX 100
/* quota_warning percentages */
#define MOAT_SETTINGS_QUOTA_WARNINGS_MAX 8
#define MOAT_SETTINGS_DBS_MAX 16        /* passdb blocks, and userdb blocks */
/* Error strings returned by the functions below live in one thread-local
   buffer of this size: valid until the next failing moat_settings_*()
   call in the same thread (copy it to keep it). Longer ones are cut. */
#define MOAT_SETTINGS_ERROR_MAX 1024
/* login_trusted_networks: words in the list, length of one word. */
#define MOAT_SETTINGS_NETWORKS_MAX 64
#define MOAT_SETTINGS_NET_WORD_MAX 64

/* Master's entry point: moat_settings_parse() + moat_settings_validate().
   On error returns -1 and *error_r is "FILE:LINE: message" (for
   whole-config problems such as "no passdb configured", "FILE: message"). */
int moat_settings_read(const char *path, struct moat_settings **set_r,
		       const char **error_r);
/* Parse path (with !include and <file) over the built-in defaults and
   check every value and section, but not what only a complete config must
   have (see moat_settings_validate()): for tests and partial files. */
int moat_settings_parse(const char *path, struct moat_settings **set_r,
			const char **error_r);
/* moat_settings_parse() for a tool that runs as a mail user (moat-lda):
   a "<file" value it may not read (ssl_key) is empty instead of an error.
   Such settings are for the servers only. */
int moat_settings_parse_unprivileged(const char *path,
				     struct moat_settings **set_r,
				     const char **error_r);
/* The same as moat_settings_parse() from an open fd (the memfd master
   hands a child), read with pread from offset 0; the fd's offset is left
   alone. name is used in messages. Master validated the settings before
   writing them, so this does not require a passdb (imap-login has no use
   for one). */
int moat_settings_read_fd(int fd, const char *name,
			  struct moat_settings **set_r, const char **error_r);
/* Checks that need the whole config: at least one passdb, uid range,
   per-service limits, listener clashes. Returns 0 or -1 with *error_r. */
int moat_settings_validate(const struct moat_settings *set,
			   const char **error_r);
/* Built-in defaults only (used by tests and moat -a without a file). */
struct moat_settings *moat_settings_defaults(void);
void moat_settings_free(struct moat_settings **set);

/* Serialize in moat.conf syntax: all settings, or only those that differ
   from the defaults (moat -n). Returns -1 if out would overflow. */
int moat_settings_write(const struct moat_settings *set, bool non_default_only,
			buffer_t *out);

/* Append the secret settings (ssl_key) in moat.conf syntax, for the one
   child that needs them. Returns -1 if out would overflow. */
int moat_settings_write_secrets(const struct moat_settings *set, buffer_t *out);

/* True if every setting, service, listener and db of a and b is equal. */
bool moat_settings_equal(const struct moat_settings *a,
			 const struct moat_settings *b);

/* NULL if there is no such service block. */
const struct moat_service_settings *
moat_settings_get_service(const struct moat_settings *set, const char *name);
/* The user a service runs as: its own user setting, else
   default_login_user (imap-login) or default_internal_user (auth); "" for
   imap, which runs as the mail user. lmtp's default is its own user,
   moat-lmtp. */
const char *moat_settings_service_user(const struct moat_settings *set,
				       const struct moat_service_settings *service);

/* True if ip (text IPv4 or IPv6; ::ffff:a.b.c.d counts as IPv4) is in
   networks, a list in login_trusted_networks' syntax (space or comma
   separated ADDRESS or ADDRESS/BITS; malformed words never match). */
bool moat_settings_net_match(const char *networks, const char *ip);

/* True if protocols (the setting) lists name ("imap", "lmtp"). */
bool moat_settings_has_protocol(const struct moat_settings *set,
				const char *name);
/* quota_grace for a storage limit: bytes. Its text was checked. */
uint64_t moat_settings_quota_grace(const struct moat_settings *set,
				   uint64_t storage_limit);
/* quota_warning as percentages (1..100), ascending; returns how many (at
   most max). */
unsigned int moat_settings_quota_warnings(const struct moat_settings *set,
					  unsigned int *percents,
					  unsigned int max);
/* A unix_listener's mode as a number; its text was checked. */
unsigned int moat_listener_mode(const struct moat_listener_settings *l);

#endif
