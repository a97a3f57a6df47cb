/* Line-oriented logging to one fd (stderr by default). Each line is
   written with a single write(2) so lines of concurrent processes sharing
   a pipe do not interleave. When the fd is systemd's journal stream
   ($JOURNAL_STREAM names its device and inode), each line starts with
   "<N>", its syslog priority (sd-daemon(3)), and carries no timestamp:
   the journal keeps its own. */
#include "lib.h"
#include "log.h"

#include <sys/stat.h>
#include <time.h>

/* A log line longer than this is cut: keeps one write atomic on a pipe
   (PIPE_BUF is 4096) and bounds what a client string can add. */
#define LOG_LINE_MAX 4000

static const char *log_prefix = "";
static char *log_context;
static bool log_timestamps, log_debug_enabled;
static int log_fd = STDERR_FILENO;
static log_hook_t *log_hook;
static void *log_hook_context;
static bool log_journal;

static const char *const level_names[] = {
	"debug", "info", "warning", "error", "fatal"
};
/* syslog(3) priorities of enum log_level: LOG_DEBUG 7, LOG_INFO 6,
   LOG_WARNING 4, LOG_ERR 3, LOG_CRIT 2 (syslog.h's names clash with ours). */
static const char level_priorities[] = { '7', '6', '4', '3', '2' };
/* A child's line without a known level (a library or a sanitizer writing
   to stderr) is unexpected: LOG_NOTICE, above info. */
#define LOG_PRIORITY_UNKNOWN '5'

void log_init(const char *prefix, bool timestamps)
{
	log_prefix = prefix;
	log_timestamps = timestamps;
	log_journal = log_fd_is_journal(log_fd, getenv("JOURNAL_STREAM"));
}

bool log_fd_is_journal(int fd, const char *journal_stream)
{
	unsigned long long dev, ino;
	struct stat st;
	int end = 0;

	if (journal_stream == NULL ||
	    sscanf(journal_stream, "%llu:%llu%n", &dev, &ino, &end) != 2 ||
	    journal_stream[end] != '\0' || fstat(fd, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev &&
		(unsigned long long)st.st_ino == ino;
}

void log_set_fd(int fd)
{
	log_fd = fd;
	log_journal = log_fd_is_journal(fd, getenv("JOURNAL_STREAM"));
}

void log_set_hook(log_hook_t *hook, void *context)
{
	log_hook = hook;
	log_hook_context = context;
}

void log_set_debug(bool enabled)
{
	log_debug_enabled = enabled;
}

void log_set_context(const char *context)
{
	i_free(log_context);
	log_context = i_strdup(context);
}

static size_t log_timestamp(char *line, size_t size)
{
	struct timespec ts;
	struct tm tm;
	size_t pos;

	if (!log_timestamps || log_journal)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	pos = strftime(line, size, "%Y-%m-%dT%H:%M:%S", &tm);
	int ret = snprintf(line + pos, size - pos, ".%03ld ", ts.tv_nsec / 1000000);
	return pos + (ret > 0 ? (size_t)ret : 0);
}

/* Writes "<priority>" at line when logging to the journal; its length. */
static size_t log_priority(char *line, char priority)
{
	if (!log_journal)
		return 0;
	line[0] = '<';
	line[1] = priority;
	line[2] = '>';
	return 3;
}

static char log_text_priority(const char *text, size_t len)
{
	for (size_t i = 0; i < N_ELEMENTS(level_names); i++) {
		size_t n = strlen(level_names[i]);
		if (len > n && memcmp(text, level_names[i], n) == 0 && text[n] == ':')
			return level_priorities[i];
	}
	return LOG_PRIORITY_UNKNOWN;
}

void log_write_line(const char *prefix, const char *text, size_t len)
{
	char line[LOG_LINE_MAX + 2];
	size_t pos = log_priority(line, log_text_priority(text, len));
	pos += log_timestamp(line + pos, sizeof(line) - pos);
	int ret = snprintf(line + pos, LOG_LINE_MAX - pos, "%s", prefix);
	if (ret > 0)
		pos = MIN(pos + (size_t)ret, (size_t)LOG_LINE_MAX - 1);
	size_t text_start = pos;
	for (size_t i = 0; i < len && pos < LOG_LINE_MAX; i++) {
		unsigned char c = (unsigned char)text[i];
		/* Children's lines may echo client bytes: no control chars. */
		line[pos++] = (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c;
	}
	line[pos++] = '\n';
	(void)!write(log_fd, line, pos);
	if (log_hook != NULL)
		log_hook(log_hook_context, prefix, line + text_start,
			 pos - 1 - text_start);
}

void log_vwrite(enum log_level level, const char *fmt, va_list args)
{
	char line[LOG_LINE_MAX + 2];
	size_t pos = 0;
	int ret;

	if (level == LOG_DEBUG && !log_debug_enabled)
		return;
	pos = log_priority(line, level_priorities[level]);
	pos += log_timestamp(line + pos, sizeof(line) - pos);
	size_t text_start = pos + strlen(log_prefix);
	ret = snprintf(line + pos, LOG_LINE_MAX - pos, "%s%s: %s%s",
		       log_prefix, level_names[level],
		       log_context != NULL ? log_context : "",
		       log_context != NULL ? ": " : "");
	if (ret > 0)
		pos = MIN(pos + (size_t)ret, (size_t)LOG_LINE_MAX - 1);
	ret = vsnprintf(line + pos, LOG_LINE_MAX - pos, fmt, args);
	if (ret > 0)
		pos = MIN(pos + (size_t)ret, (size_t)LOG_LINE_MAX - 1);
	/* Embedded newlines would let text forge log lines. */
	for (size_t i = 0; i < pos; i++) {
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	}
	line[pos++] = '\n';
	(void)!write(log_fd, line, pos);
	if (log_hook != NULL)
		log_hook(log_hook_context, log_prefix,
			 line + MIN(text_start, pos - 1),
			 pos - 1 - MIN(text_start, pos - 1));
}

#define LOG_FUNC(name, level) \
	void name(const char *fmt, ...) \
	{ \
		va_list args; \
		int saved_errno = errno; \
		va_start(args, fmt); \
		log_vwrite(level, fmt, args); \
		va_end(args); \
		errno = saved_errno; \
	}
LOG_FUNC(i_debug, LOG_DEBUG)
LOG_FUNC(i_info, LOG_INFO)
LOG_FUNC(i_warning, LOG_WARNING)
LOG_FUNC(i_error, LOG_ERROR)

void i_fatal(const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	log_vwrite(LOG_FATAL, fmt, args);
	va_end(args);
	exit(FATAL_EXIT_CODE);
}

void i_panic(const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	log_vwrite(LOG_FATAL, fmt, args);
	va_end(args);
	abort();
}
