/* config-from-dovecot: `doveconf -n` output (or a dovecot.conf without
   !include) to the moat.conf of the settings moat shares, on stdout;
   every setting it cannot carry is listed on stderr (doc/moatadm.8).
   It reads text only: no privileges, no running server. */
#include "admin-common.h"
#include "strfuncs.h"

#include <ctype.h>
#include <stdio.h>

/* doveconf -n of a big installation is a few hundred lines. */
#define ADMIN_DOVECONF_LINE_MAX 8192
#define ADMIN_DOVECONF_LINES_MAX 100000
#define ADMIN_DOVECONF_DEPTH_MAX 8
#define ADMIN_DOVECONF_GLOBALS_MAX 128
#define ADMIN_DOVECONF_DBS_MAX 16
#define ADMIN_DOVECONF_SERVICES_MAX 8
#define ADMIN_DOVECONF_LISTENERS_MAX 16
#define ADMIN_DOVECONF_WARNINGS_MAX 8

/* Top-level settings whose name, values and meaning are the same in
   both (sizes and times use the same units). */
static const char *const admin_same_globals[] = {
	"log_path", "mail_uid", "mail_gid", "first_valid_uid",
	"last_valid_uid", "mail_fsync", "disable_plaintext_auth",
	"auth_cache_size", "auth_cache_ttl", "auth_cache_negative_ttl",
	"auth_failure_delay", "mail_max_userip_connections",
	"recipient_delimiter", "lmtp_save_to_detail_mailbox",
	"imap_max_line_length", "ssl", "ssl_cert", "ssl_key", "ssl_ca",
	"ssl_cipher_list", "ssl_cipher_suites", "ssl_prefer_server_ciphers",
	"ssl_verify_client_cert", "ssl_cert_username_field",
	"quota_full_tempfail", "login_trusted_networks", NULL
};
/* What moat's services take from Dovecot's blocks of the same name. */
static const char *const admin_service_keys[] = {
	"process_limit", "process_min_avail", "client_limit", "service_count",
	"vsz_limit", "idle_kill", NULL
};
static const char *const admin_services[] = {
	"imap-login", "imap", "lmtp", NULL
};
static const char *const admin_mechanisms[] = {
	"plain", "login", "scram-sha-1", "scram-sha-1-plus", "scram-sha-256",
	"scram-sha-256-plus", "cram-md5", "oauthbearer", "xoauth2",
	"external", NULL
};
/* namespace { mailbox X { special_use = \Y } } to moat's mailbox_* */
static const struct {
	const char *special_use, *setting;
} admin_specials[] = {
	{ "\\Drafts", "mailbox_drafts" }, { "\\Sent", "mailbox_sent" },
	{ "\\Trash", "mailbox_trash" }, { "\\Junk", "mailbox_junk" },
	{ "\\Archive", "mailbox_archive" },
};

struct admin_kv {
	const char *key, *value;
};

struct admin_listener {
	const char *name;
	bool unix_socket;
	struct admin_kv kv[8];
	unsigned int kv_count;
	bool has_address;
};

struct admin_service {
	const char *name;
	struct admin_kv kv[8];
	unsigned int kv_count;
	struct admin_listener listeners[ADMIN_DOVECONF_LISTENERS_MAX];
	unsigned int listener_count;
};

struct admin_db {
	bool userdb;
	const char *driver, *args, *default_fields, *override_fields;
};

struct admin_section {
	const char *type, *name;
};

struct admin_doveconf {
	pool_t pool;
	struct admin_section stack[ADMIN_DOVECONF_DEPTH_MAX];
	unsigned int depth;
	unsigned int line;        /* of the input, for errors */
	struct admin_kv globals[ADMIN_DOVECONF_GLOBALS_MAX];
	unsigned int global_count;
	struct admin_db dbs[ADMIN_DOVECONF_DBS_MAX];
	unsigned int db_count;
	struct admin_service services[ADMIN_DOVECONF_SERVICES_MAX];
	unsigned int service_count;
	const char *listen;
	const char *special_mailbox;   /* inside namespace/mailbox */
	/* quota_warning percentages, ascending */
	unsigned int warnings[ADMIN_DOVECONF_WARNINGS_MAX];
	unsigned int warning_count;
	unsigned int skipped;
};

