/* oauth2-file token lookups: see auth-oauth2-file.h. */
#include "lib.h"
#include "log.h"
#include "strfuncs.h"
#include "auth-oauth2-file.h"

#include <errno.h>

/* Split a line into token, user and expiry in place. */
static int oauth2_parse_line(char *line, const char **token_r,
			     const char **user_r, uint64_t *expiry_r)
{
	char *save = NULL, *token, *user, *expiry;

	token = strtok_r(line, " \t\r\n", &save);
	user = token == NULL ? NULL : strtok_r(NULL, " \t\r\n", &save);
	expiry = user == NULL ? NULL : strtok_r(NULL, " \t\r\n", &save);
	if (expiry == NULL || strtok_r(NULL, " \t\r\n", &save) != NULL ||
	    str_to_uint64(expiry, expiry_r) < 0)
		return -1;
	*token_r = token;
	*user_r = user;
	return 0;
}

static bool oauth2_token_equals(const char *a, const char *b)
{
	size_t len = strlen(a);

	return strlen(b) == len && mem_equals_timing_safe(a, b, len);
}

static int oauth2_scan(FILE *f, const char *path, pool_t pool,
		       const char *token, time_t now, const char **user_r)
{
	char line[AUTH_OAUTH2_FILE_MAX_LINE];
	const char *t, *u;
	uint64_t expiry;
	unsigned int n = 0;
	int ret = 0;

	while (ret == 0 && n < AUTH_OAUTH2_FILE_MAX_LINES &&
	       fgets(line, sizeof(line), f) != NULL) {
		n++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			i_warning("%s:%u: line too long", path, n);
			break;
		}
		if (line[0] == '#' || strspn(line, " \t\r\n") == strlen(line))
			continue;
		if (oauth2_parse_line(line, &t, &u, &expiry) < 0) {
			i_warning("%s:%u: malformed line (want: token user "
				  "expiry)", path, n);
			continue;
		}
		if (oauth2_token_equals(t, token) &&
		    (expiry == 0 || expiry > (uint64_t)now)) {
			*user_r = p_strdup(pool, u);
			ret = 1;
		}
	}
	safe_memset(line, 0, sizeof(line));
	return ret;
}

int auth_oauth2_file_lookup(const char *path, pool_t pool, const char *token,
			    time_t now, const char **user_r)
{
	FILE *f = fopen(path, "re");
	int ret;

	if (f == NULL) {
		i_error("oauth2-file: open(%s) failed: %s", path,
			strerror(errno));
		return -1;
	}
	ret = oauth2_scan(f, path, pool, token, now, user_r);
	fclose(f);
	return ret;
}
