/* Tests for config-parser.c, settings-def.c and moat-settings.c. */

#include "test-common.h"
#include "buffer.h"
#include "config-parser.h"
#include "moat-settings.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>

#define TEST_PATH_MAX 512
#define TEST_OUT_MAX (1024 * 1024)

static const char *test_path(const char *name)
{
	static char path[TEST_PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	return path;
}

static void write_file(const char *name, const char *contents)
{
	FILE *f = fopen(test_path(name), "w");

	if (f == NULL) {
		perror(name);
		exit(2);
	}
	fputs(contents, f);
	fclose(f);
}

/* Parse contents as a file named name; returns the settings or NULL with
   *error_r set. */
static struct moat_settings *parse_str(const char *name, const char *contents,
				       const char **error_r)
{
	struct moat_settings *set = NULL;

	write_file(name, contents);
	if (moat_settings_parse(test_path(name), &set, error_r) < 0)
		return NULL;
	return set;
}

/* contents must fail with an error that contains "name:line:" and
   expect. */
static void assert_error_at(const char *name, const char *contents,
			    const char *where, const char *expect,
			    const char *file, int src_line)
{
	const char *error = "";
	struct moat_settings *set = parse_str(name, contents, &error);

	test_assert_at(set == NULL, "parse fails", file, src_line);
	if (set != NULL) {
		moat_settings_free(&set);
		return;
	}
	bool ok = strstr(error, where) != NULL && strstr(error, expect) != NULL;
	test_assert_at(ok, "error text", file, src_line);
	if (!ok)
		fprintf(stderr, "  got: %s\n  wanted: %s ... %s\n", error, where,
			expect);
}
/* The error must be at name:line. */
#define assert_error(name, contents, line, expect) do { \
	char where_[TEST_PATH_MAX]; \
	snprintf(where_, sizeof(where_), "%s:%u:", (name), (line)); \
	assert_error_at(name, contents, where_, expect, __FILE__, __LINE__); \
	} while (0)
/* The error must contain where (another file's name:line). */
#define assert_error_where(name, contents, where, expect) \
	assert_error_at(name, contents, where, expect, __FILE__, __LINE__)

static void test_defaults(void)
{
	struct moat_settings *set = moat_settings_defaults();

	test_assert_str(set->base_dir, MOAT_RUNDIR);
	test_assert_str(set->log_path, "");
	test_assert(!set->log_debug);
	test_assert_str(set->default_login_user, "moat-login");
	test_assert_str(set->default_internal_user, "moat-auth");
	test_assert_str(set->protocols, "imap");
	test_assert_str(set->mail_location, "maildir:~/Maildir");
	test_assert_str(set->mail_uid, "");
	test_assert_str(set->mail_gid, "");
	test_assert_int(set->first_valid_uid, 500);
	test_assert_int(set->last_valid_uid, 0);
	test_assert_int(set->mail_fsync, MOAT_FSYNC_OPTIMIZED);
	test_assert_str(set->mailbox_drafts, "Drafts");
	test_assert_str(set->mailbox_sent, "Sent");
	test_assert_str(set->mailbox_trash, "Trash");
	test_assert_str(set->mailbox_junk, "Junk");
	test_assert_str(set->mailbox_archive, "Archive");
	test_assert_int(set->imap_max_line_length, 64 * 1024);
	test_assert_int(set->imap_max_literal_size, 64 * 1024);
	test_assert_int(set->imap_max_append_size, 64 * 1024 * 1024);
	test_assert_int(set->imap_max_bad_commands, 20);
	test_assert_int(set->imap_max_pipelined_commands, 50);
	test_assert_int(set->imap_max_update_contexts, 10);
	test_assert_int(set->imap_commit_batch_max, 64);
	test_assert_int(set->imap_idle_timeout, 30 * 60);
	test_assert_int(set->imap_notify_max_buffer, 256 * 1024);
	test_assert_int(set->imap_notify_max_watches, 1000);
	test_assert_int(set->imap_process_linger, 30);
	test_assert_int(set->login_timeout, 60);
	test_assert(set->disable_plaintext_auth);
	test_assert_str(set->auth_mechanisms, "plain login");
	test_assert_int(set->auth_failure_delay, 2000);
	test_assert_int(set->login_max_command_size, 16 * 1024);
	test_assert_int(set->mail_max_userip_connections, 50);
	test_assert_int(set->mail_max_user_connections, 200);
	test_assert_int(set->login_max_connections_per_ip, 100);
	test_assert_int(set->imap_max_auth_attempts, 3);
	test_assert_int(set->login_auth_park_limit, 100);
	test_assert_int(set->login_auth_park_timeout, 10);
	test_assert_str(set->login_trusted_networks, "");
	test_assert(moat_settings_net_match("10.0.0.0/8, 2001:db8::/32 192.0.2.1",
					    "10.1.2.3"));
	test_assert(moat_settings_net_match("10.0.0.0/8 192.0.2.1", "::ffff:10.0.0.1"));
	test_assert(moat_settings_net_match("2001:db8::/32", "2001:db8:1::5"));
	test_assert(moat_settings_net_match("192.0.2.1", "192.0.2.1"));
	test_assert(!moat_settings_net_match("192.0.2.1", "192.0.2.2"));
	test_assert(!moat_settings_net_match("10.0.0.0/8", "11.0.0.1"));
	test_assert(moat_settings_net_match("10.128.0.0/9", "10.200.0.1"));
	test_assert(!moat_settings_net_match("10.128.0.0/9", "10.100.0.1"));
	test_assert(!moat_settings_net_match("", "10.0.0.1"));
	test_assert(moat_settings_net_match("0.0.0.0/0", "203.0.113.9"));
	test_assert_int(set->passdb_count, 0);
	test_assert_int(set->userdb_count, 0);
	test_assert_int(set->service_count, 6);
	test_assert(set->ssl_key_isolation);

	const struct moat_service_settings *login =
		moat_settings_get_service(set, "imap-login");
	test_assert(login != NULL);
	test_assert_str(login->user, "");
	test_assert_str(login->chroot, "empty");
	test_assert_int(login->process_limit, 64);
	test_assert_int(login->process_min_avail, 1);
	test_assert_int(login->client_limit, 1000);
	test_assert_int(login->service_count, 0);
	test_assert_int(login->vsz_limit, 256 * 1024 * 1024);
	test_assert_int(login->idle_kill, 0);
	test_assert_int(login->listener_count, 2);
	test_assert_str(login->listeners[0].name, "imap");
	test_assert_str(login->listeners[0].address, "*");
	test_assert_int(login->listeners[0].port, 143);
	test_assert(!login->listeners[0].ssl);
	test_assert_str(login->listeners[1].name, "imaps");
	test_assert_int(login->listeners[1].port, 993);
	test_assert(login->listeners[1].ssl);
	test_assert_str(moat_settings_service_user(set, login), "moat-login");

	const struct moat_service_settings *auth =
		moat_settings_get_service(set, "auth");
	test_assert(auth != NULL);
	test_assert_int(auth->process_limit, 1);
	test_assert_int(auth->client_limit, 1000);
	test_assert_str(auth->chroot, "");
	test_assert_int(auth->listener_count, 0);
	test_assert_str(moat_settings_service_user(set, auth), "moat-auth");

	const struct moat_service_settings *imap =
		moat_settings_get_service(set, "imap");
	test_assert(imap != NULL);
	test_assert_int(imap->process_limit, 1024);
	test_assert_int(imap->client_limit, 1000);
	test_assert_int(imap->vsz_limit, 256 * 1024 * 1024);
	test_assert_str(moat_settings_service_user(set, imap), "");
	test_assert(moat_settings_get_service(set, "pop3") == NULL);

	const struct moat_service_settings *worker =
		moat_settings_get_service(set, "auth-worker");
	test_assert(worker != NULL);
	test_assert_int(worker->process_limit, 4);
	test_assert_int(worker->client_limit, 1);
	test_assert_str(worker->chroot, "");
	test_assert_str(moat_settings_service_user(set, worker), "");

	const struct moat_service_settings *lmtp =
		moat_settings_get_service(set, "lmtp");
	test_assert(lmtp != NULL);
	test_assert_str(lmtp->chroot, "empty");
	test_assert_str(moat_settings_service_user(set, lmtp), "moat-lmtp");
	test_assert_int(lmtp->listener_count, 1);
	test_assert_str(lmtp->listeners[0].name, "lmtp");
	test_assert(lmtp->listeners[0].unix_socket);
	test_assert_int(moat_listener_mode(&lmtp->listeners[0]), 0666);
	test_assert(!moat_settings_has_protocol(set, "lmtp"));
	test_assert(moat_settings_has_protocol(set, "imap"));

	const struct moat_service_settings *keyd =
		moat_settings_get_service(set, "key-signer");
	test_assert(keyd != NULL);
	test_assert_str(keyd->chroot, "empty");
	test_assert_int(keyd->process_limit, 1);
	test_assert_str(moat_settings_service_user(set, keyd), "moat-auth");
	test_assert_int(set->message_size_limit, 64 * 1024 * 1024);
	test_assert_str(set->recipient_delimiter, "+");
	test_assert_str(set->lmtp_username_format, "%Lu");
	test_assert(!set->lmtp_save_to_detail_mailbox);

	/* an empty file gives the defaults */
	const char *error;
	struct moat_settings *set2 = parse_str("empty.conf", "", &error);
	test_assert(set2 != NULL && moat_settings_equal(set, set2));
	moat_settings_free(&set2);
	moat_settings_free(&set);
	test_assert(set == NULL);
}