static void admin_skip(struct admin_doveconf *dc, const char *key,
		       const char *value, const char *why)
{
	char path[512] = "";

	for (unsigned int i = 0; i < dc->depth; i++) {
		const struct admin_section *s = &dc->stack[i];
		size_t len = strlen(path);
		snprintf(path + len, sizeof(path) - len, "%s%s%s/", s->type,
			 s->name[0] == '\0' ? "" : " ", s->name);
	}
	fprintf(stderr, "moatadm: not carried: %s%s = %s%s%s%s\n", path, key,
		value, why == NULL ? "" : " (", why == NULL ? "" : why,
		why == NULL ? "" : ")");
	dc->skipped++;
}

static bool admin_in(const char *const *list, const char *word)
{
	for (; *list != NULL; list++) {
		if (strcmp(*list, word) == 0)
			return true;
	}
	return false;
}

static void admin_global_set(struct admin_doveconf *dc, const char *key,
			     const char *value)
{
	for (unsigned int i = 0; i < dc->global_count; i++) {
		if (strcmp(dc->globals[i].key, key) == 0) {
			dc->globals[i].value = p_strdup(dc->pool, value);
			return;
		}
	}
	if (dc->global_count == N_ELEMENTS(dc->globals))
		return;
	dc->globals[dc->global_count].key = p_strdup(dc->pool, key);
	dc->globals[dc->global_count++].value = p_strdup(dc->pool, value);
}

/* "plain login digest-md5": the mechanisms moat has. */
static void admin_mechanisms_set(struct admin_doveconf *dc, const char *value)
{
	const char **words = p_strsplit(dc->pool, value, ' ');
	char out[512] = "";

	for (unsigned int i = 0; words[i] != NULL; i++) {
		char *w = p_strdup(dc->pool, words[i]);
		for (char *p = w; *p != '\0'; p++)
			*p = (char)tolower((unsigned char)*p);
		if (w[0] == '\0')
			continue;
		if (!admin_in(admin_mechanisms, w)) {
			admin_skip(dc, "auth_mechanisms", w, "moat has no such mechanism");
			continue;
		}
		if (strlen(out) + strlen(w) + 2 < sizeof(out)) {
			strcat(out, out[0] == '\0' ? "" : " ");
			strcat(out, w);
		}
	}
	if (out[0] != '\0')
		admin_global_set(dc, "auth_mechanisms", out);
}

static void admin_protocols_set(struct admin_doveconf *dc, const char *value)
{
	const char **words = p_strsplit(dc->pool, value, ' ');
	char out[64] = "";

	for (unsigned int i = 0; words[i] != NULL; i++) {
		if (words[i][0] == '\0')
			continue;
		if (strcmp(words[i], "imap") != 0 && strcmp(words[i], "lmtp") != 0) {
			admin_skip(dc, "protocols", words[i], "moat serves imap and lmtp");
			continue;
		}
		strcat(out, out[0] == '\0' ? "" : " ");
		strcat(out, words[i]);
	}
	if (out[0] != '\0')
		admin_global_set(dc, "protocols", out);
}

