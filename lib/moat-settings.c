/* moat.conf schema: every setting with its type and default, the service,
   inet_listener, passdb and userdb sections, validation, and writing the
   settings back in moat.conf syntax. The syntax itself is
   config-parser.c's. doc/configuration.md documents every entry here. */

#include "lib.h"
#include "strfuncs.h"
#include "config-parser.h"
#include "settings-def.h"
#include "moat-settings.h"

#include <arpa/inet.h>
#include <strings.h>

#ifndef MOAT_RUNDIR
#  error "MOAT_RUNDIR must be defined by the build (Makefile.am)"
#endif

#define MOAT_SERVICE_LOGIN "imap-login"

_Static_assert(sizeof(enum moat_fsync_mode) == sizeof(unsigned int),
	       "SET_ENUM stores enums as unsigned int");
_Static_assert(sizeof(enum moat_ssl_mode) == sizeof(unsigned int) &&
	       sizeof(enum moat_ssl_protocol) == sizeof(unsigned int) &&
	       sizeof(enum moat_seccomp_mode) == sizeof(unsigned int),
	       "SET_ENUM stores enums as unsigned int");

static int check_protocols(pool_t pool, const char *value,
			   const char **error_r);
static int check_mechanisms(pool_t pool, const char *value,
			    const char **error_r);
static int check_mail_location(pool_t pool, const char *value,
			       const char **error_r);
static int check_address(pool_t pool, const char *value, const char **error_r);
static int check_pem(pool_t pool, const char *value, const char **error_r);
static int check_networks(pool_t pool, const char *value,
			  const char **error_r);
static int check_metrics_listener(pool_t pool, const char *value,
				  const char **error_r);
static int check_mailbox_name(pool_t pool, const char *value,
			      const char **error_r);
static int check_username_format(pool_t pool, const char *value,
				 const char **error_r);
static int check_mode(pool_t pool, const char *value, const char **error_r);
static int check_delimiter(pool_t pool, const char *value,
			   const char **error_r);
static int check_grace(pool_t pool, const char *value, const char **error_r);
static int check_percents(pool_t pool, const char *value,
			  const char **error_r);

static const char *const fsync_values[] = {
	"optimized", "always", "never", NULL
};
/* In the order of enum moat_ssl_mode and enum moat_ssl_protocol. */
static const char *const ssl_values[] = { "no", "yes", "required", NULL };
static const char *const ssl_protocol_values[] = {
	"TLSv1.2", "TLSv1.3", NULL
};
/* In the order of enum moat_seccomp_mode. */
static const char *const seccomp_values[] = { "no", "yes", "log", NULL };
/* In the order of enum moat_ssl_cert_username_field. */
static const char *const ssl_cert_username_values[] = {
	"commonName", "emailAddress", "x500UniqueIdentifier", NULL
};

#define GLOBAL(n, t, d, ...) { .name = #n, .type = (t), \
	.offset = offsetof(struct moat_settings, n), .default_value = (d), \
	__VA_ARGS__ }
