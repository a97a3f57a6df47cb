/* USERS: the user names of the passwd-file userdbs, for moatadm -A.
   Master reads the files itself (it is root; auth holds them as its own
   uid): they are the admin's files, not client input, and are read a
   line at a time, so memory does not grow with them. passwd userdbs
   (system users through NSS, which may block) are not listed. */
#include "master-admin-private.h"
#include "strfuncs.h"

#include <stdio.h>

/* As auth's passwd-file (PASSWD_FILE_MAX_LINE): a longer line is skipped
   there, and here. */
#define ADMIN_USERS_LINE_MAX (64 * 1024)

/* args of a passwd-file: "[scheme=NAME] PATH". */
static const char *admin_users_path(pool_t pool, const char *args)
{
	const char **words = p_strsplit(pool, args, ' ');

	for (unsigned int i = 0; words[i] != NULL; i++) {
		if (words[i][0] == '/')
			return words[i];
	}
	return NULL;
}

static int admin_users_file(struct admin_conn *client, const char *path)
{
	char *line = i_malloc(ADMIN_USERS_LINE_MAX);
	bool skipping = false;

	FILE *f = fopen(path, "re");
	if (f == NULL) {
		free(line);
		return -1;
	}
	while (fgets(line, ADMIN_USERS_LINE_MAX, f) != NULL) {
		size_t len = strlen(line);
		bool whole = len > 0 && line[len - 1] == '\n';
		bool skip = skipping;
		skipping = !whole;
		if (skip || !whole)
			continue;   /* (the rest of) a line too long */
		char *colon = strchr(line, ':');
		if (line[0] == '#' || colon == NULL || colon == line ||
		    (size_t)(colon - line) > ADMIN_USER_MAX)
			continue;
		*colon = '\0';
		admin_send_rowv(client, "user", line, NULL);
	}
	bool failed = ferror(f) != 0;
	fclose(f);
	free(line);
	return failed ? -1 : 0;
}

void admin_users_send(struct admin_request *req)
{
	const struct moat_settings *set = req->client->admin->master->set;
	pool_t pool = pool_create("admin users", 1024);

	for (unsigned int i = 0; i < set->userdb_count; i++) {
		const struct moat_db_settings *db = &set->userdbs[i];
		if (strcmp(db->driver, "passwd-file") != 0)
			continue;
		const char *path = admin_users_path(pool, db->args != NULL ?
						    db->args : "");
		if (path == NULL || admin_users_file(req->client, path) < 0) {
			pool_unref(&pool);
			admin_request_fail(req, "tempfail",
					   "cannot read a passwd-file userdb");
			return;
		}
	}
	pool_unref(&pool);
	admin_request_done(req);
}