static void test_types(void)
{
	const char *error;
	struct moat_settings *set = parse_str("types.conf",
		"# comment\n"
		"  log_debug = yes   # trailing comment\n"
		"disable_plaintext_auth=no\n"
		"first_valid_uid = 1000\n"
		"last_valid_uid = 60000\n"
		"imap_max_line_length = 8k\n"
		"imap_max_literal_size = 256 M\n"
		"imap_max_append_size = 1G\n"
		"imap_idle_timeout = 31 mins\n"
		"imap_process_linger = 2 h\n"
		"login_timeout = 90\n"
		"auth_failure_delay = 1 day\n"
		"mail_fsync = never\n"
		"\tmail_location = maildir:/var/mail/%u \n"
		"auth_mechanisms = PLAIN\n"
		"log_path = /var/log/moat.log\n", &error);
	test_assert(set != NULL);
	if (set == NULL) {
		fprintf(stderr, "  error: %s\n", error);
		return;
	}
	test_assert(set->log_debug);
	test_assert(!set->disable_plaintext_auth);
	test_assert_int(set->first_valid_uid, 1000);
	test_assert_int(set->last_valid_uid, 60000);
	test_assert_int(set->imap_max_line_length, 8192);
	test_assert_int(set->imap_max_literal_size, 256ULL << 20);
	test_assert_int(set->imap_max_append_size, 1ULL << 30);
	test_assert_int(set->imap_idle_timeout, 31 * 60);
	test_assert_int(set->imap_process_linger, 7200);
	test_assert_int(set->login_timeout, 90);
	test_assert_int(set->auth_failure_delay, 86400 * 1000);
	test_assert_int(set->mail_fsync, MOAT_FSYNC_NEVER);
	test_assert_str(set->mail_location, "maildir:/var/mail/%u");
	test_assert_str(set->log_path, "/var/log/moat.log");
	moat_settings_free(&set);

	/* size and time spellings */
	uint64_t size;
	unsigned int secs;
	test_assert(config_parse_size("64k", &size, &error) == 0 && size == 65536);
	test_assert(config_parse_size("64K", &size, &error) == 0 && size == 65536);
	test_assert(config_parse_size("10B", &size, &error) == 0 && size == 10);
	test_assert(config_parse_size("2T", &size, &error) == 0 &&
		    size == 2ULL << 40);
	test_assert(config_parse_size("16777216T", &size, &error) < 0);
	test_assert(config_parse_size("k", &size, &error) < 0);
	test_assert(config_parse_size("1 kB", &size, &error) < 0);
	test_assert(config_parse_size("-1", &size, &error) < 0);
	test_assert(config_parse_time("5 secs", &secs, &error) == 0 && secs == 5);
	test_assert(config_parse_time("5sec", &secs, &error) == 0 && secs == 5);
	test_assert(config_parse_time("2m", &secs, &error) == 0 && secs == 120);
	test_assert(config_parse_time("1 hour", &secs, &error) == 0 &&
		    secs == 3600);
	test_assert(config_parse_time("3 days", &secs, &error) == 0 &&
		    secs == 3 * 86400);
	test_assert(config_parse_time("5 ms", &secs, &error) < 0);
	test_assert(config_parse_time("100000 days", &secs, &error) < 0);
	/* milliseconds: ms is a unit, a bare number is still seconds */
	test_assert(config_parse_time_msecs("250 ms", &secs, &error) == 0 &&
		    secs == 250);
	test_assert(config_parse_time_msecs("250msecs", &secs, &error) == 0 &&
		    secs == 250);
	test_assert(config_parse_time_msecs("2", &secs, &error) == 0 &&
		    secs == 2000);
	test_assert(config_parse_time_msecs("2 mins", &secs, &error) == 0 &&
		    secs == 120000);
	test_assert(config_parse_time_msecs("50 days", &secs, &error) < 0);
	test_assert(config_parse_time_msecs("5 fortnights", &secs, &error) < 0);
}