static const struct setting_def global_defs[] = {
	GLOBAL(base_dir, SET_STRING, MOAT_RUNDIR,
	       .flags = SET_FLAG_NONEMPTY | SET_FLAG_ABSPATH),
	GLOBAL(log_path, SET_STRING, "", .flags = SET_FLAG_ABSPATH),
	GLOBAL(log_debug, SET_BOOL, "no"),
	GLOBAL(default_login_user, SET_STRING, "moat-login",
	       .flags = SET_FLAG_NONEMPTY),
	GLOBAL(default_internal_user, SET_STRING, "moat-auth",
	       .flags = SET_FLAG_NONEMPTY),
	GLOBAL(protocols, SET_STRING, "imap", .check = check_protocols),
	GLOBAL(admin_group, SET_STRING, ""),
	GLOBAL(mail_location, SET_STRING, "maildir:~/Maildir",
	       .check = check_mail_location),
	GLOBAL(mail_uid, SET_STRING, ""),
	GLOBAL(mail_gid, SET_STRING, ""),
	GLOBAL(first_valid_uid, SET_UINT, "500"),
	GLOBAL(last_valid_uid, SET_UINT, "0"),
	GLOBAL(mail_fsync, SET_ENUM, "optimized", .enum_values = fsync_values),
	GLOBAL(mailbox_drafts, SET_STRING, "Drafts", .check = check_mailbox_name),
	GLOBAL(mailbox_sent, SET_STRING, "Sent", .check = check_mailbox_name),
	GLOBAL(mailbox_trash, SET_STRING, "Trash", .check = check_mailbox_name),
	GLOBAL(mailbox_junk, SET_STRING, "Junk", .check = check_mailbox_name),
	GLOBAL(mailbox_archive, SET_STRING, "Archive",
	       .check = check_mailbox_name),
	/* far above real folders; bounds what COPY onto itself can grow
	   (0 = unlimited) */
	GLOBAL(mailbox_max_messages, SET_UINT, "1000000"),
	/* below 1k not even a LOGIN with a long password fits */
	GLOBAL(imap_max_line_length, SET_SIZE, "64k", .min = 1024),
	GLOBAL(imap_max_literal_size, SET_SIZE, "64k", .min = 1),
	GLOBAL(imap_max_append_size, SET_SIZE, "64M", .min = 1),
	GLOBAL(imap_max_bad_commands, SET_UINT, "20", .min = 1),
	/* mbsync and offlineimap keep a few dozen commands in flight */
	GLOBAL(imap_max_pipelined_commands, SET_UINT, "50", .min = 1,
	       .max = 100000),
	/* RFC 5267 4.3.1: at least one per client; each keeps a search
	   program and its result as UID ranges (imap/imap-context.h) */
	GLOBAL(imap_max_update_contexts, SET_UINT, "10", .min = 1,
	       .max = 1000),
	/* APPENDs committed together (imap-commit.h): each waiting one
	   keeps a staged set and an fd; a client has one at a time */
	GLOBAL(imap_commit_batch_max, SET_UINT, "64", .min = 1, .max = 1024),
	GLOBAL(imap_literal_minus, SET_BOOL, "no"),
	GLOBAL(imap_idle_timeout, SET_TIME, "30 mins", .min = 5),
	/* NOTIFY's events a client leaves unread; the output buffer
	   (CLIENT_OUTPUT_BUFFER_MAX, 1 MiB) must keep room above it for
	   the reply it is in the middle of */
	GLOBAL(imap_notify_max_buffer, SET_SIZE, "256k", .min = 1024,
	       .max = 512 * 1024),
	/* each watched folder is two inotify watches (cur/, new/) of the
	   uid's max_user_watches, and a few hundred bytes */
	GLOBAL(imap_notify_max_watches, SET_UINT, "1000", .max = 100000),
	GLOBAL(imap_process_linger, SET_TIME, "30 secs"),
	/* unpacked cache texts kept for the user's sessions
	   (imap/imap-text-memo.h); 0: none */
	GLOBAL(imap_fetch_text_memo, SET_SIZE, "256k", .max = 64 * 1024 * 1024),
	/* the last THREAD answer (imap/imap-thread-cache.h); 0: none */
	GLOBAL(imap_thread_cache_size, SET_SIZE, "1M", .max = 64 * 1024 * 1024),
	/* clients poll STATUS of every folder; each handle is a log fd
	   and a small mapping (MAILBOX_STATUS_CACHE_MAX_HANDLES) */
	GLOBAL(imap_status_cache_mailboxes, SET_UINT, "64", .max = 1024),
	/* as imap_max_append_size: what a mailbox takes in one message */
	GLOBAL(message_size_limit, SET_SIZE, "64M"),
	GLOBAL(recipient_delimiter, SET_STRING, "+", .check = check_delimiter),
	GLOBAL(lmtp_save_to_detail_mailbox, SET_BOOL, "no"),
	GLOBAL(lmtp_username_format, SET_STRING, "%Lu",
	       .flags = SET_FLAG_NONEMPTY, .check = check_username_format),
	GLOBAL(lmtp_hostname, SET_STRING, ""),
	/* RFC 5321 4.5.3.1.8: at least 100 recipients must be accepted */
	GLOBAL(lmtp_max_recipients, SET_UINT, "1000", .min = 100,
	       .max = 100000),
	/* each remembered delivery is 40 bytes, per folder (up to 32) */
	GLOBAL(lmtp_retry_window, SET_UINT, "1000", .min = 1, .max = 100000),
	GLOBAL(quota_storage, SET_SIZE, "0"),
	GLOBAL(quota_messages, SET_UINT, "0"),
	/* Dovecot's default: a big message to a nearly full mailbox fits */
	GLOBAL(quota_grace, SET_STRING, "10%", .check = check_grace),
	GLOBAL(quota_warning, SET_STRING, "", .check = check_percents),
	GLOBAL(quota_full_tempfail, SET_BOOL, "no"),
	GLOBAL(login_timeout, SET_TIME, "60 secs", .min = 1),
	/* A pre-auth command's line and literals together: an OAUTHBEARER
	   initial response of 8 KiB (SASL's limit in auth) is 11 KiB of
	   base64; LOGIN and ID need far less. Below 1k not even LOGIN with
	   a long password fits. */
	GLOBAL(login_max_command_size, SET_SIZE, "16k", .min = 1024),
	GLOBAL(disable_plaintext_auth, SET_BOOL, "yes"),
	GLOBAL(auth_mechanisms, SET_STRING, "plain login",
	       .flags = SET_FLAG_NONEMPTY, .check = check_mechanisms),
	GLOBAL(auth_failure_delay, SET_TIME_MSECS, "2 secs"),
	/* Addresses whose penalty auth tracks, and master keeps across a
	   restart of auth: ~250 bytes each in the two, 1 MiB by default.
	   auth searches it linearly per authentication, master per change
	   of a penalised address: 65536 keeps that under a millisecond. */
	GLOBAL(auth_penalty_max_ips, SET_UINT, "4096", .min = 1,
	       .max = 65536),
	/* ~21,800 verifications; the TTLs are Dovecot's defaults */
	GLOBAL(auth_cache_size, SET_SIZE, "1M"),
	GLOBAL(auth_cache_ttl, SET_TIME, "1 hour"),
	GLOBAL(auth_cache_negative_ttl, SET_TIME, "1 hour"),
	/* A household or office behind one NAT: phones, desktops and webmail
	   of one user share an address; 0 = unlimited. */
	GLOBAL(mail_max_userip_connections, SET_UINT, "50"),
	GLOBAL(mail_max_user_connections, SET_UINT, "200"),
	GLOBAL(login_max_connections_per_ip, SET_UINT, "100"),
	GLOBAL(imap_max_auth_attempts, SET_UINT, "3", .min = 1),
	/* auth restarts within a second on a reload; a crash is restarted
	   at once the first time. 100 requests of a few KiB each. */
	GLOBAL(login_auth_park_limit, SET_UINT, "100", .max = 100000),
	GLOBAL(login_auth_park_timeout, SET_TIME, "10 secs", .min = 1,
	       .max = 300),
	GLOBAL(login_trusted_networks, SET_STRING, "",
	       .check = check_networks),
	GLOBAL(haproxy_trusted_networks, SET_STRING, "",
	       .check = check_networks),
	/* Dovecot's default: a load balancer writes the header at once. */
	GLOBAL(haproxy_timeout, SET_TIME, "3 secs", .min = 1, .max = 300),
	GLOBAL(metrics_listener, SET_STRING, "metrics",
	       .check = check_metrics_listener),
	GLOBAL(metrics_port, SET_UINT, "0", .max = 65535),
	GLOBAL(ssl, SET_ENUM, "yes", .enum_values = ssl_values),
	GLOBAL(ssl_cert, SET_STRING, "", .check = check_pem),
	GLOBAL(ssl_key, SET_STRING, "", .flags = SET_FLAG_SECRET,
	       .check = check_pem),
	GLOBAL(ssl_ca, SET_STRING, "", .check = check_pem),
	GLOBAL(ssl_verify_client_cert, SET_BOOL, "no"),
	GLOBAL(ssl_min_protocol, SET_ENUM, "TLSv1.2",
	       .enum_values = ssl_protocol_values),
	GLOBAL(ssl_cipher_list, SET_STRING, ""),
	GLOBAL(ssl_cipher_suites, SET_STRING, ""),
	GLOBAL(ssl_prefer_server_ciphers, SET_BOOL, "no"),
	GLOBAL(ssl_ktls, SET_BOOL, "no"),
	/* yes: the key-signer process holds ssl_key and signs handshakes
	   for imap-login, which never sees the key (doc/security.md) */
	GLOBAL(ssl_key_isolation, SET_BOOL, "yes"),
	GLOBAL(ssl_cert_username_field, SET_ENUM, "commonName",
	       .enum_values = ssl_cert_username_values),
	GLOBAL(seccomp, SET_ENUM, "yes", .enum_values = seccomp_values),
	GLOBAL(landlock, SET_BOOL, "yes"),
};

#define SERVICE(n, t, ...) { .name = #n, .type = (t), \
	.offset = offsetof(struct moat_service_settings, n), __VA_ARGS__ }
static const struct setting_def service_defs[] = {
	SERVICE(user, SET_STRING),
	SERVICE(chroot, SET_STRING),
	SERVICE(process_limit, SET_UINT, .min = 1),
	SERVICE(process_min_avail, SET_UINT),
	SERVICE(client_limit, SET_UINT, .min = 1),
	SERVICE(service_count, SET_UINT),
	SERVICE(vsz_limit, SET_SIZE),
	SERVICE(idle_kill, SET_TIME),
};

#define LISTENER(n, t, ...) { .name = #n, .type = (t), \
	.offset = offsetof(struct moat_listener_settings, n), __VA_ARGS__ }
static const struct setting_def listener_defs[] = {
	LISTENER(address, SET_STRING, .flags = SET_FLAG_NONEMPTY,
		 .check = check_address),
	LISTENER(port, SET_UINT, .max = 65535),
	LISTENER(ssl, SET_BOOL),
	LISTENER(haproxy, SET_BOOL),
};
static const struct setting_def unix_listener_defs[] = {
	LISTENER(mode, SET_STRING, .check = check_mode),
	LISTENER(user, SET_STRING),
	LISTENER(group, SET_STRING),
};

