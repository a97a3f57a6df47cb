/* Maildir file name parsing and generation (see maildir-filename.h). */
#include "lib.h"
#include "maildir-filename.h"

#include <sys/time.h>

static const struct {
	char c;
	enum mail_flags flag;
} maildir_flag_map[] = {
	/* ASCII order, as Maildir requires in the info part */
	{ 'D', MAIL_DRAFT },
	{ 'F', MAIL_FLAGGED },
	{ 'R', MAIL_ANSWERED },
	{ 'S', MAIL_SEEN },
	{ 'T', MAIL_DELETED },
};

char maildir_flag_char(enum mail_flags flag)
{
	for (unsigned int i = 0; i < N_ELEMENTS(maildir_flag_map); i++) {
		if (maildir_flag_map[i].flag == flag)
			return maildir_flag_map[i].c;
	}
	return '\0';
}

static enum mail_flags maildir_char_flag(char c)
{
	for (unsigned int i = 0; i < N_ELEMENTS(maildir_flag_map); i++) {
		if (maildir_flag_map[i].c == c)
			return maildir_flag_map[i].flag;
	}
	return 0;
}

/* Find ",<key>=<digits>" inside base and parse it. */
static uint64_t maildir_base_get_size(const char *base, size_t base_len,
				      char key)
{
	for (size_t i = 0; i + 2 < base_len; i++) {
		if (base[i] != ',' || base[i + 1] != key || base[i + 2] != '=')
			continue;
		uint64_t num = 0;
		size_t j = i + 3;
		if (j >= base_len || base[j] < '0' || base[j] > '9')
			continue;
		for (; j < base_len && base[j] >= '0' && base[j] <= '9'; j++) {
			if (num > (UINT64_MAX - 9) / 10)
				return MAILDIR_SIZE_UNKNOWN;
			num = num * 10 + (uint64_t)(base[j] - '0');
		}
		if (j == base_len || base[j] == ',')
			return num;
	}
	return MAILDIR_SIZE_UNKNOWN;
}

static void maildir_parse_info(const char *info, struct maildir_filename *fn)
{
	bool seen[128] = { false };

	for (; *info != '\0'; info++) {
		unsigned char c = (unsigned char)*info;
		if (c >= 128 || c <= ' ' || seen[c])
			continue;
		seen[c] = true;
		enum mail_flags flag = maildir_char_flag((char)c);
		if (flag != 0)
			fn->flags |= flag;
	}
	/* other letters in ASCII order, deduplicated */
	size_t n = 0;
	for (unsigned int c = 0; c < 128; c++) {
		if (!seen[c] || maildir_char_flag((char)c) != 0)
			continue;
		if (n < MAILDIR_OTHER_FLAGS_MAX)
			fn->other_flags[n++] = (char)c;
	}
	fn->other_flags[n] = '\0';
}

bool maildir_filename_parse(const char *fname, struct maildir_filename *fn_r)
{
	size_t len = strlen(fname);

	memset(fn_r, 0, sizeof(*fn_r));
	if (len == 0 || len > MAILDIR_FILENAME_MAX || fname[0] == '.' ||
	    strchr(fname, '/') != NULL)
		return false;

	const char *colon = strchr(fname, ':');
	fn_r->base_len = colon == NULL ? len : (size_t)(colon - fname);
	if (fn_r->base_len == 0)
		return false;
	fn_r->size = maildir_base_get_size(fname, fn_r->base_len, 'S');
	fn_r->vsize = maildir_base_get_size(fname, fn_r->base_len, 'W');
	if (colon != NULL && strncmp(colon, MAILDIR_INFO_PREFIX,
				     strlen(MAILDIR_INFO_PREFIX)) == 0) {
		fn_r->have_info = true;
		maildir_parse_info(colon + strlen(MAILDIR_INFO_PREFIX), fn_r);
	}
	return true;
}

int maildir_filename_make(char *buf, size_t size, const char *base,
			  size_t base_len, enum mail_flags flags,
			  const char *other_flags)
{
	bool set[128] = { false };
	char info[128 + 1];
	size_t n = 0;

	for (unsigned int i = 0; i < N_ELEMENTS(maildir_flag_map); i++) {
		if ((flags & maildir_flag_map[i].flag) != 0)
			set[(unsigned char)maildir_flag_map[i].c] = true;
	}
	for (const char *p = other_flags; p != NULL && *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;
		if (c > ' ' && c < 128 && c != '/')
			set[c] = true;
	}
	for (unsigned int c = 0; c < 128; c++) {
		if (set[c])
			info[n++] = (char)c;
	}
	info[n] = '\0';

	int ret = snprintf(buf, size, "%.*s" MAILDIR_INFO_PREFIX "%s",
			   (int)base_len, base, info);
	if (ret < 0 || (size_t)ret >= size || (size_t)ret > MAILDIR_FILENAME_MAX)
		return -1;
	return 0;
}

void maildir_hostname_sanitize(const char *host, char *buf, size_t size)
{
	size_t n = 0;

	i_assert(size > 0);
	for (size_t i = 0; host[i] != '\0' && i < MAILDIR_HOSTNAME_MAX; i++) {
		const char *esc = host[i] == '/' ? "\\057" :
			host[i] == ':' ? "\\072" : NULL;
		size_t add = esc != NULL ? 4 : 1;
		if (n + add >= size)
			break;
		if (esc != NULL)
			memcpy(buf + n, esc, 4);
		else
			buf[n] = host[i];
		n += add;
	}
	buf[n] = '\0';
}

void maildir_unique_init(struct maildir_unique *u)
{
	char host[MAILDIR_HOSTNAME_MAX + 1];

	memset(u, 0, sizeof(*u));
	u->pid = getpid();
	if (gethostname(host, sizeof(host)) < 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	maildir_hostname_sanitize(host, u->hostname, sizeof(u->hostname));
}

int maildir_unique_next(struct maildir_unique *u, char *buf, size_t size)
{
	struct timeval tv;

	if (gettimeofday(&tv, NULL) < 0)
		i_panic("gettimeofday() failed: %m");
	/* Q<counter> keeps names unique within one microsecond and pid. */
	int ret = snprintf(buf, size, "%lld.M%06ldP%ldQ%u.%s",
			   (long long)tv.tv_sec, (long)tv.tv_usec,
			   (long)u->pid, ++u->counter, u->hostname);
	return ret < 0 || (size_t)ret >= size ? -1 : 0;
}