static void test_bad_values(void)
{
	assert_error("bad1.conf", "\nlog_debug = true\n", 2, "yes or no");
	assert_error("bad2.conf", "first_valid_uid = -1\n", 1, "invalid number");
	assert_error("bad3.conf", "first_valid_uid = 99999999999\n", 1,
		     "at most");
	assert_error("bad4.conf", "imap_max_append_size = 10 X\n", 1,
		     "invalid size");
	assert_error("bad5.conf", "imap_idle_timeout = 30 fortnights\n", 1,
		     "invalid time");
	assert_error("bad6.conf", "imap_idle_timeout = 4 secs\n", 1,
		     "at least 5");
	assert_error("bad7.conf", "mail_fsync = sometimes\n", 1,
		     "optimized, always, never");
	assert_error("badmbox1.conf", "mailbox_trash = ../Trash\n", 1,
		     "not a valid mailbox name");
	assert_error("badmbox2.conf", "mailbox_junk = a//b\n", 1,
		     "not a valid mailbox name");
	assert_error("bad8.conf", "protocols = imap pop3\n", 1, "pop3");
	assert_error("bad9.conf", "mail_location = mbox:~/mail\n", 1, "maildir");
	assert_error("bad10.conf", "base_dir = relative/dir\n", 1, "absolute");
	assert_error("bad11.conf", "default_login_user =\n", 1, "empty");
	assert_error("badnet1.conf", "login_trusted_networks = 10.0.0.0/33\n", 1,
		     "not ADDRESS or ADDRESS/BITS");
	assert_error("badnet2.conf", "login_trusted_networks = 10.0.0.0/8 foo\n", 1,
		     "'foo' is not ADDRESS");
	assert_error("badmaxauth.conf", "imap_max_auth_attempts = 0\n", 1, "");
	assert_error("badpark1.conf", "login_auth_park_timeout = 0\n", 1,
		     "at least 1");
	assert_error("badpark2.conf", "login_auth_park_limit = 100001\n", 1,
		     "at most 100000");
	assert_error("bad12.conf", "imap_max_bad_commands = 0\n", 1,
		     "at least 1");
	assert_error("badpipe1.conf", "imap_max_pipelined_commands = 0\n", 1,
		     "at least 1");
	assert_error("badpipe2.conf", "imap_max_pipelined_commands = 100001\n",
		     1, "at most 100000");
	assert_error("badctx1.conf", "imap_max_update_contexts = 0\n", 1,
		     "at least 1");
	assert_error("badctx2.conf", "imap_max_update_contexts = 1001\n", 1,
		     "at most 1000");
	assert_error("badnotify1.conf", "imap_notify_max_buffer = 1023\n", 1,
		     "at least");
	assert_error("badnotify2.conf", "imap_notify_max_buffer = 513k\n", 1,
		     "at most");
	assert_error("badcommit1.conf", "imap_commit_batch_max = 0\n", 1,
		     "at least 1");
	assert_error("badcommit2.conf", "imap_commit_batch_max = 1025\n",
		     1, "at most 1024");
	assert_error("bad13.conf", "auth_mechanisms = plain gssapi\n", 1,
		     "gssapi");
	/* a whole-file check has no line */
	const char *error;
	test_assert(parse_str("bad14.conf", "first_valid_uid = 1000\n"
			      "last_valid_uid = 999\n", &error) == NULL);
	test_assert(strstr(error, "bad14.conf: last_valid_uid") != NULL);
}

static void test_syntax_errors(void)
{
	assert_error("syn1.conf", "log_debug = yes\nno_such_setting = 1\n", 2,
		     "unknown setting 'no_such_setting'");
	assert_error("syn2.conf", "frobnicate {\n}\n", 1,
		     "unknown section type 'frobnicate'");
	assert_error("syn3.conf", "service pop3-login {\n}\n", 1,
		     "unknown service 'pop3-login'");
	assert_error("syn4.conf", "service imap {\n process_limit = 2\n", 2,
		     "missing '}'");
	assert_error("syn5.conf", "log_debug = no\n}\n", 2,
		     "'}' without an open section");
	assert_error("syn6.conf", "service imap {\n}\nservice imap {\n}\n", 3,
		     "duplicate service 'imap'");
	assert_error("syn7.conf", "service imap-login {\n"
		     "  inet_listener imap {\n    port = 1143\n  }\n"
		     "  inet_listener imap {\n    port = 1144\n  }\n}\n", 5,
		     "duplicate inet_listener 'imap'");
	assert_error("syn8.conf", "just_a_word\n", 1, "expected '=' or '{'");
	assert_error("syn9.conf", "log_path = \"/tmp/x\n", 1,
		     "missing closing");
	assert_error("syn10.conf", "log_path = \"/tmp/x\" junk\n", 1,
		     "after the closing");
	assert_error("syn11.conf", "log_path = \"a\\qb\"\n", 1,
		     "invalid escape");
	assert_error("syn12.conf", "service imap {\n  bogus = 1\n}\n", 2,
		     "unknown setting 'bogus' in a service block");
	assert_error("syn13.conf", "service auth {\n  inet_listener x {\n"
		     "    port = 1\n  }\n}\n", 2, "only allowed in services "
		     "imap-login and lmtp");
	assert_error("syn13b.conf", "service imap-login {\n  unix_listener x {\n"
		     "  }\n}\n", 2, "unix_listener is only allowed in service lmtp");
	assert_error("syn13c.conf", "service lmtp {\n  unix_listener ../x {\n"
		     "  }\n}\n", 2, "unix_listener needs a path");
	assert_error("syn13d.conf", "service lmtp {\n  unix_listener a,b {\n"
		     "  }\n}\n", 2, "unix_listener needs a path");
	assert_error("syn13e.conf", "service lmtp {\n  unix_listener x {\n"
		     "    port = 24\n  }\n}\n", 3,
		     "unknown setting 'port' in a unix_listener block");
	assert_error("syn13f.conf", "service lmtp {\n  unix_listener lmtp {\n"
		     "    mode = 0999\n  }\n}\n", 3, "octal");
	assert_error("syn13g.conf", "service lmtp {\n  unix_listener lmtp {\n"
		     "  }\n  unix_listener lmtp {\n  }\n}\n", 4,
		     "duplicate unix_listener 'lmtp'");
	assert_error("syn13h.conf", "lmtp_username_format = %x\n", 1,
		     "unknown variable");
	assert_error("syn13i.conf", "recipient_delimiter = ++\n", 1,
		     "one character");
	assert_error("syn13j.conf", "protocols = imap pop3\n", 1,
		     "unknown word 'pop3'");
	assert_error("syn14.conf", "service {\n}\n", 1, "needs a name");
	assert_error("syn15.conf", "passdb {\n  driver = passwd-file\n}\n", 3,
		     "args");
	assert_error("syn16.conf", "userdb {\n  driver = ldap\n"
		     "  args = x\n}\n", 4, "unknown driver 'ldap'");
	/* the system-user drivers, run by auth-worker */
	const char *sys_error;
	struct moat_settings *sys = parse_str("sys.conf",
		"passdb {\n  driver = shadow\n}\n"
		"userdb {\n  driver = passwd\n}\n", &sys_error);
	test_assert(sys != NULL);
	if (sys != NULL) {
		test_assert_str(sys->passdbs[0].driver, "shadow");
		test_assert_str(sys->userdbs[0].driver, "passwd");
		moat_settings_free(&sys);
	}
	assert_error("syn17.conf", "userdb {\n  driver = shadow\n}\n", 3,
		     "unknown driver 'shadow'");
	assert_error("syn17.conf", "passdb {\n  service imap {\n  }\n}\n", 2,
		     "not allowed here");
	assert_error("syn18.conf", "!frob x\n", 1, "unknown directive");
	assert_error("syn19.conf", "service imap { # c\n}\n}\n", 3,
		     "without an open section");

	/* a line over CONFIG_LINE_MAX */
	char *big = i_malloc(CONFIG_LINE_MAX + 64);
	memcpy(big, "\nlog_path = /", 13);
	memset(big + 13, 'a', CONFIG_LINE_MAX);
	strcpy(big + 13 + CONFIG_LINE_MAX, "\n");
	assert_error("long.conf", big, 2, "line too long");
	/* the longest allowed line is fine */
	big[1 + CONFIG_LINE_MAX] = '\n';
	big[2 + CONFIG_LINE_MAX] = '\0';
	const char *error;
	struct moat_settings *set = parse_str("long2.conf", big, &error);
	test_assert(set != NULL);
	if (set != NULL) {
		test_assert_int(strlen(set->log_path), CONFIG_LINE_MAX - 11);
		moat_settings_free(&set);
	}
	free(big);
}