#define DB(n) { .name = #n, .type = SET_STRING, \
	.offset = offsetof(struct moat_db_settings, n) }
static const struct setting_def db_defs[] = {
	DB(driver), DB(args), DB(default_fields), DB(override_fields),
};

/* Drivers auth implements; add one here when auth learns it. */
static const char *const passdb_drivers[] = {
	"passwd-file",
	"oauth2-file",   /* bearer tokens for OAUTHBEARER/XOAUTH2 only */
	"shadow",        /* system users: /etc/shadow, via auth-worker */
#ifdef HAVE_PAM
	"pam",           /* args = the PAM service name, via auth-worker */
#endif
	NULL
};
static const char *const userdb_drivers[] = {
	"passwd-file",
	"passwd",        /* system users: getpwnam(), via auth-worker */
	NULL
};

#define VSZ_DEFAULT (256ULL * 1024 * 1024)
/* The listeners array is never written through: defaults are copied. */
static const struct moat_listener_settings login_listener_defaults[] = {
	{ .name = "imap", .address = "*", .port = 143, .ssl = false,
	  .mode = "", .user = "", .group = "" },
	{ .name = "imaps", .address = "*", .port = 993, .ssl = true,
	  .mode = "", .user = "", .group = "" },
};
/* $base_dir/lmtp, writable by anyone as Dovecot's: LMTP does not
   authenticate the MTA, so who may deliver is the socket's mode. */
static const struct moat_listener_settings lmtp_listener_defaults[] = {
	{ .name = "lmtp", .unix_socket = true, .address = "", .mode = "0666",
	  .user = "", .group = "" },
};
static const struct moat_service_settings service_defaults[] = {
	{ .name = MOAT_SERVICE_LOGIN, .user = "", .chroot = "empty",
	  .process_limit = 64, .process_min_avail = 1, .client_limit = 1000,
	  .vsz_limit = VSZ_DEFAULT,
	  .listeners = (struct moat_listener_settings *)login_listener_defaults,
	  .listener_count = N_ELEMENTS(login_listener_defaults) },
	/* one auth process, always running */
	{ .name = "auth", .user = "", .chroot = "", .process_limit = 1,
	  .process_min_avail = 1, .client_limit = 1000,
	  .vsz_limit = VSZ_DEFAULT },
	{ .name = "imap", .user = "", .chroot = "", .process_limit = 1024,
	  .client_limit = 1000, .vsz_limit = VSZ_DEFAULT },
	/* root helpers for PAM/shadow/passwd lookups, one request at a
	   time each; only started when such a passdb/userdb exists */
	{ .name = "auth-worker", .user = "", .chroot = "", .process_limit = 4,
	  .client_limit = 1, .vsz_limit = VSZ_DEFAULT },
	/* runs only with "lmtp" in protocols; holds no files, so its own
	   uid and the empty chroot (doc/security.md) */
	{ .name = "lmtp", .user = "moat-lmtp", .chroot = "empty",
	  .process_limit = 16, .process_min_avail = 1, .client_limit = 100,
	  .vsz_limit = VSZ_DEFAULT,
	  .listeners = (struct moat_listener_settings *)lmtp_listener_defaults,
	  .listener_count = N_ELEMENTS(lmtp_listener_defaults) },
	/* holds ssl_key with ssl_key_isolation = yes and signs for every
	   imap-login; one process, default_internal_user, the empty chroot */
	{ .name = "key-signer", .user = "", .chroot = "empty",
	  .process_limit = 1, .process_min_avail = 1, .client_limit = 1000,
	  .vsz_limit = VSZ_DEFAULT },
};
#define SERVICE_COUNT N_ELEMENTS(service_defaults)

enum section_kind {
	SECTION_SERVICE, SECTION_LISTENER, SECTION_PASSDB, SECTION_USERDB,
};

struct settings_parser {
	struct moat_settings *set;
	enum section_kind stack[2];     /* service > inet_listener at most */
	unsigned int depth;
	struct moat_service_settings *service;  /* the open service block */
	uint32_t listeners_seen;        /* bit per listener in that block */
	unsigned int listener_idx;      /* the open inet_listener */
	bool listener_new, listener_port_set;
	struct moat_db_settings *db;    /* the open passdb/userdb */
	bool services_seen[SERVICE_COUNT];
};

/* See MOAT_SETTINGS_ERROR_MAX in the header for the lifetime. */
static _Thread_local char settings_error_buf[MOAT_SETTINGS_ERROR_MAX];

static const char *settings_error(const char *msg)
{
	snprintf(settings_error_buf, sizeof(settings_error_buf), "%s", msg);
	return settings_error_buf;
}

static int check_words(pool_t pool, const char *value,
		       const char *const *allowed, const char **error_r)
{
	const char *p = value;

	while (*p != '\0') {
		size_t len = strcspn(p, " \t");
		bool found = len == 0;
		for (unsigned int i = 0; allowed[i] != NULL && !found; i++) {
			found = strlen(allowed[i]) == len &&
				strncasecmp(p, allowed[i], len) == 0;
		}
		if (!found) {
			*error_r = p_strdup_printf(pool, "unknown word '%.*s'",
						   (int)len, p);
			return -1;
		}
		p += len + (p[len] != '\0' ? 1 : 0);
	}
	return 0;
}

static int check_protocols(pool_t pool, const char *value, const char **error_r)
{
	static const char *const protocols[] = { "imap", "lmtp", NULL };
	return check_words(pool, value, protocols, error_r);
}

static int check_mechanisms(pool_t pool, const char *value,
			    const char **error_r)
{
	static const char *const mechanisms[] = {
		"plain", "login", "scram-sha-1", "scram-sha-1-plus",
		"scram-sha-256", "scram-sha-256-plus", "cram-md5",
		"oauthbearer", "xoauth2", "external", NULL
	};
	return check_words(pool, value, mechanisms, error_r);
}

static int check_mail_location(pool_t pool ATTR_UNUSED, const char *value,
			       const char **error_r)
{
	const char *path;

	if (!str_begins(value, "maildir:", &path) || path[0] == '\0') {
		*error_r = "only maildir:PATH is supported";
		return -1;
	}
	return 0;
}

static int check_address(pool_t pool ATTR_UNUSED, const char *value,
			 const char **error_r)
{
	unsigned char addr[16];

	if (strcmp(value, "*") == 0 || strcmp(value, "::") == 0 ||
	    inet_pton(AF_INET, value, addr) == 1 ||
	    inet_pton(AF_INET6, value, addr) == 1)
		return 0;
	*error_r = "not an IP address, * or ::";
	return -1;
}

/* ssl_cert/ssl_key/ssl_ca hold the file's text ("ssl_cert = </path"). A
   value without a PEM header is almost surely a path written without '<'.
   The message never repeats the value: it may be key material. */
/* A mailbox name as moat stores it (index/mailbox-name.h has the full
   rules; lib/ can't use index/): no empty or dot levels, no control
   characters or LIST wildcards. "" is allowed (no such folder). */