static void admin_top_setting(struct admin_doveconf *dc, const char *key,
			      const char *value)
{
	const char *path;

	if (str_begins(value, "# hidden", NULL)) {
		/* doveconf -n hides secrets */
		admin_skip(dc, key, value, "run doveconf -n -P to include it");
	} else if (admin_in(admin_same_globals, key)) {
		if (strcmp(key, "ssl_cert_username_field") == 0 &&
		    strcmp(value, "commonName") != 0 &&
		    strcmp(value, "emailAddress") != 0 &&
		    strcmp(value, "x500UniqueIdentifier") != 0)
			admin_skip(dc, key, value, "moat has no such field");
		else
			admin_global_set(dc, key, value);
	} else if (strcmp(key, "ssl_min_protocol") == 0) {
		bool ok = strcmp(value, "TLSv1.2") == 0 ||
			strcmp(value, "TLSv1.3") == 0;
		if (!ok)
			admin_skip(dc, key, value, "moat's minimum is TLSv1.2");
		else
			admin_global_set(dc, key, value);
	} else if (strcmp(key, "auth_mechanisms") == 0) {
		admin_mechanisms_set(dc, value);
	} else if (strcmp(key, "protocols") == 0) {
		admin_protocols_set(dc, value);
	} else if (strcmp(key, "listen") == 0) {
		dc->listen = p_strdup(dc->pool, value);
	} else if (strcmp(key, "hostname") == 0) {
		admin_global_set(dc, "lmtp_hostname", value);
	} else if (strcmp(key, "mail_location") == 0 &&
		   str_begins(value, "maildir:", &path) && path[0] != '\0') {
		size_t len = strcspn(path, ":");
		admin_global_set(dc, key, p_strdup_printf(dc->pool, "maildir:%.*s",
							  (int)len, path));
		if (path[len] != '\0')
			admin_skip(dc, key, path + len, "maildir options");
	} else {
		admin_skip(dc, key, value, NULL);
	}
}

/* passwd-file args "[scheme=X] [username_format=%u] PATH": the path. */
static const char *admin_db_args(struct admin_doveconf *dc, const char *key,
				 const char *value, const char *fallback)
{
	const char **words = p_strsplit(dc->pool, value, ' ');
	const char *last = fallback;

	for (unsigned int i = 0; words[i] != NULL; i++) {
		if (words[i][0] == '\0')
			continue;
		if (strchr(words[i], '=') != NULL)
			admin_skip(dc, key, words[i], "option of the driver");
		else
			last = words[i];
	}
	return last;
}

static void admin_db_setting(struct admin_doveconf *dc, const char *key,
			     const char *value)
{
	struct admin_db *db = &dc->dbs[dc->db_count - 1];

	if (strcmp(key, "driver") == 0)
		db->driver = p_strdup(dc->pool, value);
	else if (strcmp(key, "args") == 0)
		db->args = p_strdup(dc->pool, value);
	else if (strcmp(key, "default_fields") == 0 && db->userdb)
		db->default_fields = p_strdup(dc->pool, value);
	else if (strcmp(key, "override_fields") == 0 && db->userdb)
		db->override_fields = p_strdup(dc->pool, value);
	else
		admin_skip(dc, key, value, NULL);
}

static struct admin_service *admin_service_get(struct admin_doveconf *dc,
					       const char *name)
{
	for (unsigned int i = 0; i < dc->service_count; i++) {
		if (strcmp(dc->services[i].name, name) == 0)
			return &dc->services[i];
	}
	if (dc->service_count == N_ELEMENTS(dc->services))
		return NULL;
	struct admin_service *s = &dc->services[dc->service_count++];
	memset(s, 0, sizeof(*s));
	s->name = p_strdup(dc->pool, name);
	return s;
}

static void admin_kv_add(struct admin_doveconf *dc, struct admin_kv *kv,
			 unsigned int *count, unsigned int max,
			 const char *key, const char *value)
{
	if (*count < max) {
		kv[*count].key = p_strdup(dc->pool, key);
		kv[(*count)++].value = p_strdup(dc->pool, value);
	}
}