static void test_quoted(void)
{
	const char *error;
	struct moat_settings *set = parse_str("quoted.conf",
		"log_path = \"/tmp/with space # not a comment\" # comment\n"
		"mail_uid = \"a\\\"b\\\\c\"\n"
		"mail_gid = \"\"\n"
		"default_login_user = \"  padded  \"\n", &error);
	test_assert(set != NULL);
	if (set == NULL)
		return;
	test_assert_str(set->log_path, "/tmp/with space # not a comment");
	test_assert_str(set->mail_uid, "a\"b\\c");
	test_assert_str(set->mail_gid, "");
	test_assert_str(set->default_login_user, "  padded  ");
	moat_settings_free(&set);
}

static void test_sections(void)
{
	const char *error;
	struct moat_settings *set = parse_str("sections.conf",
		"service imap-login {\n"
		"  process_limit = 8\n"
		"  vsz_limit = 128 M\n"
		"  inet_listener imaps {\n"
		"    port = 0\n"
		"  }\n"
		"  inet_listener \"submission-ish\" {\n"
		"    address = 127.0.0.1\n"
		"    port = 10143\n"
		"  }\n"
		"  inet_listener imap {\n"
		"    address = ::1\n"
		"  }\n"
		"}\n"
		"service imap {\n"
		"  client_limit = 5\n"
		"  idle_kill = 5 mins\n"
		"}\n"
		"passdb {\n  driver = passwd-file\n  args = /etc/moat/passwd\n}\n"
		"passdb {\n  driver = passwd-file\n  args = /etc/moat/passwd2\n}\n"
		"userdb {\n  driver = passwd-file\n  args = /etc/moat/passwd\n"
		"  default_fields = uid=vmail home=/srv/%u\n"
		"  override_fields = gid=vmail\n}\n", &error);
	test_assert(set != NULL);
	if (set == NULL) {
		fprintf(stderr, "  error: %s\n", error);
		return;
	}
	const struct moat_service_settings *login =
		moat_settings_get_service(set, "imap-login");
	test_assert_int(login->process_limit, 8);
	test_assert_int(login->vsz_limit, 128 << 20);
	test_assert_int(login->client_limit, 1000);   /* untouched default */
	test_assert_str(login->chroot, "empty");
	test_assert_int(login->listener_count, 3);
	test_assert_str(login->listeners[0].name, "imap");
	test_assert_str(login->listeners[0].address, "::1");
	test_assert_int(login->listeners[0].port, 143);
	test_assert_str(login->listeners[1].name, "imaps");
	test_assert_int(login->listeners[1].port, 0);
	test_assert(login->listeners[1].ssl);
	test_assert_str(login->listeners[2].name, "submission-ish");
	test_assert_str(login->listeners[2].address, "127.0.0.1");
	test_assert_int(login->listeners[2].port, 10143);
	test_assert(!login->listeners[2].ssl);

	const struct moat_service_settings *imap =
		moat_settings_get_service(set, "imap");
	test_assert_int(imap->client_limit, 5);
	test_assert_int(imap->idle_kill, 300);
	test_assert_int(imap->process_limit, 1024);

	test_assert_int(set->passdb_count, 2);
	test_assert_str(set->passdbs[0].driver, "passwd-file");
	test_assert_str(set->passdbs[0].args, "/etc/moat/passwd");
	test_assert_str(set->passdbs[1].args, "/etc/moat/passwd2");
	test_assert_int(set->userdb_count, 1);
	test_assert_str(set->userdbs[0].default_fields, "uid=vmail home=/srv/%u");
	test_assert_str(set->userdbs[0].override_fields, "gid=vmail");
	test_assert(moat_settings_validate(set, &error) == 0);
	moat_settings_free(&set);

	/* service/listener value checks */
	assert_error("svc1.conf", "service imap-login {\n inet_listener imap {\n"
		     "  port = 70000\n }\n}\n", 3, "at most 65535");
	assert_error("svc2.conf", "service imap {\n  process_limit = 0\n}\n", 2,
		     "at least 1");
	assert_error("svc3.conf", "service auth {\n  client_limit = 0\n}\n", 2,
		     "at least 1");
	assert_error("svc4.conf", "service imap-login {\n"
		     "  process_limit = 2\n  process_min_avail = 3\n}\n", 4,
		     "process_min_avail (3) is larger");
	assert_error("svc5.conf", "service imap-login {\n inet_listener new {\n"
		     "  address = 127.0.0.1\n }\n}\n", 4, "port is not set");
	assert_error("svc6.conf", "service imap-login {\n inet_listener imaps {\n"
		     "  port = 143\n }\n}\n", 5, "both use port 143");
	assert_error("svc7.conf", "service imap-login {\n inet_listener imap {\n"
		     "  address = localhost\n }\n}\n", 3, "not an IP address");
	assert_error("svc8.conf", "service imap-login {\n inet_listener a,b {\n"
		     "  port = 1\n }\n}\n", 2, "needs a name");
}