static int check_mailbox_name(pool_t pool ATTR_UNUSED, const char *value,
			      const char **error_r)
{
	const char *p = value;

	if (value[0] == '\0')
		return 0;
	for (; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '*' ||
		    *p == '%')
			break;
	}
	if (*p != '\0' || value[0] == '/' || p[-1] == '/' ||
	    strstr(value, "//") != NULL || strcmp(value, ".") == 0 ||
	    strcmp(value, "..") == 0 || strncmp(value, "./", 2) == 0 ||
	    strncmp(value, "../", 3) == 0 || strstr(value, "/./") != NULL ||
	    strstr(value, "/../") != NULL ||
	    (p - value >= 2 && strcmp(p - 2, "/.") == 0) ||
	    (p - value >= 3 && strcmp(p - 3, "/..") == 0)) {
		*error_r = "not a valid mailbox name";
		return -1;
	}
	return 0;
}

/* %u %n %d and %L before any of them, %% for a '%'. */
static int check_username_format(pool_t pool ATTR_UNUSED, const char *value,
				 const char **error_r)
{
	for (const char *p = value; *p != '\0'; p++) {
		if (*p != '%')
			continue;
		if (p[1] == 'L')
			p++;
		if (p[1] != 'u' && p[1] != 'n' && p[1] != 'd' &&
		    (p[1] != '%' || p[0] == 'L')) {
			*error_r = "unknown variable (known: %u %n %d, %Lu ...)";
			return -1;
		}
		p++;
	}
	return 0;
}

static int check_mode(pool_t pool ATTR_UNUSED, const char *value,
		      const char **error_r)
{
	size_t len = strlen(value);

	if (len < 3 || len > 4 || strspn(value, "01234567") != len ||
	    (len == 4 && value[0] != '0')) {
		*error_r = "not an octal mode such as 0660";
		return -1;
	}
	return 0;
}

/* One byte (RFC 5233's usual '+' or '-'), or "" for none. */
static int check_delimiter(pool_t pool ATTR_UNUSED, const char *value,
			   const char **error_r)
{
	if (value[0] == '\0')
		return 0;
	if (value[1] != '\0' || strchr("@<>\\\" \t", value[0]) != NULL ||
	    (unsigned char)value[0] < 0x20 || (unsigned char)value[0] >= 0x7f) {
		*error_r = "must be one character other than @ < > \\ \" and space";
		return -1;
	}
	return 0;
}

/* "N%" (0..100) or a size. */
static int check_grace(pool_t pool ATTR_UNUSED, const char *value,
		       const char **error_r)
{
	size_t len = strlen(value);
	uint64_t num;

	if (len > 0 && value[len - 1] == '%') {
		char num_str[8];
		if (len < 2 || len > 4 || strspn(value, "0123456789") != len - 1) {
			*error_r = "not a percentage (0%..100%) or a size";
			return -1;
		}
		memcpy(num_str, value, len - 1);
		num_str[len - 1] = '\0';
		if (str_to_uint64(num_str, &num) < 0 || num > 100) {
			*error_r = "not a percentage (0%..100%) or a size";
			return -1;
		}
		return 0;
	}
	return config_parse_size(value, &num, error_r);
}

/* Words of 1..100, at most MOAT_SETTINGS_QUOTA_WARNINGS_MAX. */
static int check_percents(pool_t pool ATTR_UNUSED, const char *value,
			  const char **error_r)
{
	const char *p = value;
	unsigned int count = 0;

	while (*p != '\0') {
		size_t len = strcspn(p, " \t");
		char word[8];
		unsigned int num;
		if (len > 0) {
			if (len >= sizeof(word) ||
			    ++count > MOAT_SETTINGS_QUOTA_WARNINGS_MAX) {
				*error_r = "too many or too long percentages";
				return -1;
			}
			memcpy(word, p, len);
			word[len] = '\0';
			if (word[len - 1] == '%')
				word[len - 1] = '\0';
			if (str_to_uint(word, &num) < 0 || num < 1 || num > 100) {
				*error_r = "percentages must be 1..100";
				return -1;
			}
		}
		p += len + (p[len] != '\0' ? 1 : 0);
	}
	return 0;
}

static int check_pem(pool_t pool ATTR_UNUSED, const char *value,
		     const char **error_r)
{
	if (value[0] == '\0' || strstr(value, "-----BEGIN ") != NULL)
		return 0;
	*error_r = "not PEM data (write NAME = </path/to/file.pem)";
	return -1;
}

/* One "ADDR" or "ADDR/BITS" word of a network list. */
struct net_word {
	int family;
	unsigned char addr[16];
	unsigned int bits;
};

static int net_word_parse(const char *word, size_t len, struct net_word *net_r)
{
	char text[MOAT_SETTINGS_NET_WORD_MAX + 1];
	const char *slash;
	unsigned int max_bits;

	if (len == 0 || len > MOAT_SETTINGS_NET_WORD_MAX)
		return -1;
	memcpy(text, word, len);
	text[len] = '\0';
	slash = strchr(text, '/');
	if (slash != NULL)
		text[slash - text] = '\0';
	if (inet_pton(AF_INET, text, net_r->addr) == 1) {
		net_r->family = AF_INET;
		max_bits = 32;
	} else if (inet_pton(AF_INET6, text, net_r->addr) == 1) {
		net_r->family = AF_INET6;
		max_bits = 128;
	} else {
		return -1;
	}
	net_r->bits = max_bits;
	if (slash != NULL &&
	    (str_to_uint(slash + 1, &net_r->bits) < 0 || net_r->bits > max_bits))
		return -1;
	return 0;
}

static bool net_word_match(const struct net_word *net, int family,
			   const unsigned char *addr)
{
	unsigned int full = net->bits / 8, rest = net->bits % 8;

	if (family != net->family || memcmp(net->addr, addr, full) != 0)
		return false;
	if (rest == 0)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (net->addr[full] & mask) == (addr[full] & mask);
}

static int check_networks(pool_t pool, const char *value,
			  const char **error_r)
{
	const char *p = value;
	unsigned int count = 0;
	struct net_word net;

	while (*p != '\0') {
		size_t len = strcspn(p, " \t,");
		if (len > 0 && (net_word_parse(p, len, &net) < 0 ||
				++count > MOAT_SETTINGS_NETWORKS_MAX)) {
			*error_r = count > MOAT_SETTINGS_NETWORKS_MAX ?
				"too many networks" :
				p_strdup_printf(pool, "'%.*s' is not ADDRESS or "
						"ADDRESS/BITS", (int)len, p);
			return -1;
		}
		p += len + (p[len] != '\0' ? 1 : 0);
	}
	return 0;
}