static void admin_service_setting(struct admin_doveconf *dc, const char *key,
				  const char *value)
{
	const struct admin_section *top = &dc->stack[0];
	struct admin_service *s = admin_service_get(dc, top->name);

	if (s == NULL) {
		admin_skip(dc, key, value, "too many services");
		return;
	}
	if (dc->depth == 1) {
		if (admin_in(admin_service_keys, key))
			admin_kv_add(dc, s->kv, &s->kv_count, N_ELEMENTS(s->kv),
				     key, value);
		else
			admin_skip(dc, key, value, strcmp(key, "chroot") == 0 ||
				   strcmp(key, "user") == 0 ?
				   "moat's own privilege separation" : NULL);
		return;
	}
	struct admin_listener *l = &s->listeners[s->listener_count - 1];
	bool inet = !l->unix_socket;
	if ((inet && (strcmp(key, "address") == 0 || strcmp(key, "port") == 0 ||
		      strcmp(key, "ssl") == 0)) ||
	    (!inet && (strcmp(key, "mode") == 0 || strcmp(key, "user") == 0 ||
		       strcmp(key, "group") == 0))) {
		if (strcmp(key, "address") == 0) {
			l->has_address = true;
			if (strchr(value, ',') != NULL || strchr(value, ' ') != NULL) {
				size_t len = strcspn(value, ", ");
				admin_skip(dc, key, value + len,
					   "one address per moat listener");
				value = p_strndup(dc->pool, value, len);
			}
		}
		admin_kv_add(dc, l->kv, &l->kv_count, N_ELEMENTS(l->kv), key, value);
	} else {
		admin_skip(dc, key, value, NULL);
	}
}

/* plugin { quota_rule = *:storage=1G ... } */
static void admin_plugin_setting(struct admin_doveconf *dc, const char *key,
				 const char *value)
{
	if (str_begins(key, "quota_rule", NULL) && str_begins(value, "*:", NULL)) {
		const char **parts = p_strsplit(dc->pool, value + 2, ':');
		for (unsigned int i = 0; parts[i] != NULL; i++) {
			const char *v;
			if (str_begins(parts[i], "storage=", &v))
				admin_global_set(dc, "quota_storage", v);
			else if (str_begins(parts[i], "messages=", &v))
				admin_global_set(dc, "quota_messages", v);
			else
				admin_skip(dc, key, parts[i], "quota rule part");
		}
	} else if (strcmp(key, "quota_grace") == 0) {
		char *v = p_strdup(dc->pool, value);
		char *pct = strstr(v, "%%");
		if (pct != NULL)
			memmove(pct, pct + 1, strlen(pct + 1) + 1);
		admin_global_set(dc, key, v);
	} else if (str_begins(key, "quota_warning", NULL)) {
		unsigned int percent;
		const char *p = strchr(value, '=');
		if (p != NULL && str_begins(value, "storage=", NULL) &&
		    sscanf(p + 1, "%u", &percent) == 1 && percent <= 100 &&
		    dc->warning_count < N_ELEMENTS(dc->warnings)) {
			unsigned int i = dc->warning_count++;
			for (; i > 0 && dc->warnings[i - 1] > percent; i--)
				dc->warnings[i] = dc->warnings[i - 1];
			dc->warnings[i] = percent;
			fprintf(stderr, "moatadm: note: %s = %s: moat sends its own "
				"warning message (the script is not run)\n", key, value);
		} else {
			admin_skip(dc, key, value, NULL);
		}
	} else if (strcmp(key, "quota_full_tempfail") == 0) {
		admin_global_set(dc, key, value);
	} else if (strcmp(key, "quota") == 0) {
		/* moat's quota is built in: the rules above are the limits */
	} else {
		admin_skip(dc, key, value, NULL);
	}
}

