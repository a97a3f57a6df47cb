/* imap: the post-login IMAP process of one user.

   SECURITY: talks to its user's IMAP clients (sockets master hands over
   after authentication), to lmtp over delivery sockets master hands over
   (moat-deliver: lmtp can only add messages, imap-deliver.h) and to
   master over its own socketpair (fd 3, moat-imap-master). Runs as the user's uid/gid (MOAT_UID/MOAT_GID) with
   no capabilities, no_new_privs, the service's vsz_limit and the imap
   seccomp allowlist (files, but no exec and no socket of its own) and,
   with landlock = yes, Landlock: it may change files only beneath its
   home and mail root and read only system directories; no chroot
   (it needs the user's mail files, which it owns). It parses client bytes
   only after dropping privileges, and can reach nothing of other users.
   One process serves all of the user's connections on one event loop. */
#include "imap-common.h"
#include "imap-client.h"
#include "imap-admin.h"
#include "imap-commit.h"
#include "imap-deliver.h"
#include "imap-quota.h"
#include "master-service.h"
#include "imap-mailbox.h"
#include "imap-status.h"
#include "imap-text-memo.h"
#include "imap-thread-cache.h"
#include "imap-stats.h"
#include "sock-linger.h"
#include "landlock.h"
#include "prefetch-thread.h"
#include "mailbox-read-ahead.h"

#include <sys/stat.h>

/* CONN <id> <tag> <remote_ip> <remote_port> <local_ip> <local_port>
   <secured> <mech> <b64:bytes> */
#define CONN_RECORD_ARGS 10
/* A limit refusal's text. */
#define CONN_LIMIT_TEXT_MAX 160

struct imap_process {
	struct imap_user user;
	struct master_service *service;
	struct ipc_conn *master;
	struct timeout *to_linger;
	struct timeout *to_stats;      /* the next imap_stats_flush() */
	/* every mailbox's reading ahead (mailbox-read-ahead.h), or NULL */
	struct prefetch_thread *prefetch;
	bool shutdown_requested, shutdown_ok;
};

static struct imap_process imap_process;

static void linger_start(struct imap_process *proc);

static void stats_timeout(void *context)
{
	struct imap_process *proc = context;

	imap_stats_flush(&proc->user, proc->master);
	proc->to_stats = timeout_add(proc->user.ioloop, IMAP_STATS_FLUSH_MSECS,
				     stats_timeout, proc);
}

static void linger_timeout(void *context)
{
	struct imap_process *proc = context;

	proc->to_linger = NULL;
	if (proc->user.client_count > 0 || proc->shutdown_requested)
		return;
	if (proc->user.deliver_conn_count > 0) {
		linger_start(proc);   /* a delivery is under way */
		return;
	}
	proc->shutdown_requested = true;
	if (ipc_sendv(proc->master, -1, "SHUTDOWN-REQUEST", NULL) < 0)
		master_service_stop(proc->service);
}

static void linger_start(struct imap_process *proc)
{
	if (proc->to_linger != NULL || proc->shutdown_requested)
		return;
	proc->to_linger = timeout_add(proc->user.ioloop,
		proc->user.set->imap_process_linger * 1000,
		linger_timeout, proc);
}

void imap_user_client_gone(struct imap_user *user)
{
	struct imap_process *proc = &imap_process;

	i_assert(user == &proc->user);
	if (user->client_count > 0 || user->deliver_conn_count > 0)
		return;
	/* nobody polls now: give the index handles back */
	imap_status_cache_free(&user->status_cache);
	if (proc->shutdown_ok)
		master_service_stop(proc->service);
	else
		linger_start(proc);
}

/* The limit a new connection from rip would exceed (its refusal text), or
   NULL. This process sees every connection of its user, so the per-user
   limits are exact here. The imap service's client_limit caps the user's
   connections too. */