static void test_lmtp_sections(void)
{
	const char *error;
	struct moat_settings *set = parse_str("lmtp.conf",
		"protocols = imap lmtp\n"
		"recipient_delimiter = -\n"
		"lmtp_username_format = %Ln\n"
		"service lmtp {\n"
		"  unix_listener lmtp {\n"
		"    mode = 0600\n"
		"    user = postfix\n"
		"    group = postfix\n"
		"  }\n"
		"  unix_listener /var/spool/postfix/private/moat-lmtp {\n"
		"  }\n"
		"  inet_listener lmtp {\n"
		"    address = 127.0.0.1\n"
		"    port = 24\n"
		"  }\n"
		"}\n", &error);
	test_assert(set != NULL);
	if (set == NULL) {
		fprintf(stderr, "  error: %s\n", error);
		return;
	}
	test_assert(moat_settings_has_protocol(set, "lmtp"));
	test_assert(moat_settings_has_protocol(set, "IMAP"));
	test_assert(!moat_settings_has_protocol(set, "lmt"));
	const struct moat_service_settings *lmtp =
		moat_settings_get_service(set, "lmtp");
	/* an inet_listener may share a unix_listener's name: another kind */
	test_assert_int(lmtp->listener_count, 3);
	test_assert(lmtp->listeners[0].unix_socket);
	test_assert_int(moat_listener_mode(&lmtp->listeners[0]), 0600);
	test_assert_str(lmtp->listeners[0].user, "postfix");
	test_assert_str(lmtp->listeners[1].name,
			"/var/spool/postfix/private/moat-lmtp");
	test_assert_int(moat_listener_mode(&lmtp->listeners[1]), 0666);
	test_assert(!lmtp->listeners[2].unix_socket);
	test_assert_int(lmtp->listeners[2].port, 24);

	/* written back and read again: the same settings */
	buffer_t out;
	buffer_init(&out, TEST_OUT_MAX);
	test_assert(moat_settings_write(set, true, &out) == 0);
	test_assert(strstr(out.data, "  unix_listener lmtp {\n"
			   "    mode = 0600\n") != NULL);
	write_file("lmtp2.conf", out.data);
	struct moat_settings *set2 = NULL;
	test_assert(moat_settings_parse(test_path("lmtp2.conf"), &set2,
					&error) == 0);
	test_assert(set2 != NULL && moat_settings_equal(set, set2));
	moat_settings_free(&set2);
	buffer_free(&out);
	moat_settings_free(&set);
}

static void test_quota_settings(void)
{
	const char *error;
	struct moat_settings *set = parse_str("quota.conf",
		"quota_storage = 1G\nquota_messages = 5000\n"
		"quota_grace = 10%\nquota_warning = 95 80 90%\n", &error);
	unsigned int pct[MOAT_SETTINGS_QUOTA_WARNINGS_MAX];

	test_assert(set != NULL);
	if (set == NULL)
		return;
	test_assert_int(set->quota_storage, 1ULL << 30);
	test_assert_int(set->quota_messages, 5000);
	test_assert_int(moat_settings_quota_grace(set, 1000), 100);
	test_assert_int(moat_settings_quota_grace(set, UINT64_MAX / 2),
			UINT64_MAX / 2 / 100 * 10 + UINT64_MAX / 2 % 100 * 10 / 100);
	test_assert_int(moat_settings_quota_warnings(set, pct, N_ELEMENTS(pct)), 3);
	test_assert(pct[0] == 80 && pct[1] == 90 && pct[2] == 95);
	moat_settings_free(&set);
	set = parse_str("quota2.conf", "quota_grace = 5M\n", &error);
	test_assert(set != NULL && moat_settings_quota_grace(set, 1) == 5 << 20);
	moat_settings_free(&set);
	assert_error("quota3.conf", "quota_grace = 101%\n", 1, "percentage");
	assert_error("quota4.conf", "quota_grace = x%\n", 1, "percentage");
	assert_error("quota5.conf", "quota_warning = 0\n", 1, "1..100");
	assert_error("quota6.conf", "quota_warning = 80 abc\n", 1, "1..100");
	assert_error("quota7.conf", "quota_warning = 1 2 3 4 5 6 7 8 9\n", 1,
		     "too many");
}

static void test_validate(void)
{
	const char *error;

	/* parse accepts a partial file; read (master) needs a passdb */
	write_file("nopassdb.conf", "log_debug = yes\n");
	struct moat_settings *set = NULL;
	test_assert(moat_settings_parse(test_path("nopassdb.conf"), &set,
					&error) == 0);
	test_assert(moat_settings_validate(set, &error) < 0 &&
		    strstr(error, "no passdb configured") != NULL);
	moat_settings_free(&set);
	test_assert(moat_settings_read(test_path("nopassdb.conf"), &set,
				       &error) < 0);
	test_assert(strstr(error, "nopassdb.conf: no passdb configured") != NULL);

	write_file("full.conf", "passdb {\n  driver = passwd-file\n"
		   "  args = /x\n}\n");
	test_assert(moat_settings_read(test_path("full.conf"), &set,
				       &error) == 0);
	if (set != NULL)
		moat_settings_free(&set);

	test_assert(moat_settings_read(test_path("does-not-exist.conf"), &set,
				       &error) < 0);
	test_assert(strstr(error, "does-not-exist.conf") != NULL);
}

static void test_haproxy_settings(void)
{
	const char *error;
	struct moat_settings *set = parse_str("haproxy.conf",
		"haproxy_trusted_networks = 10.0.0.0/8 2001:db8::/32\n"
		"haproxy_timeout = 5 secs\n"
		"passdb {\n  driver = passwd-file\n  args = /x\n}\n"
		"service imap-login {\n"
		"  inet_listener imap-lb {\n"
		"    port = 10143\n"
		"    haproxy = yes\n"
		"  }\n"
		"}\n", &error);
	test_assert(set != NULL);
	if (set == NULL)
		return;
	test_assert(moat_settings_validate(set, &error) == 0);
	test_assert_int(set->haproxy_timeout, 5);
	const struct moat_service_settings *login =
		moat_settings_get_service(set, "imap-login");
	test_assert_int(login->listener_count, 3);
	test_assert(!login->listeners[0].haproxy);
	test_assert(login->listeners[2].haproxy);
	test_assert(moat_settings_net_match(set->haproxy_trusted_networks,
					    "10.1.2.3"));
	test_assert(!moat_settings_net_match(set->haproxy_trusted_networks,
					     "192.0.2.1"));
	/* written back and read again: the same settings */
	buffer_t out;
	buffer_init(&out, TEST_OUT_MAX);
	test_assert(moat_settings_write(set, true, &out) == 0);
	test_assert(strstr(out.data, "    haproxy = yes\n") != NULL);
	write_file("haproxy2.conf", out.data);
	struct moat_settings *set2 = NULL;
	test_assert(moat_settings_parse(test_path("haproxy2.conf"), &set2,
					&error) == 0);
	test_assert(set2 != NULL && moat_settings_equal(set, set2));
	moat_settings_free(&set2);
	buffer_free(&out);
	moat_settings_free(&set);

	/* a haproxy listener nobody may use */
	write_file("haproxy3.conf",
		"passdb {\n  driver = passwd-file\n  args = /x\n}\n"
		"service imap-login {\n  inet_listener imap {\n"
		"    haproxy = yes\n  }\n}\n");
	test_assert(moat_settings_read(test_path("haproxy3.conf"), &set,
				       &error) < 0);
	test_assert(strstr(error, "inet_listener imap: haproxy = yes needs "
			   "haproxy_trusted_networks") != NULL);
	assert_error("haproxy4.conf", "protocols = imap lmtp\n"
		     "service lmtp {\n  inet_listener lmtp {\n    port = 24\n"
		     "    haproxy = yes\n  }\n}\n", 7,
		     "haproxy is supported only in service imap-login");
	assert_error("haproxy5.conf", "haproxy_trusted_networks = 10.0.0.0/99\n",
		     1, "ADDRESS/BITS");
	assert_error("haproxy6.conf", "haproxy_timeout = 0\n", 1, "");
}