static void admin_setting(struct admin_doveconf *dc, const char *key,
			  const char *value)
{
	const char *type = dc->depth == 0 ? "" : dc->stack[0].type;
	const char *name = dc->depth == 0 ? "" : dc->stack[0].name;

	if (dc->depth == 0)
		admin_top_setting(dc, key, value);
	else if ((strcmp(type, "passdb") == 0 || strcmp(type, "userdb") == 0) &&
		 dc->depth == 1 && dc->db_count > 0)
		admin_db_setting(dc, key, value);
	else if (strcmp(type, "service") == 0 && admin_in(admin_services, name))
		admin_service_setting(dc, key, value);
	else if (strcmp(type, "plugin") == 0 && dc->depth == 1)
		admin_plugin_setting(dc, key, value);
	else if (strcmp(type, "protocol") == 0 && dc->depth == 1 &&
		 (strcmp(name, "imap") == 0 || strcmp(name, "lmtp") == 0) &&
		 (strcmp(key, "mail_max_userip_connections") == 0 ||
		  strcmp(key, "imap_max_line_length") == 0 ||
		  strcmp(key, "lmtp_save_to_detail_mailbox") == 0 ||
		  strcmp(key, "recipient_delimiter") == 0))
		admin_global_set(dc, key, value);
	else if (strcmp(type, "namespace") == 0 && dc->depth == 2 &&
		 strcmp(dc->stack[1].type, "mailbox") == 0 &&
		 strcmp(key, "special_use") == 0) {
		for (unsigned int i = 0; i < N_ELEMENTS(admin_specials); i++) {
			if (strcasecmp(value, admin_specials[i].special_use) == 0) {
				admin_global_set(dc, admin_specials[i].setting,
						 dc->stack[1].name);
				return;
			}
		}
		admin_skip(dc, key, value, NULL);
	} else if (strcmp(type, "namespace") == 0 &&
		   ((dc->depth == 1 && (strcmp(key, "inbox") == 0 ||
			(strcmp(key, "prefix") == 0 && value[0] == '\0') ||
			(strcmp(key, "location") == 0 && value[0] == '\0') ||
			strcmp(key, "separator") == 0)) ||
		    (dc->depth == 2 && strcmp(key, "auto") == 0))) {
		/* moat has one namespace and creates the special folders */
	} else {
		admin_skip(dc, key, value, NULL);
	}
}

static void admin_section_open(struct admin_doveconf *dc, const char *type,
			       const char *name)
{
	if (dc->depth == 0 && (strcmp(type, "passdb") == 0 ||
			       strcmp(type, "userdb") == 0) &&
	    dc->db_count < N_ELEMENTS(dc->dbs)) {
		struct admin_db *db = &dc->dbs[dc->db_count++];
		memset(db, 0, sizeof(*db));
		db->userdb = strcmp(type, "userdb") == 0;
	}
	if (dc->depth == 1 && strcmp(dc->stack[0].type, "service") == 0 &&
	    admin_in(admin_services, dc->stack[0].name) &&
	    (strcmp(type, "inet_listener") == 0 ||
	     strcmp(type, "unix_listener") == 0)) {
		struct admin_service *s = admin_service_get(dc, dc->stack[0].name);
		if (s != NULL && s->listener_count < N_ELEMENTS(s->listeners)) {
			struct admin_listener *l = &s->listeners[s->listener_count++];
			memset(l, 0, sizeof(*l));
			l->name = p_strdup(dc->pool, name);
			l->unix_socket = strcmp(type, "unix_listener") == 0;
		}
	}
	struct admin_section *s = &dc->stack[dc->depth++];
	s->type = p_strdup(dc->pool, type);
	s->name = p_strdup(dc->pool, name);
}

/* One line; -1 for what is not doveconf syntax. */
static int admin_doveconf_line(struct admin_doveconf *dc, char *line,
			       const char **error_r)
{
	char *p = line;

	p[strcspn(p, "\r\n")] = '\0';
	while (*p == ' ' || *p == '\t')
		p++;
	size_t len = strlen(p);
	while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		p[--len] = '\0';
	if (*p == '\0' || *p == '#')
		return 0;
	if (strcmp(p, "}") == 0) {
		if (dc->depth == 0) {
			*error_r = "'}' without a section";
			return -1;
		}
		dc->depth--;
		return 0;
	}
	char *eq = strchr(p, '=');
	if (len > 1 && p[len - 1] == '{' && (eq == NULL || eq > p + len - 1)) {
		p[--len] = '\0';
		while (len > 0 && p[len - 1] == ' ')
			p[--len] = '\0';
		char *sp = strchr(p, ' ');
		const char *name = "";
		if (sp != NULL) {
			*sp = '\0';
			name = sp + 1;
		}
		if (dc->depth == ADMIN_DOVECONF_DEPTH_MAX) {
			*error_r = "sections nested too deep";
			return -1;
		}
		admin_section_open(dc, p, name);
		return 0;
	}
	if (eq == NULL) {
		if (*p == '!')
			admin_skip(dc, p, "", "run doveconf -n for the whole config");
		else {
			*error_r = "neither a setting nor a section";
			return -1;
		}
		return 0;
	}
	char *key_end = eq;
	while (key_end > p && key_end[-1] == ' ')
		key_end--;
	*key_end = '\0';
	char *value = eq + 1;
	while (*value == ' ')
		value++;
	admin_setting(dc, p, value);
	return 0;
}