bool moat_settings_net_match(const char *networks, const char *ip)
{
	unsigned char addr[16];
	int family = AF_INET;
	struct net_word net;
	const char *p = networks;

	if (inet_pton(AF_INET, ip, addr) != 1) {
		if (inet_pton(AF_INET6, ip, addr) != 1)
			return false;
		family = AF_INET6;
		/* ::ffff:a.b.c.d matches IPv4 networks as a.b.c.d */
		static const unsigned char mapped[12] =
			{ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (memcmp(addr, mapped, sizeof(mapped)) == 0) {
			memmove(addr, addr + 12, 4);
			family = AF_INET;
		}
	}
	while (*p != '\0') {
		size_t len = strcspn(p, " \t,");
		if (len > 0 && net_word_parse(p, len, &net) == 0 &&
		    net_word_match(&net, family, addr))
			return true;
		p += len + (p[len] != '\0' ? 1 : 0);
	}
	return false;
}

/* Grow a pool-allocated array by one zeroed element; returns it. */
static void *array_append(pool_t pool, void *arrayp, unsigned int *count,
			  size_t elem_size)
{
	void **array = arrayp;
	char *new_array = p_malloc(pool, i_mul_size(*count + 1, elem_size));

	if (*count > 0)
		memcpy(new_array, *array, *count * elem_size);
	*array = new_array;
	return new_array + (*count)++ * elem_size;
}

static void service_copy(pool_t pool, struct moat_service_settings *dest,
			 const struct moat_service_settings *src)
{
	*dest = *src;
	dest->name = p_strdup(pool, src->name);
	dest->user = p_strdup(pool, src->user);
	dest->chroot = p_strdup(pool, src->chroot);
	dest->listeners = NULL;
	dest->listener_count = 0;
	for (unsigned int i = 0; i < src->listener_count; i++) {
		struct moat_listener_settings *l = array_append(pool,
			&dest->listeners, &dest->listener_count, sizeof(*l));
		*l = src->listeners[i];
		l->name = p_strdup(pool, src->listeners[i].name);
		l->address = p_strdup(pool, src->listeners[i].address);
		l->mode = p_strdup(pool, src->listeners[i].mode);
		l->user = p_strdup(pool, src->listeners[i].user);
		l->group = p_strdup(pool, src->listeners[i].group);
	}
}

struct moat_settings *moat_settings_defaults(void)
{
	pool_t pool = pool_create("moat settings", 4096);
	struct moat_settings *set = p_malloc(pool, sizeof(*set));
	const char *error;

	set->pool = pool;
	for (unsigned int i = 0; i < N_ELEMENTS(global_defs); i++) {
		if (settings_def_set(pool, &global_defs[i], set,
				global_defs[i].default_value, &error) < 0)
			i_panic("invalid built-in default: %s", error);
	}
	set->service_count = SERVICE_COUNT;
	set->services = p_malloc(pool, sizeof(*set->services) * SERVICE_COUNT);
	for (unsigned int i = 0; i < SERVICE_COUNT; i++)
		service_copy(pool, &set->services[i], &service_defaults[i]);
	return set;
}

void moat_settings_free(struct moat_settings **set)
{
	if (*set == NULL)
		return;
	pool_t pool = (*set)->pool;

	*set = NULL;
	pool_unref(&pool);
}

static int service_begin(struct settings_parser *ctx, const char *name,
			 const char **error_r)
{
	pool_t pool = ctx->set->pool;
	unsigned int i;

	if (name == NULL) {
		*error_r = "service needs a name (imap-login, auth, imap, "
			"auth-worker, lmtp or key-signer)";
		return -1;
	}
	for (i = 0; i < SERVICE_COUNT; i++) {
		if (strcmp(ctx->set->services[i].name, name) == 0)
			break;
	}
	if (i == SERVICE_COUNT) {
		*error_r = p_strdup_printf(pool, "unknown service '%s' "
			"(known: imap-login, auth, imap, auth-worker, lmtp, "
			"key-signer)",
			name);
		return -1;
	}
	if (ctx->services_seen[i]) {
		*error_r = p_strdup_printf(pool, "duplicate service '%s'", name);
		return -1;
	}
	ctx->services_seen[i] = true;
	ctx->service = &ctx->set->services[i];
	ctx->listeners_seen = 0;
	ctx->stack[ctx->depth++] = SECTION_SERVICE;
	return 0;
}

static bool listener_name_valid(const char *name)
{
	/* it goes into MOAT_LISTENERS="name:ssl:haproxy,..." */
	if (name[0] == '\0')
		return false;
	for (const char *p = name; *p != '\0'; p++) {
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '-' && *p != '_')
			return false;
	}
	return true;
}

/* A unix_listener's path: relative to base_dir or absolute, no "..",
   no control bytes, short enough for sun_path. */
static bool unix_listener_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > MOAT_SETTINGS_UNIX_PATH_MAX ||
	    name[len - 1] == '/' || strstr(name, "//") != NULL ||
	    strcmp(name, "..") == 0 || strncmp(name, "../", 3) == 0 ||
	    strstr(name, "/../") != NULL ||
	    (len >= 3 && strcmp(name + len - 3, "/..") == 0))
		return false;
	for (const char *p = name; *p != '\0'; p++) {
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == ',' ||
		    *p == ':')
			return false;
	}
	return true;
}

static int check_metrics_listener(pool_t pool ATTR_UNUSED, const char *value,
				  const char **error_r)
{
	if (value[0] != '\0' && !unix_listener_name_valid(value)) {
		*error_r = "must be a socket path (relative to base_dir or "
			"absolute, at most 100 bytes, no spaces, ',' or ':')";
		return -1;
	}
	return 0;
}

static int listener_begin(struct settings_parser *ctx, const char *type,
			  const char *name, const char **error_r)
{
	struct moat_service_settings *service = ctx->service;
	pool_t pool = ctx->set->pool;
	bool unix_socket = strcmp(type, "unix_listener") == 0;
	unsigned int i;

	if (unix_socket ? strcmp(service->name, "lmtp") != 0 :
	    strcmp(service->name, MOAT_SERVICE_LOGIN) != 0 &&
	    strcmp(service->name, "lmtp") != 0) {
		*error_r = unix_socket ?
			"unix_listener is only allowed in service lmtp" :
			"inet_listener is only allowed in services imap-login and lmtp";
		return -1;
	}
	if (name == NULL || !(unix_socket ? unix_listener_name_valid(name) :
			      listener_name_valid(name))) {
		*error_r = unix_socket ?
			"unix_listener needs a path (relative to base_dir or "
			"absolute, at most 100 bytes, no spaces, ',' or ':')" :
			"inet_listener needs a name of letters, digits, "
			"'-' and '_'";
		return -1;
	}
	/* Dovecot's "unix_listener lmtp" and "inet_listener lmtp" are two */
	for (i = 0; i < service->listener_count; i++) {
		if (strcmp(service->listeners[i].name, name) == 0 &&
		    service->listeners[i].unix_socket == unix_socket)
			break;
	}
	ctx->listener_new = i == service->listener_count;
	if (!ctx->listener_new && (ctx->listeners_seen & (1U << i)) != 0) {
		*error_r = p_strdup_printf(pool, "duplicate %s '%s'", type,
					   name);
		return -1;
	}
	if (ctx->listener_new) {
		if (i >= MOAT_SETTINGS_LISTENERS_MAX) {
			*error_r = "too many listeners (max 16)";
			return -1;
		}
		struct moat_listener_settings *l = array_append(pool,
			&service->listeners, &service->listener_count,
			sizeof(*l));
		l->name = p_strdup(pool, name);
		l->unix_socket = unix_socket;
		l->address = unix_socket ? "" : "*";
		l->mode = unix_socket ? "0666" : "";
		l->user = l->group = "";
	}
	ctx->listeners_seen |= 1U << i;
	ctx->listener_idx = i;
	/* a unix_listener needs no setting: its name is the path */
	ctx->listener_port_set = unix_socket;
	ctx->stack[ctx->depth++] = SECTION_LISTENER;
	return 0;
}

