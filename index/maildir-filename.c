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
	/* called for every letter of every name a scan reads */
	switch (c) {
	case 'D': return MAIL_DRAFT;
	case 'F': return MAIL_FLAGGED;
	case 'R': return MAIL_ANSWERED;
	case 'S': return MAIL_SEEN;
	case 'T': return MAIL_DELETED;
	default: return 0;
	}
}

/* The digits of a size field at p (up to end): the value, or
   MAILDIR_SIZE_UNKNOWN if there are none, they overflow or do not end at
   a ',' or the end of the base. */
static uint64_t maildir_parse_size(const char *p, const char *end)
{
	uint64_t num = 0;
	const char *start = p;

	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (num > (UINT64_MAX - 9) / 10)
			return MAILDIR_SIZE_UNKNOWN;
		num = num * 10 + (uint64_t)(*p - '0');
	}
	if (p == start || (p < end && *p != ','))
		return MAILDIR_SIZE_UNKNOWN;
	return num;
}

/* The first well-formed ",S=<digits>" and ",W=<digits>" of base. */
static void maildir_base_parse_sizes(const char *base, size_t base_len,
				     struct maildir_filename *fn)
{
	const char *p = base, *end = base + base_len;

	fn->size = fn->vsize = MAILDIR_SIZE_UNKNOWN;
	while ((p = memchr(p, ',', (size_t)(end - p))) != NULL) {
		p++;
		if (end - p < 3 || p[1] != '=')
			continue;
		uint64_t *field = p[0] == 'S' ? &fn->size :
			p[0] == 'W' ? &fn->vsize : NULL;
		if (field != NULL && *field == MAILDIR_SIZE_UNKNOWN)
			*field = maildir_parse_size(p + 2, end);
	}
}

static void maildir_parse_info(const char *info, struct maildir_filename *fn)
{
	/* the letters that are not flags, as a 128-bit set */
	uint64_t other[2] = { 0, 0 };
	size_t n = 0;

	for (; *info != '\0'; info++) {
		unsigned char c = (unsigned char)*info;
		if (c >= 128 || c <= ' ')
			continue;
		enum mail_flags flag = maildir_char_flag((char)c);
		if (flag != 0)
			fn->flags |= flag;
		else
			other[c / 64] |= 1ULL << (c % 64);
	}
	/* in ASCII order, deduplicated */
	for (unsigned int w = 0; w < N_ELEMENTS(other); w++) {
		for (uint64_t bits = other[w]; bits != 0; bits &= bits - 1) {
			if (n < MAILDIR_OTHER_FLAGS_MAX) {
				fn->other_flags[n++] =
					(char)(w * 64 + (unsigned int)__builtin_ctzll(bits));
			}
		}
	}
	fn->other_flags[n] = '\0';
}

bool maildir_filename_parse(const char *fname, struct maildir_filename *fn_r)
{
	size_t len = strlen(fname);

	/* (no memset: this runs for every file of every scan) */
	fn_r->len = len;
	fn_r->base_len = 0;
	fn_r->size = fn_r->vsize = MAILDIR_SIZE_UNKNOWN;
	fn_r->flags = 0;
	fn_r->have_info = false;
	fn_r->other_flags[0] = '\0';
	if (len == 0 || len > MAILDIR_FILENAME_MAX || fname[0] == '.' ||
	    memchr(fname, '/', len) != NULL)
		return false;

	const char *colon = memchr(fname, ':', len);
	fn_r->base_len = colon == NULL ? len : (size_t)(colon - fname);
	if (fn_r->base_len == 0)
		return false;
	maildir_base_parse_sizes(fname, fn_r->base_len, fn_r);
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

int maildir_unique_next_delivery(struct maildir_unique *u, const char *id,
				 char *buf, size_t size)
{
	struct timeval tv;

	i_assert(strlen(id) == MAILDIR_DELIVERY_ID_LEN &&
		 strspn(id, "0123456789abcdef") == MAILDIR_DELIVERY_ID_LEN);
	if (gettimeofday(&tv, NULL) < 0)
		i_panic("gettimeofday() failed: %m");
	int ret = snprintf(buf, size, "%lld.M%06ldP%ldQ%uD%s.%s",
			   (long long)tv.tv_sec, (long)tv.tv_usec,
			   (long)u->pid, ++u->counter, id, u->hostname);
	return ret < 0 || (size_t)ret >= size ? -1 : 0;
}

bool maildir_base_get_delivery(const char *base, char *id_r)
{
	/* at the end of the second field: "<sec>.M..Q<n>D<id>.<host>" */
	const char *dot = strchr(base, '.');
	if (dot == NULL)
		return false;
	const char *end = strchr(dot + 1, '.');
	size_t field = end == NULL ? strlen(dot + 1) : (size_t)(end - dot - 1);
	if (field < MAILDIR_DELIVERY_ID_LEN + 1)
		return false;
	const char *d = dot + 1 + field - MAILDIR_DELIVERY_ID_LEN - 1;
	if (d[0] != 'D' || strspn(d + 1, "0123456789abcdef") <
	    MAILDIR_DELIVERY_ID_LEN)
		return false;
	memcpy(id_r, d + 1, MAILDIR_DELIVERY_ID_LEN);
	id_r[MAILDIR_DELIVERY_ID_LEN] = '\0';
	return true;
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