static const char *conn_limit_exceeded(struct imap_process *proc,
				       const char *rip)
{
	const struct moat_settings *set = proc->user.set;
	const struct moat_service_settings *service =
		master_service_get_service_settings(proc->service);
	unsigned int user_max = set->mail_max_user_connections, same_ip = 0;
	static char text[CONN_LIMIT_TEXT_MAX];

	if (set->mail_max_userip_connections != 0) {
		for (const struct client *c = proc->user.clients; c != NULL;
		     c = c->next) {
			if (!c->disconnected && strcmp(c->session, rip) == 0)
				same_ip++;
		}
		if (same_ip >= set->mail_max_userip_connections) {
			snprintf(text, sizeof(text), "Maximum number of "
				 "connections from user+IP exceeded "
				 "(mail_max_userip_connections=%u)",
				 set->mail_max_userip_connections);
			return text;
		}
	}
	if (service != NULL && service->client_limit != 0 &&
	    (user_max == 0 || service->client_limit < user_max)) {
		snprintf(text, sizeof(text), "Maximum number of connections "
			 "of user exceeded (client_limit=%u)",
			 service->client_limit);
		user_max = service->client_limit;
	} else {
		snprintf(text, sizeof(text), "Maximum number of connections "
			 "of user exceeded (mail_max_user_connections=%u)",
			 user_max);
	}
	if (user_max != 0 && proc->user.client_count >= user_max)
		return text;
	return NULL;
}

/* Refuse a handed-over connection: the LOGIN's tagged reply is ours to
   write, so the client hears NO [LIMIT] instead of OK. The socket is new
   and empty: one short write fits. */
static void conn_refuse(int fd, const char *tag, const char *rip,
			const char *text)
{
	char line[CONN_LIMIT_TEXT_MAX * 2 + 64];
	int len;

	if (tag[0] != '\0')
		len = snprintf(line, sizeof(line), "* BYE [UNAVAILABLE] %s\r\n"
			       "%s NO [LIMIT] %s\r\n", text, tag, text);
	else
		len = snprintf(line, sizeof(line), "* BYE [UNAVAILABLE] %s\r\n",
			       text);
	if (len > 0 && (size_t)len < sizeof(line))
		(void)write(fd, line, (size_t)len);
	i_warning("connection refused: rip=%s, reason=%s", rip, text);
	close(fd);
}

static void master_conn(struct imap_process *proc, const char *const *args,
			int fd)
{
	unsigned char *prefix;
	size_t prefix_size;
	pool_t pool = pool_create("imap conn", 1024);

	if (str_array_length(args) != CONN_RECORD_ARGS || fd == -1 ||
	    p_base64_decode(pool, args[9], strlen(args[9]), &prefix,
			    &prefix_size) < 0)
		i_fatal("master sent an invalid CONN record");
	if (fd_set_nonblock(fd, true) < 0)
		i_fatal("fcntl(O_NONBLOCK) failed: %m");
	/* before anything reaches the client: until master reads this it
	   keeps the connection, to give it to another process if this one
	   dies now (master/handoff.c) */
	if (proc->master != NULL)
		(void)ipc_sendv(proc->master, -1, "CONN-DONE", args[1], NULL);
	const char *limit = conn_limit_exceeded(proc, args[3]);
	if (limit != NULL) {
		conn_refuse(fd, args[2], args[3], limit);
		pool_unref(&pool);
		return;
	}
	timeout_remove(&proc->to_linger);
	imap_mailbox_autocreate(&proc->user);
	(void)client_create(&proc->user, fd, args[2], prefix, prefix_size,
			    args[3]);
	pool_unref(&pool);
}

/* Master is trusted; a record we do not understand is a bug there and
   ends the process (OpenBSD style). */
static void master_input(void *context, const char *const *args, int fd)
{
	struct imap_process *proc = context;

	if (args == NULL) {
		i_error("master connection closed");
		ipc_conn_destroy(&proc->master);
		master_service_stop(proc->service);
		return;
	}
	if (strcmp(args[0], "CONN") == 0) {
		master_conn(proc, args, fd);
		return;
	}
	if (strcmp(args[0], "DELIVER-CONN") == 0) {
		if (fd == -1 || str_array_length(args) != 1)
			i_fatal("master sent an invalid DELIVER-CONN record");
		timeout_remove(&proc->to_linger);
		imap_deliver_conn_create(&proc->user, fd);
		return;
	}
	if (fd != -1)
		i_close_fd(&fd);
	if (strcmp(args[0], "SHUTDOWN-OK") == 0) {
		proc->shutdown_ok = true;
		if (proc->user.client_count == 0 &&
		    proc->user.deliver_conn_count == 0)
			master_service_stop(proc->service);
		return;
	}
	imap_mailbox_autocreate(&proc->user);
	if (imap_admin_input(&proc->user, proc->master, args))
		return;
	i_fatal("master sent an unknown record");
}