static int db_begin(struct settings_parser *ctx, enum section_kind kind,
		    const char *type, const char *name, const char **error_r)
{
	struct moat_settings *set = ctx->set;
	bool passdb = kind == SECTION_PASSDB;
	unsigned int *count = passdb ? &set->passdb_count : &set->userdb_count;

	if (name != NULL) {
		*error_r = p_strdup_printf(set->pool, "%s takes no name", type);
		return -1;
	}
	if (*count >= MOAT_SETTINGS_DBS_MAX) {
		*error_r = p_strdup_printf(set->pool, "too many %s blocks "
			"(max %u)", type, MOAT_SETTINGS_DBS_MAX);
		return -1;
	}
	ctx->db = passdb ?
		array_append(set->pool, &set->passdbs, count, sizeof(*ctx->db)) :
		array_append(set->pool, &set->userdbs, count, sizeof(*ctx->db));
	ctx->db->driver = ctx->db->args = "";
	ctx->db->default_fields = ctx->db->override_fields = "";
	ctx->stack[ctx->depth++] = kind;
	return 0;
}

static int section_begin(struct settings_parser *ctx, const char *type,
			 const char *name, const char **error_r)
{
	if (ctx->depth == 0 && strcmp(type, "service") == 0)
		return service_begin(ctx, name, error_r);
	if (ctx->depth == 0 && strcmp(type, "passdb") == 0)
		return db_begin(ctx, SECTION_PASSDB, type, name, error_r);
	if (ctx->depth == 0 && strcmp(type, "userdb") == 0)
		return db_begin(ctx, SECTION_USERDB, type, name, error_r);
	if (ctx->depth == 1 && ctx->stack[0] == SECTION_SERVICE &&
	    (strcmp(type, "inet_listener") == 0 ||
	     strcmp(type, "unix_listener") == 0))
		return listener_begin(ctx, type, name, error_r);
	*error_r = p_strdup_printf(ctx->set->pool, ctx->depth == 0 ?
		"unknown section type '%s'" :
		"section '%s' is not allowed here", type);
	return -1;
}

static int db_check(pool_t pool, const char *type,
		    const struct moat_db_settings *db, const char **error_r)
{
	const char *const *drivers = strcmp(type, "passdb") == 0 ?
		passdb_drivers : userdb_drivers;
	unsigned int i;

	for (i = 0; drivers[i] != NULL; i++) {
		if (strcmp(drivers[i], db->driver) == 0)
			break;
	}
	if (drivers[i] == NULL) {
		*error_r = db->driver[0] == '\0' ?
			p_strdup_printf(pool, "%s: driver is not set", type) :
			p_strdup_printf(pool, "%s: unknown driver '%s'", type,
					db->driver);
		return -1;
	}
	if ((strcmp(db->driver, "passwd-file") == 0 ||
	     strcmp(db->driver, "oauth2-file") == 0) && db->args[0] == '\0') {
		*error_r = p_strdup_printf(pool, "%s %s: args must be "
					   "the file's path", type, db->driver);
		return -1;
	}
	return 0;
}

static bool listeners_clash(const struct moat_listener_settings *a,
			    const struct moat_listener_settings *b)
{
	return !a->unix_socket && !b->unix_socket &&
		a->port != 0 && a->port == b->port &&
		(strcmp(a->address, b->address) == 0 ||
		 strcmp(a->address, "*") == 0 || strcmp(b->address, "*") == 0);
}

static int service_check(pool_t pool, const struct moat_service_settings *s,
			 const char **error_r)
{
	if (s->process_min_avail > s->process_limit) {
		*error_r = p_strdup_printf(pool, "service %s: process_min_avail "
			"(%u) is larger than process_limit (%u)", s->name,
			s->process_min_avail, s->process_limit);
		return -1;
	}
	for (unsigned int i = 0; i < s->listener_count; i++) {
		/* lmtp reads no PROXY header (yet): refuse rather than
		   let the header reach the LMTP parser */
		if (s->listeners[i].haproxy &&
		    strcmp(s->name, MOAT_SERVICE_LOGIN) != 0) {
			*error_r = p_strdup_printf(pool, "service %s: "
				"inet_listener %s: haproxy is supported only "
				"in service imap-login", s->name,
				s->listeners[i].name);
			return -1;
		}
		for (unsigned int j = i + 1; j < s->listener_count; j++) {
			if (!listeners_clash(&s->listeners[i], &s->listeners[j]))
				continue;
			*error_r = p_strdup_printf(pool, "service %s: "
				"inet_listeners %s and %s both use port %u",
				s->name, s->listeners[i].name,
				s->listeners[j].name, s->listeners[i].port);
			return -1;
		}
	}
	return 0;
}

static int section_end(struct settings_parser *ctx, const char **error_r)
{
	pool_t pool = ctx->set->pool;

	i_assert(ctx->depth > 0);
	switch (ctx->stack[--ctx->depth]) {
	case SECTION_SERVICE:
		return service_check(pool, ctx->service, error_r);
	case SECTION_LISTENER:
		if (ctx->listener_new && !ctx->listener_port_set) {
			*error_r = p_strdup_printf(pool, "inet_listener %s: port "
				"is not set",
				ctx->service->listeners[ctx->listener_idx].name);
			return -1;
		}
		return 0;
	case SECTION_PASSDB:
		return db_check(pool, "passdb", ctx->db, error_r);
	case SECTION_USERDB:
		return db_check(pool, "userdb", ctx->db, error_r);
	}
	i_unreached();
}

static int settings_key(struct settings_parser *ctx, const char *key,
			const char *value, const char **error_r)
{
	const struct setting_def *defs = global_defs;
	unsigned int count = N_ELEMENTS(global_defs);
	void *base = ctx->set;
	const char *where = "";

	if (ctx->depth > 0) switch (ctx->stack[ctx->depth - 1]) {
	case SECTION_SERVICE:
		defs = service_defs;
		count = N_ELEMENTS(service_defs);
		base = ctx->service;
		where = " in a service block";
		break;
	case SECTION_LISTENER:
		base = &ctx->service->listeners[ctx->listener_idx];
		if (((struct moat_listener_settings *)base)->unix_socket) {
			defs = unix_listener_defs;
			count = N_ELEMENTS(unix_listener_defs);
			where = " in a unix_listener block";
			break;
		}
		defs = listener_defs;
		count = N_ELEMENTS(listener_defs);
		where = " in an inet_listener block";
		if (strcmp(key, "port") == 0)
			ctx->listener_port_set = true;
		break;
	case SECTION_PASSDB:
	case SECTION_USERDB:
		defs = db_defs;
		count = N_ELEMENTS(db_defs);
		base = ctx->db;
		where = " in a passdb/userdb block";
		break;
	}
	const struct setting_def *def = settings_def_find(defs, count, key);
	if (def == NULL) {
		*error_r = p_strdup_printf(ctx->set->pool,
					   "unknown setting '%s'%s", key, where);
		return -1;
	}
	return settings_def_set(ctx->set->pool, def, base, value, error_r);
}