static void admin_emit_kv(const struct admin_kv *kv, unsigned int count,
			  const char *indent)
{
	for (unsigned int i = 0; i < count; i++)
		printf("%s%s = %s\n", indent, kv[i].key, kv[i].value);
}

static void admin_emit_db(struct admin_doveconf *dc, const struct admin_db *db)
{
	const char *kind = db->userdb ? "userdb" : "passdb";
	const char *driver = db->driver == NULL ? "" : db->driver;
	const char *args = NULL;

	if (strcmp(driver, "passwd-file") == 0)
		args = admin_db_args(dc, "args", db->args == NULL ? "" : db->args, "");
	else if (strcmp(driver, "pam") == 0 && !db->userdb)
		args = admin_db_args(dc, "args", db->args == NULL ? "" : db->args,
				     "dovecot");
	else if ((strcmp(driver, "shadow") == 0 && !db->userdb) ||
		 (strcmp(driver, "passwd") == 0 && db->userdb))
		args = "";
	if (args == NULL) {
		admin_skip(dc, kind, p_strdup_printf(dc->pool, "{ driver = %s }",
			   driver), "moat has no such driver");
		return;
	}
	printf("%s {\n  driver = %s\n", kind, driver);
	if (args[0] != '\0')
		printf("  args = %s\n", args);
	if (db->default_fields != NULL)
		printf("  default_fields = %s\n", db->default_fields);
	if (db->override_fields != NULL)
		printf("  override_fields = %s\n", db->override_fields);
	printf("}\n");
}

static void admin_emit_service(struct admin_doveconf *dc,
			       const struct admin_service *s)
{
	printf("service %s {\n", s->name);
	admin_emit_kv(s->kv, s->kv_count, "  ");
	for (unsigned int i = 0; i < s->listener_count; i++) {
		const struct admin_listener *l = &s->listeners[i];
		printf("  %s %s {\n", l->unix_socket ? "unix_listener" :
		       "inet_listener", l->name);
		/* Dovecot's listen applies to listeners without an address */
		if (!l->unix_socket && !l->has_address && dc->listen != NULL) {
			size_t len = strcspn(dc->listen, ", ");
			printf("    address = %.*s\n", (int)len, dc->listen);
		}
		admin_emit_kv(l->kv, l->kv_count, "    ");
		printf("  }\n");
	}
	printf("}\n");
}

/* doveconf -n leaves out Dovecot's defaults: where moat's differ, the
   converted file says Dovecot's (Dovecot 2.3). */
static const struct admin_kv admin_dovecot_defaults[] = {
	{ "auth_mechanisms", "plain" },
	{ "mail_max_userip_connections", "10" },
};

static bool admin_global_has(struct admin_doveconf *dc, const char *key)
{
	for (unsigned int i = 0; i < dc->global_count; i++) {
		if (strcmp(dc->globals[i].key, key) == 0)
			return true;
	}
	return false;
}

