#ifndef LOG_H
#define LOG_H
/* Logging. Children write "level: message" lines to stderr, which is a pipe
   to master; master prefixes each line with "service(user)[pid]: " and
   writes it to the log. Master itself writes with its own prefix.
   Never log credentials; pass client strings through str_sanitize(). */

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR, LOG_FATAL };

/* prefix is prepended to every line (may be ""), e.g. "master: ". The
   default writes to stderr. If timestamps is true, each line starts with
   an ISO-8601 time (master uses this; children leave it to master). */
void log_init(const char *prefix, bool timestamps);
/* Where lines go; default 2. If fd is systemd's journal stream (see
   log_fd_is_journal), lines carry "<N>" syslog priorities instead of a
   timestamp. Call again after dup2()ing a new file over fd. */
void log_set_fd(int fd);
/* Whether fd is the stream named by journal_stream, $JOURNAL_STREAM's
   "DEVICE:INODE" (systemd.exec(5)); false for NULL or a malformed value. */
bool log_fd_is_journal(int fd, const char *journal_stream);
void log_set_debug(bool enabled);
/* Context for every following line, e.g. "user=demo session=abc"; NULL
   clears it. Appended as " (context)" is not done: it is prepended after
   the prefix, so grep works on user names. */
void log_set_context(const char *context);

/* Called after each line went out (debug lines only when enabled): master
   keeps its recent warnings and errors for moatadm. prefix is the line's
   ("master: ", a child's "imap(user)[pid]: "); text the rest without the
   LF, starting with "level: " (a child's line as the child wrote it,
   control bytes replaced). Must not log. NULL removes it. */
typedef void log_hook_t(void *context, const char *prefix, const char *text,
			size_t len);
void log_set_hook(log_hook_t *hook, void *context);

void i_debug(const char *fmt, ...) ATTR_FORMAT(1, 2);
void i_info(const char *fmt, ...) ATTR_FORMAT(1, 2);
void i_warning(const char *fmt, ...) ATTR_FORMAT(1, 2);
void i_error(const char *fmt, ...) ATTR_FORMAT(1, 2);
/* Cannot continue (config, environment): logs and exit(FATAL_EXIT_CODE). */
void i_fatal(const char *fmt, ...) ATTR_FORMAT(1, 2) ATTR_NORETURN;
/* Write a line that already carries its level (a child's stderr line),
   after the timestamp (if enabled) and the given prefix. */
void log_write_line(const char *prefix, const char *line, size_t len);
void log_vwrite(enum log_level level, const char *fmt, va_list args) ATTR_FORMAT(2, 0);

/* Exit codes children use so master can tell why they died. */
#define FATAL_EXIT_CODE 89
#define FATAL_CONFIG_EXIT_CODE 90

#endif