static int settings_event(const struct config_event *event, void *context,
			  const char **error_r)
{
	struct settings_parser *ctx = context;

	switch (event->type) {
	case CONFIG_EVENT_KEY_VALUE:
		return settings_key(ctx, event->key, event->value, error_r);
	case CONFIG_EVENT_SECTION_BEGIN:
		return section_begin(ctx, event->key, event->value, error_r);
	case CONFIG_EVENT_SECTION_END:
		return section_end(ctx, error_r);
	}
	i_unreached();
}

static int ssl_check(const struct moat_settings *set, const char **error_r)
{
	bool have_cert = set->ssl_cert[0] != '\0';

	if (have_cert != (set->ssl_key[0] != '\0')) {
		*error_r = "ssl_cert and ssl_key must be set together";
		return -1;
	}
	if (set->ssl == MOAT_SSL_REQUIRED && !have_cert) {
		*error_r = "ssl = required, but ssl_cert is not set";
		return -1;
	}
	if (set->ssl_verify_client_cert && set->ssl_ca[0] == '\0') {
		*error_r = "ssl_verify_client_cert = yes needs ssl_ca";
		return -1;
	}
	return 0;
}

/* A haproxy listener nobody may use is a mistake, not a closed port. */
static int haproxy_check(const struct moat_settings *set, const char **error_r)
{
	if (set->haproxy_trusted_networks[0] != '\0')
		return 0;
	for (unsigned int i = 0; i < set->service_count; i++) {
		const struct moat_service_settings *s = &set->services[i];
		for (unsigned int j = 0; j < s->listener_count; j++) {
			const struct moat_listener_settings *l = &s->listeners[j];
			if (!l->haproxy || l->unix_socket || l->port == 0)
				continue;
			*error_r = p_strdup_printf(set->pool, "service %s: "
				"inet_listener %s: haproxy = yes needs "
				"haproxy_trusted_networks", s->name, l->name);
			return -1;
		}
	}
	return 0;
}

/* Whole-config checks; full adds what only a complete config needs. */
static int settings_check(const struct moat_settings *set, bool full,
			  const char **error_r)
{
	if (set->last_valid_uid != 0 &&
	    set->last_valid_uid < set->first_valid_uid) {
		*error_r = p_strdup_printf(set->pool, "last_valid_uid (%u) is "
			"below first_valid_uid (%u)", set->last_valid_uid,
			set->first_valid_uid);
		return -1;
	}
	for (unsigned int i = 0; i < set->service_count; i++) {
		if (service_check(set->pool, &set->services[i], error_r) < 0)
			return -1;
	}
	if (full && set->passdb_count == 0) {
		*error_r = "no passdb configured";
		return -1;
	}
	/* Only master's full copy has ssl_key; children skip this. */
	if (full && ssl_check(set, error_r) < 0)
		return -1;
	if (full && haproxy_check(set, error_r) < 0)
		return -1;
	return 0;
}

/* fd < 0: parse path. */
static int settings_parse(int fd, const char *path, enum config_parse_flags flags,
			  struct moat_settings **set_r, const char **error_r)
{
	struct moat_settings *set = moat_settings_defaults();
	struct settings_parser ctx = { .set = set };
	const char *error;
	int ret;

	if (fd < 0) {
		ret = config_parse_file_flags(path, flags, settings_event, &ctx,
					      set->pool, &error);
	} else {
		ret = config_parse_fd(fd, path, settings_event, &ctx, set->pool,
				      &error);
	}
	if (ret == 0 && settings_check(set, false, &error) < 0) {
		error = p_strdup_printf(set->pool, "%s: %s", path, error);
		ret = -1;
	}
	if (ret < 0) {
		*error_r = settings_error(error);
		moat_settings_free(&set);
		return -1;
	}
	*set_r = set;
	return 0;
}

int moat_settings_parse(const char *path, struct moat_settings **set_r,
			const char **error_r)
{
	return settings_parse(-1, path, 0, set_r, error_r);
}

int moat_settings_parse_unprivileged(const char *path,
				     struct moat_settings **set_r,
				     const char **error_r)
{
	return settings_parse(-1, path, CONFIG_PARSE_FLAG_UNREADABLE_EMPTY,
			      set_r, error_r);
}

int moat_settings_read_fd(int fd, const char *name,
			  struct moat_settings **set_r, const char **error_r)
{
	i_assert(fd >= 0);
	return settings_parse(fd, name, 0, set_r, error_r);
}

int moat_settings_validate(const struct moat_settings *set,
			   const char **error_r)
{
	const char *error;

	if (settings_check(set, true, &error) < 0) {
		*error_r = settings_error(error);
		return -1;
	}
	return 0;
}

int moat_settings_read(const char *path, struct moat_settings **set_r,
		       const char **error_r)
{
	struct moat_settings *set;
	const char *error;

	if (moat_settings_parse(path, &set, error_r) < 0)
		return -1;
	if (settings_check(set, true, &error) < 0) {
		*error_r = settings_error(p_strdup_printf(set->pool, "%s: %s",
							  path, error));
		moat_settings_free(&set);
		return -1;
	}
	*set_r = set;
	return 0;
}

static const struct moat_listener_settings *
listener_find(const struct moat_service_settings *service,
	      const struct moat_listener_settings *l)
{
	for (unsigned int i = 0; i < service->listener_count; i++) {
		if (strcmp(service->listeners[i].name, l->name) == 0 &&
		    service->listeners[i].unix_socket == l->unix_socket)
			return &service->listeners[i];
	}
	return NULL;
}

static bool listener_equal(const struct moat_listener_settings *a,
			   const struct moat_listener_settings *b)
{
	return strcmp(a->name, b->name) == 0 &&
		a->unix_socket == b->unix_socket &&
		(a->unix_socket ?
		 settings_defs_equal(unix_listener_defs,
				     N_ELEMENTS(unix_listener_defs), a, b) :
		 settings_defs_equal(listener_defs, N_ELEMENTS(listener_defs),
				     a, b));
}

static bool service_equal(const struct moat_service_settings *a,
			  const struct moat_service_settings *b)
{
	if (strcmp(a->name, b->name) != 0 ||
	    !settings_defs_equal(service_defs, N_ELEMENTS(service_defs), a, b) ||
	    a->listener_count != b->listener_count)
		return false;
	for (unsigned int i = 0; i < a->listener_count; i++) {
		if (!listener_equal(&a->listeners[i], &b->listeners[i]))
			return false;
	}
	return true;
}