static void test_include(void)
{
	const char *error;

	test_assert(mkdir(test_path("inc"), 0700) == 0);
	test_assert(mkdir(test_path("inc/conf.d"), 0700) == 0);
	write_file("inc/conf.d/10-a.conf", "first_valid_uid = 1001\n");
	write_file("inc/conf.d/20-b.conf", "first_valid_uid = 1002\n"
		   "last_valid_uid = 5000\n");
	write_file("inc/conf.d/ignored.txt", "garbage\n");
	write_file("inc/svc.conf", "  process_limit = 7\n");
	write_file("inc/main.conf",
		   "log_debug = yes\n"
		   "!include conf.d/*.conf\n"
		   "!include_try missing.conf\n"
		   "!include_try nomatch/*.conf\n"
		   "service imap {\n"
		   "  !include svc.conf\n"
		   "}\n");
	/* cwd is elsewhere: paths are relative to the including file */
	struct moat_settings *set = NULL;
	test_assert(moat_settings_parse(test_path("inc/main.conf"), &set,
					&error) == 0);
	if (set == NULL)
		fprintf(stderr, "  error: %s\n", error);
	else {
		test_assert(set->log_debug);
		test_assert_int(set->first_valid_uid, 1002);
		test_assert_int(set->last_valid_uid, 5000);
		test_assert_int(moat_settings_get_service(set, "imap")->
				process_limit, 7);
		moat_settings_free(&set);
	}

	/* a missing !include is an error at its line */
	assert_error("inc/miss.conf", "\n!include missing.conf\n", 2,
		     "missing.conf");
	/* errors inside an included file name that file */
	write_file("inc/bad.conf", "\n\nbogus = 1\n");
	assert_error_where("inc/incbad.conf", "!include bad.conf\n",
			   "inc/bad.conf:3:", "unknown setting 'bogus'");
	/* sections must close in the file that opens them */
	write_file("inc/open.conf", "service imap {\n");
	assert_error_where("inc/incopen.conf", "!include open.conf\n}\n",
			   "inc/open.conf:1:", "missing '}'");

	/* an include loop stops at the depth limit */
	assert_error("inc/loop.conf", "!include loop.conf\n", 1,
		     "nested too deeply");
	/* a chain of exactly CONFIG_INCLUDE_DEPTH_MAX includes is fine */
	for (unsigned int i = 0; i < CONFIG_INCLUDE_DEPTH_MAX; i++) {
		char name[64], contents[64];
		snprintf(name, sizeof(name), "inc/chain%u.conf", i);
		snprintf(contents, sizeof(contents), "!include chain%u.conf\n",
			 i + 1);
		write_file(name, contents);
	}
	char last[64];
	snprintf(last, sizeof(last), "inc/chain%u.conf", CONFIG_INCLUDE_DEPTH_MAX);
	write_file(last, "login_timeout = 7\n");
	set = NULL;
	test_assert(moat_settings_parse(test_path("inc/chain0.conf"), &set,
					&error) == 0);
	if (set != NULL) {
		test_assert_int(set->login_timeout, 7);
		moat_settings_free(&set);
	}
	write_file(last, "!include_try whatever.conf\n");
	test_assert(moat_settings_parse(test_path("inc/chain0.conf"), &set,
					&error) < 0);

	/* a glob may not open more than CONFIG_INCLUDE_FILES_MAX files */
	test_assert(mkdir(test_path("inc/many"), 0700) == 0);
	for (unsigned int i = 0; i < CONFIG_INCLUDE_FILES_MAX; i++) {
		char name[64];
		snprintf(name, sizeof(name), "inc/many/%03u.conf", i);
		write_file(name, "log_debug = yes\n");
	}
	assert_error("inc/many.conf", "!include many/*.conf\n", 1,
		     "too many included files");
	/* ... and exactly as many as allowed is fine */
	test_assert(unlink(test_path("inc/many/000.conf")) == 0);
	test_assert(moat_settings_parse(test_path("inc/many.conf"), &set,
					&error) == 0);
	if (set != NULL)
		moat_settings_free(&set);
}

/* In a child that cannot read the key file (as nobody when we are
   root): the unprivileged parse gives an empty ssl_key, the normal one
   fails. Exit status 0 when both behave. */
static int unreadable_child(const char *conf)
{
	struct moat_settings *set = NULL;
	const char *error;

	if (getuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
			      setuid(65534) < 0))
		return 10;
	if (moat_settings_parse(conf, &set, &error) == 0 ||
	    strstr(error, "Permission denied") == NULL)
		return 11;
	if (moat_settings_parse_unprivileged(conf, &set, &error) < 0)
		return 12;
	int ret = strcmp(set->ssl_key, "") == 0 &&
		strcmp(set->mail_location, "maildir:/m") == 0 ? 0 : 13;
	moat_settings_free(&set);
	return ret;
}

static void test_unreadable_value_file(void)
{
	write_file("key.pem", "-----BEGIN PRIVATE KEY-----\nx\n");
	write_file("loc.txt", "maildir:/m\n");
	write_file("unread.conf", "ssl_key = <key.pem\nmail_location = <loc.txt\n");
	test_assert(chmod(test_path("key.pem"), 0) == 0);
	/* the directory must stay traversable for the child */
	test_assert(chmod(test_tmpdir(), 0755) == 0);
	test_assert(chmod(test_path("unread.conf"), 0644) == 0);
	test_assert(chmod(test_path("loc.txt"), 0644) == 0);
	pid_t pid = fork();
	test_assert(pid >= 0);
	if (pid == 0)
		_exit(unreadable_child(test_path("unread.conf")));
	int status;
	test_assert(waitpid(pid, &status, 0) == pid);
	test_assert(WIFEXITED(status));
	test_assert_int(WEXITSTATUS(status), 0);
}

