/* login_max_connections_per_ip over every imap-login process: each
   process asks master (CONNECT) before it greets a client that the limit
   applies to, and says DISCONNECT when that client logs in or leaves.
   master counts per remote address here; a process that dies takes its
   connections with it.

   The records come from imap-login, which is untrusted: ids and
   addresses are checked, and a process may not hold more counted
   connections than its client_limit (else it is killed). What a
   compromised imap-login can do with this is lie about its own clients,
   which it could serve without asking anyway. */
#include "master-common.h"
#include "strfuncs.h"

#include <signal.h>

/* Buckets of the address table and of each process's connection table
   (chains grow beyond; the tables only make lookups short). */
#define LOGIN_LIMITS_IP_BUCKETS 4096
#define LOGIN_LIMITS_CONN_BUCKETS 256
/* An address as imap-login writes it: IPv6 text is at most 45 bytes. */
#define LOGIN_LIMITS_IP_MAX_LEN 64

struct login_ip {
	struct login_ip *next;
	unsigned int count;
	char ip[LOGIN_LIMITS_IP_MAX_LEN + 1];
};

struct login_ip_conn {
	struct login_ip_conn *next;
	unsigned int id;
	struct login_ip *ip;
};

struct login_limits {
	struct login_ip *buckets[LOGIN_LIMITS_IP_BUCKETS];
};

/* The connections one imap-login process has counted. */
struct login_child_conns {
	struct login_ip_conn *buckets[LOGIN_LIMITS_CONN_BUCKETS];
	unsigned int count;
};

static unsigned int str_hash(const char *str)
{
	unsigned int h = 5381;

	for (; *str != '\0'; str++)
		h = h * 33 + (unsigned char)*str;
	return h;
}

void login_limits_init(struct master *master)
{
	master->login_limits = i_malloc(sizeof(*master->login_limits));
}

void login_limits_deinit(struct master *master)
{
	/* Every child's connections went with it (login_limits_child_gone). */
	free(master->login_limits);
	master->login_limits = NULL;
}

static struct login_ip **ip_find(struct login_limits *limits, const char *ip)
{
	struct login_ip **p = &limits->buckets[str_hash(ip) %
					       LOGIN_LIMITS_IP_BUCKETS];

	while (*p != NULL && strcmp((*p)->ip, ip) != 0)
		p = &(*p)->next;
	return p;
}

static unsigned int ip_count(struct login_limits *limits, const char *ip)
{
	struct login_ip *entry = *ip_find(limits, ip);

	return entry == NULL ? 0 : entry->count;
}

static struct login_ip *ip_ref(struct login_limits *limits, const char *ip)
{
	struct login_ip **p = ip_find(limits, ip);

	if (*p == NULL) {
		*p = i_malloc(sizeof(**p));
		memcpy((*p)->ip, ip, strlen(ip) + 1);
	}
	(*p)->count++;
	return *p;
}

static void ip_unref(struct login_limits *limits, struct login_ip *entry)
{
	i_assert(entry->count > 0);
	if (--entry->count > 0)
		return;
	struct login_ip **p = ip_find(limits, entry->ip);
	i_assert(*p == entry);
	*p = entry->next;
	free(entry);
}

static struct login_ip_conn **conn_find(struct login_child_conns *conns,
					unsigned int id)
{
	struct login_ip_conn **p = &conns->buckets[id % LOGIN_LIMITS_CONN_BUCKETS];

	while (*p != NULL && (*p)->id != id)
		p = &(*p)->next;
	return p;
}

/* Address text of imap-login: hex digits, '.' and ':' only. */
static bool ip_field_ok(const char *ip)
{
	size_t len = strlen(ip);

	if (len == 0 || len > LOGIN_LIMITS_IP_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = ip[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		      (c >= 'A' && c <= 'F') || c == '.' || c == ':'))
			return false;
	}
	return true;
}

static void login_limits_violation(struct child *child, const char *what)
{
	i_error("imap-login %d sent %s, killing it", (int)child->pid, what);
	child_kill(child, SIGKILL);
}

/* CONNECT <id> <remote_ip> */
static void login_limits_connect(struct child *child, const char *const *args)
{
	struct master *master = child->master;
	unsigned int max = master->set->login_max_connections_per_ip, id;
	struct login_child_conns *conns;
	struct login_ip_conn **p;
	const char *reply = "CONNECT-OK";

	if (str_array_length(args) != 3 || str_to_uint(args[1], &id) < 0 ||
	    id == 0 || !ip_field_ok(args[2])) {
		login_limits_violation(child, "a malformed CONNECT");
		return;
	}
	if (child->ip_conns == NULL)
		child->ip_conns = i_malloc(sizeof(*child->ip_conns));
	conns = child->ip_conns;
	p = conn_find(conns, id);
	if (*p != NULL || conns->count >= child->client_limit) {
		login_limits_violation(child, *p != NULL ?
			"a CONNECT with an id in use" :
			"more CONNECTs than its client_limit");
		return;
	}
	/* 0 = unlimited (a reload may have turned the limit off) */
	if (max != 0 && ip_count(master->login_limits, args[2]) >= max) {
		reply = "CONNECT-FAIL";
	} else {
		*p = i_malloc(sizeof(**p));
		(*p)->id = id;
		(*p)->ip = ip_ref(master->login_limits, args[2]);
		conns->count++;
	}
	(void)ipc_sendv(child->conn, -1, reply, args[1], NULL);
}

/* DISCONNECT <id>: an id we do not know was refused (or the process's
   CONNECT crossed a reload); that is no violation. */
static void login_limits_disconnect(struct child *child,
				    const char *const *args)
{
	struct login_ip_conn **p, *conn;
	unsigned int id;

	if (str_array_length(args) != 2 || str_to_uint(args[1], &id) < 0 ||
	    id == 0) {
		login_limits_violation(child, "a malformed DISCONNECT");
		return;
	}
	if (child->ip_conns == NULL)
		return;
	p = conn_find(child->ip_conns, id);
	if (*p == NULL)
		return;
	conn = *p;
	*p = conn->next;
	ip_unref(child->master->login_limits, conn->ip);
	child->ip_conns->count--;
	free(conn);
}

bool login_limits_input(struct child *child, const char *const *args)
{
	if (strcmp(args[0], "CONNECT") == 0)
		login_limits_connect(child, args);
	else if (strcmp(args[0], "DISCONNECT") == 0)
		login_limits_disconnect(child, args);
	else
		return false;
	return true;
}

void login_limits_child_gone(struct child *child)
{
	struct login_child_conns *conns = child->ip_conns;

	if (conns == NULL)
		return;
	for (unsigned int i = 0; i < LOGIN_LIMITS_CONN_BUCKETS; i++) {
		while (conns->buckets[i] != NULL) {
			struct login_ip_conn *conn = conns->buckets[i];

			conns->buckets[i] = conn->next;
			ip_unref(child->master->login_limits, conn->ip);
			free(conn);
		}
	}
	free(conns);
	child->ip_conns = NULL;
}