/* def: the built-in service to compare with (moat -n), or NULL. */
static int write_service(buffer_t *out, const struct moat_service_settings *s,
			 const struct moat_service_settings *def)
{
	if (def != NULL && service_equal(s, def))
		return 0;
	if (buffer_append_str(out, "service ") < 0 ||
	    config_append_value(out, s->name) < 0 ||
	    buffer_append_str(out, " {\n") < 0 ||
	    settings_defs_write(out, "  ", service_defs, N_ELEMENTS(service_defs),
		       s, def) < 0)
		return -1;
	for (unsigned int i = 0; i < s->listener_count; i++) {
		const struct moat_listener_settings *l = &s->listeners[i];
		const struct moat_listener_settings *dl =
			def == NULL ? NULL : listener_find(def, l);
		if (dl != NULL && listener_equal(l, dl))
			continue;
		if (buffer_append_str(out, l->unix_socket ? "  unix_listener " :
				      "  inet_listener ") < 0 ||
		    config_append_value(out, l->name) < 0 ||
		    buffer_append_str(out, " {\n") < 0 ||
		    (l->unix_socket ?
		     settings_defs_write(out, "    ", unix_listener_defs,
				N_ELEMENTS(unix_listener_defs), l, dl) :
		     settings_defs_write(out, "    ", listener_defs,
				N_ELEMENTS(listener_defs), l, dl)) < 0 ||
		    buffer_append_str(out, "  }\n") < 0)
			return -1;
	}
	return buffer_append_str(out, "}\n");
}

static int write_db(buffer_t *out, const char *type,
		    const struct moat_db_settings *db, bool only_set)
{
	static const struct moat_db_settings empty_db = {
		.driver = "", .args = "", .default_fields = "",
		.override_fields = "",
	};

	if (buffer_printf(out, "%s {\n", type) < 0 ||
	    settings_defs_write(out, "  ", db_defs, N_ELEMENTS(db_defs), db,
		       only_set ? &empty_db : NULL) < 0)
		return -1;
	return buffer_append_str(out, "}\n");
}

int moat_settings_write(const struct moat_settings *set, bool non_default_only,
			buffer_t *out)
{
	struct moat_settings *defaults =
		non_default_only ? moat_settings_defaults() : NULL;
	int ret = settings_defs_write(out, "", global_defs,
				      N_ELEMENTS(global_defs), set, defaults);

	for (unsigned int i = 0; i < set->service_count && ret == 0; i++) {
		const struct moat_service_settings *def = defaults == NULL ?
			NULL : moat_settings_get_service(defaults,
							 set->services[i].name);
		ret = write_service(out, &set->services[i], def);
	}
	for (unsigned int i = 0; i < set->passdb_count && ret == 0; i++)
		ret = write_db(out, "passdb", &set->passdbs[i], non_default_only);
	for (unsigned int i = 0; i < set->userdb_count && ret == 0; i++)
		ret = write_db(out, "userdb", &set->userdbs[i], non_default_only);
	if (defaults != NULL)
		moat_settings_free(&defaults);
	return ret;
}

int moat_settings_write_secrets(const struct moat_settings *set, buffer_t *out)
{
	for (unsigned int i = 0; i < N_ELEMENTS(global_defs); i++) {
		const struct setting_def *def = &global_defs[i];

		if ((def->flags & SET_FLAG_SECRET) == 0)
			continue;
		if (buffer_printf(out, "%s = ", def->name) < 0 ||
		    settings_def_append(out, def, set) < 0 ||
		    buffer_append_c(out, '\n') < 0)
			return -1;
	}
	return 0;
}

static bool dbs_equal(const struct moat_db_settings *a, unsigned int a_count,
		      const struct moat_db_settings *b, unsigned int b_count)
{
	if (a_count != b_count)
		return false;
	for (unsigned int i = 0; i < a_count; i++) {
		if (!settings_defs_equal(db_defs, N_ELEMENTS(db_defs),
					 &a[i], &b[i]))
			return false;
	}
	return true;
}

bool moat_settings_equal(const struct moat_settings *a,
			 const struct moat_settings *b)
{
	if (!settings_defs_equal(global_defs, N_ELEMENTS(global_defs), a, b) ||
	    a->service_count != b->service_count ||
	    !dbs_equal(a->passdbs, a->passdb_count,
		       b->passdbs, b->passdb_count) ||
	    !dbs_equal(a->userdbs, a->userdb_count,
		       b->userdbs, b->userdb_count))
		return false;
	for (unsigned int i = 0; i < a->service_count; i++) {
		if (!service_equal(&a->services[i], &b->services[i]))
			return false;
	}
	return true;
}

const struct moat_service_settings *
moat_settings_get_service(const struct moat_settings *set, const char *name)
{
	for (unsigned int i = 0; i < set->service_count; i++) {
		if (strcmp(set->services[i].name, name) == 0)
			return &set->services[i];
	}
	return NULL;
}

const char *moat_settings_service_user(const struct moat_settings *set,
				       const struct moat_service_settings *service)
{
	if (service->user[0] != '\0')
		return service->user;
	if (strcmp(service->name, MOAT_SERVICE_LOGIN) == 0)
		return set->default_login_user;
	if (strcmp(service->name, "auth") == 0 ||
	    strcmp(service->name, "key-signer") == 0)
		return set->default_internal_user;
	return "";
}

bool moat_settings_has_protocol(const struct moat_settings *set,
				const char *name)
{
	size_t name_len = strlen(name);
	const char *p = set->protocols;

	while (*p != '\0') {
		size_t len = strcspn(p, " \t");
		if (len == name_len && strncasecmp(p, name, len) == 0)
			return true;
		p += len + (p[len] != '\0' ? 1 : 0);
	}
	return false;
}

uint64_t moat_settings_quota_grace(const struct moat_settings *set,
				   uint64_t storage_limit)
{
	const char *value = set->quota_grace;
	size_t len = strlen(value);
	uint64_t num = 0;
	const char *error;

	if (len > 0 && value[len - 1] == '%') {
		for (size_t i = 0; i + 1 < len; i++)
			num = num * 10 + (uint64_t)(value[i] - '0');
		return storage_limit / 100 * num + storage_limit % 100 * num / 100;
	}
	return config_parse_size(value, &num, &error) < 0 ? 0 : num;
}

unsigned int moat_settings_quota_warnings(const struct moat_settings *set,
					  unsigned int *percents,
					  unsigned int max)
{
	const char *p = set->quota_warning;
	unsigned int count = 0;

	while (*p != '\0' && count < max) {
		size_t len = strcspn(p, " \t");
		unsigned int num = 0;
		for (size_t i = 0; i < len && p[i] >= '0' && p[i] <= '9'; i++)
			num = num * 10 + (unsigned int)(p[i] - '0');
		if (len > 0 && num >= 1 && num <= 100) {
			/* insertion keeps them ascending */
			unsigned int i = count++;
			for (; i > 0 && percents[i - 1] > num; i--)
				percents[i] = percents[i - 1];
			percents[i] = num;
		}
		p += len + (p[len] != '\0' ? 1 : 0);
	}
	return count;
}

unsigned int moat_listener_mode(const struct moat_listener_settings *l)
{
	unsigned int mode = 0;

	for (const char *p = l->mode; *p >= '0' && *p <= '7'; p++)
		mode = mode * 8 + (unsigned int)(*p - '0');
	return mode;
}