static void test_value_file(void)
{
	const char *error;

	write_file("val.txt", "maildir:/srv/mail/%u\n");
	write_file("val2.txt", "two\nlines\n");
	struct moat_settings *set = parse_str("valfile.conf",
		"mail_location = <val.txt\n"
		"mail_uid = < \"val2.txt\"\n", &error);
	test_assert(set != NULL);
	if (set != NULL) {
		test_assert_str(set->mail_location, "maildir:/srv/mail/%u");
		test_assert_str(set->mail_uid, "two\nlines");
		moat_settings_free(&set);
	}
	assert_error("valfile2.conf", "\nmail_uid = <nope.txt\n", 2, "nope.txt");
	assert_error("valfile3.conf", "mail_uid = <\n", 1, "missing file name");

	/* over CONFIG_VALUE_FILE_MAX */
	char *big = i_malloc(CONFIG_VALUE_FILE_MAX + 2);
	memset(big, 'x', CONFIG_VALUE_FILE_MAX + 1);
	write_file("big.txt", big);
	assert_error("valfile4.conf", "mail_uid = <big.txt\n", 1, "too large");
	/* exactly the maximum (with its newline) is fine */
	big[CONFIG_VALUE_FILE_MAX - 1] = '\n';
	big[CONFIG_VALUE_FILE_MAX] = '\0';
	write_file("big.txt", big);
	set = parse_str("valfile5.conf", "mail_uid = <big.txt\n", &error);
	test_assert(set != NULL);
	if (set != NULL) {
		test_assert_int(strlen(set->mail_uid),
				CONFIG_VALUE_FILE_MAX - 1);
		moat_settings_free(&set);
	}
	free(big);
}

static struct moat_settings *custom_settings(void)
{
	const char *error;
	write_file("val2.txt", "two\nlines\n");
	struct moat_settings *set = parse_str("custom.conf",
		"base_dir = /run/moat-test\n"
		"log_path = \"/var/log/moat #1.log\"\n"
		"log_debug = yes\n"
		"mail_uid = \"  odd\\tname \\\"q\\\" {x} \\\\ \"\n"
		"mail_gid = <val2.txt\n"
		"mail_fsync = always\n"
		"imap_max_line_length = 12345\n"
		"imap_max_append_size = 3G\n"
		"imap_idle_timeout = 1 hours\n"
		"imap_process_linger = 61\n"
		"auth_failure_delay = 1500 ms\n"
		"login_max_command_size = 2k\n"
		"service imap-login {\n"
		"  user = nobody\n  chroot = /var/empty\n  service_count = 1\n"
		"  inet_listener imaps {\n    address = 127.0.0.1\n  }\n"
		"  inet_listener extra {\n    port = 1993\n    ssl = yes\n  }\n"
		"}\n"
		"service auth {\n  vsz_limit = 0\n}\n"
		"passdb {\n  driver = passwd-file\n  args = \"/etc/moat/users\"\n}\n"
		"userdb {\n  driver = passwd-file\n  args = /etc/moat/users\n"
		"  default_fields = uid=vmail gid=vmail home=/srv/mail/%u\n}\n",
		&error);
	if (set == NULL)
		fprintf(stderr, "  custom.conf: %s\n", error);
	return set;
}

static struct moat_settings *read_back(const buffer_t *out)
{
	int fd = memfd_create("moat-config", MFD_CLOEXEC);
	struct moat_settings *set = NULL;
	const char *error;

	test_assert(fd >= 0);
	test_assert(write(fd, out->data, out->used) == (ssize_t)out->used);
	/* the fd's offset is at the end: read_fd must not care */
	if (moat_settings_read_fd(fd, "memfd", &set, &error) < 0) {
		fprintf(stderr, "  read back: %s\n%s", error, out->data);
		set = NULL;
	}
	close(fd);
	return set;
}

static void test_round_trip(void)
{
	struct moat_settings *set = custom_settings();
	buffer_t out;

	test_assert(set != NULL);
	if (set == NULL)
		return;
	test_assert_str(set->mail_gid, "two\nlines");

	buffer_init(&out, TEST_OUT_MAX);
	test_assert(moat_settings_write(set, false, &out) == 0);
	struct moat_settings *set2 = read_back(&out);
	test_assert(set2 != NULL);
	if (set2 != NULL) {
		test_assert(moat_settings_equal(set, set2));
		test_assert_str(set2->mail_uid, set->mail_uid);
		test_assert_str(set2->log_path, set->log_path);
		test_assert_int(set2->imap_max_line_length, 12345);
		test_assert_int(set2->imap_max_append_size, 3ULL << 30);
		test_assert_int(set2->auth_failure_delay, 1500);
		test_assert_int(set2->login_max_command_size, 2048);
		test_assert_int(moat_settings_get_service(set2,
			"imap-login")->listener_count, 3);
		moat_settings_free(&set2);
	}

	/* -n output reads back to the same settings too */
	buffer_reset(&out);
	test_assert(moat_settings_write(set, true, &out) == 0);
	set2 = read_back(&out);
	test_assert(set2 != NULL && moat_settings_equal(set, set2));
	if (set2 != NULL)
		moat_settings_free(&set2);

	/* defaults round trip as well, and differ from the custom set */
	struct moat_settings *defaults = moat_settings_defaults();
	test_assert(!moat_settings_equal(set, defaults));
	buffer_reset(&out);
	test_assert(moat_settings_write(defaults, false, &out) == 0);
	set2 = read_back(&out);
	test_assert(set2 != NULL && moat_settings_equal(defaults, set2));
	if (set2 != NULL)
		moat_settings_free(&set2);

	/* a full buffer is reported */
	buffer_t small;
	buffer_init(&small, 64);
	test_assert(moat_settings_write(defaults, false, &small) < 0);
	buffer_free(&small);

	moat_settings_free(&defaults);
	moat_settings_free(&set);
	buffer_free(&out);
}

#define TEST_CERT "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n"
#define TEST_KEY "-----BEGIN PRIVATE KEY-----\nU0VDUkVU\n-----END PRIVATE KEY-----\n"
#define TEST_DBS "passdb {\n  driver = passwd-file\n  args = /x\n}\n"

/* "" if contents parses and validates, else the error. */
static const char *ssl_validate(const char *contents)
{
	static char error_copy[MOAT_SETTINGS_ERROR_MAX];
	const char *error = "";
	struct moat_settings *set = parse_str("ssl-v.conf", contents, &error);

	if (set != NULL && moat_settings_validate(set, &error) == 0)
		error = "";
	snprintf(error_copy, sizeof(error_copy), "%s", error);
	moat_settings_free(&set);
	return error_copy;
}