static void admin_emit(struct admin_doveconf *dc)
{
	printf("# moat.conf from Dovecot's settings (moatadm config-from-dovecot)\n");
	for (unsigned int i = 0; i < N_ELEMENTS(admin_dovecot_defaults); i++) {
		if (!admin_global_has(dc, admin_dovecot_defaults[i].key))
			admin_global_set(dc, admin_dovecot_defaults[i].key,
					 admin_dovecot_defaults[i].value);
	}
	if (!admin_global_has(dc, "mail_location"))
		fprintf(stderr, "moatadm: note: no mail_location (Dovecot looks "
			"for the mail): moat uses maildir:~/Maildir\n");
	char warnings[ADMIN_DOVECONF_WARNINGS_MAX * 5] = "";
	for (unsigned int i = 0; i < dc->warning_count; i++) {
		size_t len = strlen(warnings);
		snprintf(warnings + len, sizeof(warnings) - len, "%s%u",
			 i == 0 ? "" : " ", dc->warnings[i]);
	}
	if (warnings[0] != '\0')
		admin_global_set(dc, "quota_warning", warnings);
	admin_emit_kv(dc->globals, dc->global_count, "");
	if (dc->listen != NULL && strchr(dc->listen, ',') != NULL)
		admin_skip(dc, "listen", dc->listen + strcspn(dc->listen, ",") +
			   strspn(dc->listen + strcspn(dc->listen, ","), ", "),
			   "one address per moat listener");
	/* listen without a service block: moat's default listeners there */
	if (dc->listen != NULL && admin_service_get(dc, "imap-login") != NULL) {
		struct admin_service *s = admin_service_get(dc, "imap-login");
		if (s->listener_count == 0) {
			static const char *const names[] = { "imap", "imaps" };
			for (unsigned int i = 0; i < N_ELEMENTS(names); i++) {
				struct admin_listener *l = &s->listeners[s->listener_count++];
				memset(l, 0, sizeof(*l));
				l->name = names[i];
				admin_kv_add(dc, l->kv, &l->kv_count, N_ELEMENTS(l->kv),
					     "port", i == 0 ? "143" : "993");
				if (i == 1)
					admin_kv_add(dc, l->kv, &l->kv_count,
						     N_ELEMENTS(l->kv), "ssl", "yes");
			}
		}
	}
	for (unsigned int i = 0; i < dc->db_count; i++)
		admin_emit_db(dc, &dc->dbs[i]);
	for (unsigned int i = 0; i < dc->service_count; i++)
		admin_emit_service(dc, &dc->services[i]);
}

int admin_cmd_config_from_dovecot(struct admin_ctx *ctx, int argc, char **argv)
{
	struct admin_doveconf *dc = p_malloc(ctx->pool, sizeof(*dc));
	char line[ADMIN_DOVECONF_LINE_MAX];
	const char *error = NULL;

	if (argc > 2)
		return admin_usage(ctx, "config-from-dovecot [FILE|-]");
	const char *path = argc == 2 ? argv[1] : "-";
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (f == NULL)
		return admin_fail(ctx, ADMIN_EXIT_NOTFOUND, "notfound", "%s: %s",
				  path, strerror(errno));
	dc->pool = ctx->pool;
	while (error == NULL && fgets(line, sizeof(line), f) != NULL) {
		if (++dc->line > ADMIN_DOVECONF_LINES_MAX)
			error = "too many lines";
		else if (strchr(line, '\n') == NULL && !feof(f))
			error = "line too long";
		else
			(void)admin_doveconf_line(dc, line, &error);
	}
	if (f != stdin)
		fclose(f);
	if (error == NULL && dc->depth != 0)
		error = "a section is not closed";
	if (error != NULL)
		return admin_fail(ctx, ADMIN_EXIT_USAGE, "usage", "%s:%u: %s",
				  path, dc->line, error);
	/* imap-login's block is where "listen" lands */
	if (dc->listen != NULL)
		(void)admin_service_get(dc, "imap-login");
	admin_emit(dc);
	fflush(stdout);
	if (dc->skipped > 0)
		fprintf(stderr, "moatadm: %u setting(s) not carried (listed "
			"above)\n", dc->skipped);
	return 0;
}