static void imap_deinit_clients(struct imap_process *proc, const char *bye)
{
	while (proc->user.clients != NULL) {
		struct client *client = proc->user.clients;
		if (!client->disconnected)
			client_disconnect(client, bye, "Server shutting down");
		client_destroy(client);
	}
}

int main(void)
{
	struct imap_process *proc = &imap_process;
	const char *error;
	char *root;

	proc->service = master_service_init("imap");
	proc->user.ioloop = master_service_get_ioloop(proc->service);
	proc->user.set = master_service_get_settings(proc->service);
	imap_commit_init(&proc->user);
	imap_text_memo_init(proc->user.set->imap_fetch_text_memo);
	imap_thread_cache_init(proc->user.set->imap_thread_cache_size);
	proc->user.username = master_service_getenv("MOAT_USER");
	const char *home = master_service_getenv("MOAT_HOME");
	const char *mail = master_service_getenv("MOAT_MAIL");
	if (mail[0] == '\0')
		mail = proc->user.set->mail_location;

	char *context = i_strdup_printf("user=%s", proc->user.username);
	log_set_context(context);
	if (mailbox_location_parse(mail, home, &root, &error) < 0)
		i_fatal("%s", error);
	proc->user.mail_root = root;

	/* Another user's Maildir stays out of reach even under the same
	   mail_uid: only the home and the mail root can be written. */
	const char *const rw_paths[] = { home, root, NULL };
	master_service_set_landlock(proc->service, landlock_system_ro_paths,
				    rw_paths);
	master_service_drop_privileges(proc->service, MOAT_SECCOMP_PROFILE_IMAP);
	/* after the seccomp filter, which the thread inherits */
	proc->prefetch = prefetch_thread_create(MAILBOX_READ_AHEAD_QUEUE,
						&error);
	if (proc->prefetch == NULL) {
		/* only slower (RLIMIT_NPROC of a mail uid, say) */
		i_warning("read-ahead thread: %s: %m; reading ahead on the "
			  "event loop", error);
	}
	mailbox_read_ahead_set_thread(proc->prefetch);
	/* mail files are the user's alone */
	umask(0077);
	/* INBOX exists from the start; the SPECIAL-USE folders (RFC 6154)
	   from the first login on (imap_mailbox_autocreate()): a process
	   that only takes deliveries into INBOX does not create them */
	const struct mailbox_special_names no_specials = { { NULL } };
	if (mailbox_list_autocreate(root, &no_specials, &error) < 0)
		i_error("Creating the default mailboxes failed: %s", error);
	imap_quota_init(&proc->user);
	proc->master = master_service_connect_master(proc->service,
		IPC_PROTO_IMAP_MASTER, master_input, proc);
	proc->user.lingers = sock_linger_set_create(proc->user.ioloop,
						    IMAP_MAX_LINGERING, NULL, NULL);
	linger_start(proc);
	proc->to_stats = timeout_add(proc->user.ioloop, IMAP_STATS_FLUSH_MSECS,
				     stats_timeout, proc);

	master_service_run(proc->service);

	imap_deinit_clients(proc, "Server shutting down.");
	/* the last commands' counters, before the channel closes */
	imap_stats_flush(&proc->user, proc->master);
	timeout_remove(&proc->to_stats);
	imap_stats_deinit(&proc->user);
	/* the deliveries' pending commits go before the queue does */
	imap_deliver_conns_destroy_all(&proc->user);
	imap_commit_deinit(&proc->user);
	sock_linger_set_destroy(&proc->user.lingers);
	imap_status_cache_free(&proc->user.status_cache);
	/* every mailbox is closed */
	mailbox_read_ahead_set_thread(NULL);
	prefetch_thread_destroy(&proc->prefetch);
	timeout_remove(&proc->to_linger);
	if (proc->master != NULL)
		ipc_conn_destroy(&proc->master);
	master_service_deinit(&proc->service);
	i_free(root);
	i_free(context);
	return 0;
}