static void test_ssl_settings(void)
{
	const char *error;
	buffer_t out;

	write_file("cert.pem", TEST_CERT);
	write_file("key.pem", TEST_KEY);
	struct moat_settings *set = parse_str("ssl.conf",
		"ssl = required\nssl_cert = <cert.pem\nssl_key = <key.pem\n"
		"ssl_min_protocol = TLSv1.3\nssl_prefer_server_ciphers = yes\n"
		"ssl_cipher_suites = TLS_AES_256_GCM_SHA384\n" TEST_DBS, &error);
	test_assert(set != NULL);
	if (set == NULL)
		return;
	test_assert_int(set->ssl, MOAT_SSL_REQUIRED);
	test_assert_int(set->ssl_min_protocol, MOAT_SSL_TLSV1_3);
	test_assert(set->ssl_prefer_server_ciphers);
	test_assert(strstr(set->ssl_key, "U0VDUkVU") != NULL);
	test_assert(moat_settings_validate(set, &error) == 0);

	/* the key is left out of the normal output, and only there */
	buffer_init(&out, TEST_OUT_MAX);
	test_assert(moat_settings_write(set, false, &out) == 0);
	test_assert(strstr(out.data, "QUJD") != NULL);
	test_assert(strstr(out.data, "U0VDUkVU") == NULL);
	test_assert(strstr(out.data, "\nssl_key = ") == NULL);
	struct moat_settings *set2 = read_back(&out);
	test_assert(set2 != NULL && set2->ssl_key[0] == '\0');
	moat_settings_free(&set2);
	test_assert(moat_settings_write_secrets(set, &out) == 0);
	set2 = read_back(&out);
	test_assert(set2 != NULL && moat_settings_equal(set, set2));
	moat_settings_free(&set2);
	buffer_reset(&out);
	test_assert(moat_settings_write(set, true, &out) == 0);
	test_assert(strstr(out.data, "U0VDUkVU") == NULL);
	buffer_free(&out);
	moat_settings_free(&set);

	/* defaults: TLS offered, no certificate, so unavailable */
	set = moat_settings_defaults();
	test_assert_int(set->ssl, MOAT_SSL_YES);
	test_assert_int(set->ssl_min_protocol, MOAT_SSL_TLSV1_2);
	test_assert_str(set->ssl_cert, "");
	moat_settings_free(&set);

	test_assert_str(ssl_validate("ssl_cert = <cert.pem\n" TEST_DBS),
			"ssl_cert and ssl_key must be set together");
	test_assert_str(ssl_validate("ssl = required\n" TEST_DBS),
			"ssl = required, but ssl_cert is not set");
	test_assert(strstr(ssl_validate("ssl_cert = <cert.pem\n"
		"ssl_key = <key.pem\nssl_verify_client_cert = yes\n" TEST_DBS),
		"needs ssl_ca") != NULL);
	test_assert(strstr(ssl_validate("ssl_cert = /etc/cert.pem\n" TEST_DBS),
			   "not PEM data") != NULL);
	test_assert(strstr(ssl_validate("ssl = maybe\n" TEST_DBS),
			   "use one of") != NULL);
	test_assert(strstr(ssl_validate("ssl_min_protocol = TLSv1.1\n" TEST_DBS),
			   "use one of") != NULL);
}

static void test_non_default_output(void)
{
	struct moat_settings *set = moat_settings_defaults();
	buffer_t out;

	buffer_init(&out, TEST_OUT_MAX);
	test_assert(moat_settings_write(set, true, &out) == 0);
	test_assert_int(out.used, 0);
	moat_settings_free(&set);

	const char *error;
	set = parse_str("changed.conf",
		"log_debug = yes\n"
		"first_valid_uid = 500\n"      /* same as the default */
		"service imap-login {\n"
		"  process_limit = 64\n"       /* same as the default */
		"  inet_listener imaps {\n    port = 0\n  }\n"
		"}\n"
		"service imap {\n  process_limit = 64\n}\n", &error);
	test_assert(set != NULL);
	if (set == NULL)
		return;
	buffer_reset(&out);
	test_assert(moat_settings_write(set, true, &out) == 0);
	test_assert_str(out.data,
		"log_debug = yes\n"
		"service imap-login {\n"
		"  inet_listener imaps {\n"
		"    port = 0\n"
		"  }\n"
		"}\n"
		"service imap {\n"
		"  process_limit = 64\n"
		"}\n");

	/* the full form names everything */
	buffer_reset(&out);
	test_assert(moat_settings_write(set, false, &out) == 0);
	test_assert(strstr(out.data, "first_valid_uid = 500\n") != NULL);
	test_assert(strstr(out.data, "imap_idle_timeout = 30 mins\n") != NULL);
	test_assert(strstr(out.data, "imap_max_append_size = 64M\n") != NULL);
	test_assert(strstr(out.data, "service auth {\n") != NULL);
	test_assert(strstr(out.data, "  inet_listener imap {\n") != NULL);
	test_assert(strstr(out.data, "log_path = \"\"\n") != NULL);
	buffer_free(&out);
	moat_settings_free(&set);
}

/* A FIFO, a device or a directory named as a config file or <file value
   is refused at once (a FIFO would block master's start forever). */
static void test_non_regular_files(void)
{
	const char *fifo = test_path("fifo");

	test_assert(mkfifo(fifo, 0600) == 0);
	assert_error("nonreg1.conf", "mail_uid = <fifo\n", 1,
		     "not a regular file");
	assert_error("nonreg2.conf", "\n!include fifo\n", 2,
		     "not a regular file");
	assert_error("nonreg3.conf", "mail_uid = </dev/null\n", 1,
		     "not a regular file");
	assert_error("nonreg4.conf", "mail_uid = <.\n", 1,
		     "not a regular file");
	/* !include_try of a FIFO is an error too: it exists */
	assert_error("nonreg5.conf", "!include_try fifo\n", 1,
		     "not a regular file");
	struct moat_settings *set = NULL;
	const char *error = "";
	test_assert(moat_settings_parse(fifo, &set, &error) < 0);
	test_assert(strstr(error, "not a regular file") != NULL);
	test_assert(unlink(fifo) == 0);
}

TEST_MAIN(
	TEST(test_non_regular_files),
	TEST(test_defaults),
	TEST(test_types),
	TEST(test_bad_values),
	TEST(test_syntax_errors),
	TEST(test_quoted),
	TEST(test_sections),
	TEST(test_lmtp_sections), TEST(test_quota_settings), TEST(test_validate),
	TEST(test_haproxy_settings),
	TEST(test_include),
	TEST(test_value_file), TEST(test_unreadable_value_file),
	TEST(test_round_trip),
	TEST(test_ssl_settings),
	TEST(test_non_default_output)
)
