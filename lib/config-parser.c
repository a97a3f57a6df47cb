/* moat.conf tokenizer: lines -> key/value and section events with
   FILE:LINE, !include, <file. See config-parser.h for the syntax. */

#include "lib.h"
#include "config-parser.h"

#include <ctype.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>

/* Reads lines from an fd with pread into a fixed buffer: one line plus
   its newline must fit, so CONFIG_LINE_MAX bounds memory per file. */
struct config_reader {
	int fd;
	off_t offset;
	bool use_read;          /* pread not possible (pipe) */
	bool eof;
	char *buf;              /* CONFIG_LINE_MAX + 2 bytes */
	size_t start, end;
};

struct config_parser {
	config_callback_t *callback;
	void *context;
	pool_t pool;            /* scratch: paths, the error */
	unsigned int files_opened;
	unsigned int section_depth;
	const char *error;      /* set once, on the first failure */
	enum config_parse_flags flags;
};

struct config_file {
	struct config_parser *parser;
	const char *path;
	const char *dir;        /* base of relative !include and <file */
	unsigned int include_depth;
	unsigned int line;
	unsigned int open_sections;
	unsigned int first_open_line; /* of the outermost open section */
	struct config_reader reader;
	char *tokens;           /* unescaped words of the current line */
};

static int parse_path(struct config_parser *parser, struct config_file *from,
		      const char *path, bool missing_ok);

static int ATTR_FORMAT(2, 3)
file_error(struct config_file *file, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	char *msg = i_strdup_vprintf(fmt, args);
	va_end(args);
	if (file->parser->error == NULL) {
		file->parser->error = p_strdup_printf(file->parser->pool,
			"%s:%u: %s", file->path, file->line, msg);
	}
	free(msg);
	return -1;
}

/* 1 = *line_r set (NUL-terminated, newline removed), 0 = EOF,
   -1 = error in *error_r (NULL: read failed, see errno). */
static int reader_next_line(struct config_reader *r, char **line_r,
			    const char **error_r)
{
	for (;;) {
		char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
		if (nl != NULL || (r->eof && r->start < r->end)) {
			char *line = r->buf + r->start;
			char *end = nl != NULL ? nl : r->buf + r->end;
			*end = '\0';
			r->start = (size_t)(end - r->buf) + (nl != NULL ? 1 : 0);
			if (memchr(line, '\0', (size_t)(end - line)) != NULL) {
				*error_r = "NUL byte in line";
				return -1;
			}
			*line_r = line;
			return 1;
		}
		if (r->eof)
			return 0;
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
		if (r->end > CONFIG_LINE_MAX) {
			*error_r = "line too long (max 64 KiB)";
			return -1;
		}
		size_t room = CONFIG_LINE_MAX + 1 - r->end;
		ssize_t ret = r->use_read ?
			read(r->fd, r->buf + r->end, room) :
			pread(r->fd, r->buf + r->end, room, r->offset);
		if (ret < 0 && errno == ESPIPE && !r->use_read) {
			r->use_read = true;
			continue;
		}
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			*error_r = NULL;  /* errno tells */
			return -1;
		}
		if (ret == 0)
			r->eof = true;
		r->end += (size_t)ret;
		r->offset += ret;
	}
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static bool at_line_end(const char *p)
{
	p = skip_ws(p);
	return *p == '\0' || *p == '#';
}

static bool is_key_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

/* Copy the "quoted" string at *p (pointing at the quote) to *out,
   unescaping; advance both past it. */
static int read_quoted(struct config_file *file, const char **p, char **out)
{
	const char *s = *p + 1;
	char *o = *out;

	for (; *s != '"'; s++) {
		if (*s == '\0')
			return file_error(file, "missing closing '\"'");
		if (*s != '\\') {
			*o++ = *s;
			continue;
		}
		switch (*++s) {
		case '"': case '\\': *o++ = *s; break;
		case 'n': *o++ = '\n'; break;
		case 't': *o++ = '\t'; break;
		case 'r': *o++ = '\r'; break;
		case '\0': return file_error(file, "missing closing '\"'");
		default:
			return file_error(file, "invalid escape '\\%c' in quoted "
					  "value", *s);
		}
	}
	*o++ = '\0';
	*p = s + 1;
	*out = o;
	return 0;
}

/* A value or path: quoted, or bare up to '#' or the end, trimmed. Must be
   the last thing on the line. */
static int read_value(struct config_file *file, const char **p, char **out,
		      const char **value_r)
{
	*value_r = *out;
	if (**p == '"') {
		if (read_quoted(file, p, out) < 0)
			return -1;
		if (!at_line_end(*p))
			return file_error(file, "unexpected text after the "
					  "closing '\"'");
		return 0;
	}
	const char *end = *p + strcspn(*p, "#");
	while (end > *p && (end[-1] == ' ' || end[-1] == '\t' ||
			    end[-1] == '\r'))
		end--;
	size_t len = (size_t)(end - *p);
	memcpy(*out, *p, len);
	(*out)[len] = '\0';
	*out += len + 1;
	*p = end;
	return 0;
}

static const char *resolve_path(struct config_file *file, const char *path)
{
	if (path[0] == '/')
		return path;
	return p_strdup_printf(file->parser->pool, "%s/%s", file->dir, path);
}

static int emit(struct config_file *file, enum config_event_type type,
		    const char *key, const char *value)
{
	struct config_event event = {
		.type = type, .key = key, .value = value,
		.file = file->path, .line = file->line,
	};
	const char *error = NULL;

	if (file->parser->callback(&event, file->parser->context, &error) < 0)
		return file_error(file, "%s", error != NULL ? error : "error");
	return 0;
}

/* Read up to CONFIG_VALUE_FILE_MAX + 1 bytes of fd into buf. */
static ssize_t read_all(int fd, char *buf)
{
	size_t used = 0;
	ssize_t ret;

	while (used <= CONFIG_VALUE_FILE_MAX) {
		ret = read(fd, buf + used, CONFIG_VALUE_FILE_MAX + 1 - used);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -1;
		if (ret == 0)
			break;
		used += (size_t)ret;
	}
	return (ssize_t)used;
}

/* Open a config file or <file value: regular files only. O_NONBLOCK so
   that a FIFO (or a terminal, /dev/stdin) named by mistake is refused at
   once instead of hanging master's start; a device such as /dev/zero
   would be read to the line limit for nothing. Returns the fd, or -1
   with errno set (EINVAL: not a regular file). */
static int open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -1;
	int err = 0;
	if (fstat(fd, &st) < 0)
		err = errno;
	else if (!S_ISREG(st.st_mode))
		err = EINVAL;
	/* reads of a regular file never block: back to plain reads */
	else if (fcntl(fd, F_SETFL, 0) < 0)
		err = errno;
	if (err != 0) {
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

static const char *open_error(int err)
{
	return err == EINVAL ? "not a regular file" : strerror(err);
}

/* Read a <file value into a malloc()ed string. */
static int read_value_file(struct config_file *file, const char *path,
			   char **value_r)
{
	const char *full = resolve_path(file, path);
	int fd = open_regular(full);
	if (fd < 0 && errno == EACCES &&
	    (file->parser->flags & CONFIG_PARSE_FLAG_UNREADABLE_EMPTY) != 0) {
		*value_r = i_strdup("");
		return 0;
	}
	if (fd < 0) {
		return file_error(file, "open(%s) failed: %s", full,
				  open_error(errno));
	}
	char *buf = i_malloc(CONFIG_VALUE_FILE_MAX + 2);
	ssize_t ret = read_all(fd, buf);
	int saved_errno = errno;
	close(fd);

	const char *error = NULL;
	if (ret < 0)
		error = strerror(saved_errno);
	else if (ret > CONFIG_VALUE_FILE_MAX)
		error = "file too large (max 64 KiB)";
	else if (memchr(buf, '\0', (size_t)ret) != NULL)
		error = "NUL byte in file";
	if (error != NULL) {
		free(buf);
		return file_error(file, "<%s: %s", full, error);
	}
	size_t used = (size_t)ret;
	if (used > 0 && buf[used - 1] == '\n')
		used--;
	if (used > 0 && buf[used - 1] == '\r')
		used--;
	buf[used] = '\0';
	*value_r = buf;
	return 0;
}

static int parse_key_value(struct config_file *file, const char *key,
			   const char *p, char *out)
{
	const char *value;

	p = skip_ws(p);
	if (*p != '<') {
		if (read_value(file, &p, &out, &value) < 0)
			return -1;
		return emit(file, CONFIG_EVENT_KEY_VALUE, key, value);
	}
	p = skip_ws(p + 1);
	if (read_value(file, &p, &out, &value) < 0)
		return -1;
	if (value[0] == '\0')
		return file_error(file, "%s: missing file name after '<'", key);

	char *contents = NULL;
	if (read_value_file(file, value, &contents) < 0)
		return -1;
	int ret = emit(file, CONFIG_EVENT_KEY_VALUE, key, contents);
	free(contents);
	return ret;
}

static int section_begin(struct config_file *file, const char *type,
			 const char *p, char *out)
{
	const char *name = NULL;

	if (*p == '"') {
		name = out;
		if (read_quoted(file, &p, &out) < 0)
			return -1;
		p = skip_ws(p);
	} else if (*p != '{') {
		const char *start = p;
		while (*p != '\0' && strchr(" \t\r{}#\"=", *p) == NULL)
			p++;
		if (p == start)
			return file_error(file, "expected '=' or '{' after '%s'",
					  type);
		name = out;
		memcpy(out, start, (size_t)(p - start));
		out[p - start] = '\0';
		p = skip_ws(p);
	}
	if (*p != '{')
		return file_error(file, "expected '{' after '%s %s'", type,
				  name != NULL ? name : "");
	if (!at_line_end(p + 1))
		return file_error(file, "unexpected text after '{'");
	if (file->parser->section_depth >= CONFIG_SECTION_DEPTH_MAX)
		return file_error(file, "sections nested too deeply (max %u)",
				  CONFIG_SECTION_DEPTH_MAX);
	if (file->open_sections++ == 0)
		file->first_open_line = file->line;
	file->parser->section_depth++;
	return emit(file, CONFIG_EVENT_SECTION_BEGIN, type, name);
}

static int section_end(struct config_file *file, const char *p)
{
	if (!at_line_end(p))
		return file_error(file, "unexpected text after '}'");
	if (file->open_sections == 0)
		return file_error(file, "'}' without an open section");
	file->open_sections--;
	file->parser->section_depth--;
	return emit(file, CONFIG_EVENT_SECTION_END, NULL, NULL);
}

static int include_glob(struct config_file *file, const char *pattern)
{
	glob_t globbuf;

	int ret = glob(pattern, 0, NULL, &globbuf);
	if (ret == GLOB_NOMATCH)
		return 0;
	if (ret != 0)
		return file_error(file, "!include %s: glob() failed", pattern);
	ret = 0;
	for (size_t i = 0; i < globbuf.gl_pathc && ret == 0; i++)
		ret = parse_path(file->parser, file, globbuf.gl_pathv[i], false);
	globfree(&globbuf);
	return ret;
}

static int parse_include(struct config_file *file, const char *p, char *out)
{
	bool missing_ok;
	const char *path;

	if (strncmp(p, "include_try", 11) == 0) {
		missing_ok = true;
		p += 11;
	} else if (strncmp(p, "include", 7) == 0) {
		missing_ok = false;
		p += 7;
	} else {
		return file_error(file, "unknown directive (only !include and "
				  "!include_try exist)");
	}
	if (*p != ' ' && *p != '\t' && *p != '\0')
		return file_error(file, "unknown directive (only !include and "
				  "!include_try exist)");
	p = skip_ws(p);
	if (read_value(file, &p, &out, &path) < 0)
		return -1;
	if (path[0] == '\0')
		return file_error(file, "!include needs a path");
	if (file->include_depth >= CONFIG_INCLUDE_DEPTH_MAX)
		return file_error(file, "!include nested too deeply (max %u)",
				  CONFIG_INCLUDE_DEPTH_MAX);
	path = resolve_path(file, path);
	if (strpbrk(path, "*?[") != NULL)
		return include_glob(file, path);
	return parse_path(file->parser, file, path, missing_ok);
}

static int parse_line(struct config_file *file, const char *line)
{
	const char *p = skip_ws(line);
	char *out = file->tokens;

	if (*p == '\0' || *p == '#')
		return 0;
	if (*p == '!')
		return parse_include(file, p + 1, out);
	if (*p == '}')
		return section_end(file, p + 1);

	const char *key = p;
	while (is_key_char(*p))
		p++;
	if (p == key)
		return file_error(file, "expected a setting name or a section");
	memcpy(out, key, (size_t)(p - key));
	out[p - key] = '\0';
	key = out;
	out += strlen(key) + 1;

	p = skip_ws(p);
	if (*p == '=')
		return parse_key_value(file, key, p + 1, out);
	return section_begin(file, key, p, out);
}

static const char *path_dir(pool_t pool, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		return ".";
	if (slash == path)
		return "/";
	return p_strndup(pool, path, (size_t)(slash - path));
}

static int parse_fd(struct config_parser *parser, struct config_file *from,
		    int fd, const char *path)
{
	struct config_file file = {
		.parser = parser, .path = p_strdup(parser->pool, path),
		.dir = path_dir(parser->pool, path),
		.include_depth = from == NULL ? 0 : from->include_depth + 1,
		.reader = { .fd = fd },
	};
	const char *error = "parse failed";
	char *line;
	int ret;

	if (++parser->files_opened > CONFIG_INCLUDE_FILES_MAX) {
		return from == NULL ? -1 : file_error(from, "too many included "
			"files (max %u)", CONFIG_INCLUDE_FILES_MAX);
	}
	file.reader.buf = i_malloc(CONFIG_LINE_MAX + 2);
	file.tokens = i_malloc(CONFIG_LINE_MAX + 16);
	while ((ret = reader_next_line(&file.reader, &line, &error)) > 0) {
		file.line++;
		if ((ret = parse_line(&file, line)) < 0)
			break;
	}
	if (ret < 0 && parser->error == NULL) {
		file.line++;
		if (error == NULL)
			(void)file_error(&file, "read() failed: %s",
					 strerror(errno));
		else
			(void)file_error(&file, "%s", error);
	} else if (ret == 0 && file.open_sections > 0) {
		ret = file_error(&file, "missing '}' (section opened at "
				 "line %u)", file.first_open_line);
	}
	free(file.reader.buf);
	free(file.tokens);
	return ret < 0 ? -1 : 0;
}

static int parse_path(struct config_parser *parser, struct config_file *from,
		      const char *path, bool missing_ok)
{
	int fd = open_regular(path);
	if (fd < 0) {
		if (errno == ENOENT && missing_ok)
			return 0;
		if (from != NULL)
			return file_error(from, "open(%s) failed: %s", path,
					  open_error(errno));
		parser->error = p_strdup_printf(parser->pool,
			"open(%s) failed: %s", path, open_error(errno));
		return -1;
	}
	int ret = parse_fd(parser, from, fd, path);
	close(fd);
	return ret;
}

static int parse_finish(struct config_parser *parser, int ret, pool_t pool,
			const char **error_r)
{
	if (ret < 0) {
		*error_r = p_strdup(pool, parser->error != NULL ?
				    parser->error : "config parse failed");
	}
	pool_unref(&parser->pool);
	return ret;
}

int config_parse_file(const char *path, config_callback_t *callback,
		      void *context, pool_t pool, const char **error_r)
{
	return config_parse_file_flags(path, 0, callback, context, pool,
				       error_r);
}

int config_parse_file_flags(const char *path, enum config_parse_flags flags,
			    config_callback_t *callback, void *context,
			    pool_t pool, const char **error_r)
{
	struct config_parser parser = {
		.callback = callback, .context = context,
		.pool = pool_create("config parser", 4096), .flags = flags,
	};

	int ret = parse_path(&parser, NULL, path, false);
	return parse_finish(&parser, ret, pool, error_r);
}

int config_parse_fd(int fd, const char *name, config_callback_t *callback,
		    void *context, pool_t pool, const char **error_r)
{
	struct config_parser parser = {
		.callback = callback, .context = context,
		.pool = pool_create("config parser", 4096),
	};

	int ret = parse_fd(&parser, NULL, fd, name);
	return parse_finish(&parser, ret, pool, error_r);
}

/* Leading decimal digits of str; -1 if none or on overflow. */
static int parse_number(const char **str, uint64_t *num_r)
{
	const char *p = *str;
	uint64_t num = 0;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned int digit = (unsigned int)(*p - '0');
		if (num > (UINT64_MAX - digit) / 10)
			return -1;
		num = num * 10 + digit;
	}
	*str = p;
	*num_r = num;
	return 0;
}

int config_parse_size(const char *str, uint64_t *size_r, const char **error_r)
{
	static const char units[] = "bkmgt";
	const char *p = str, *unit = NULL;
	uint64_t num;

	if (parse_number(&p, &num) == 0) {
		p = skip_ws(p);
		unit = *p == '\0' ? units :
			strchr(units, tolower((unsigned char)*p));
	}
	if (unit == NULL || (*p != '\0' && p[1] != '\0')) {
		*error_r = "invalid size (use a number with an optional B, k, "
			"M, G or T suffix)";
		return -1;
	}
	unsigned int shift = 10 * (unsigned int)(unit - units);
	if (shift > 0 && num > (UINT64_MAX >> shift)) {
		*error_r = "size too large";
		return -1;
	}
	*size_r = num << shift;
	return 0;
}

struct time_unit {
	const char *name;
	unsigned int msecs;
};

/* The first entry is what a bare number means. */
static const struct time_unit time_units[] = {
	{ "", 1000 }, { "s", 1000 }, { "sec", 1000 }, { "secs", 1000 },
	{ "m", 60000 }, { "min", 60000 }, { "mins", 60000 },
	{ "h", 3600000 }, { "hour", 3600000 }, { "hours", 3600000 },
	{ "d", 86400000 }, { "day", 86400000 }, { "days", 86400000 },
};
/* Only for settings kept in milliseconds. */
static const struct time_unit msec_units[] = {
	{ "ms", 1 }, { "msec", 1 }, { "msecs", 1 },
};

static int time_find_unit(const char *p, bool msecs, unsigned int *unit_r)
{
	for (size_t i = 0; i < N_ELEMENTS(time_units); i++) {
		if (strcmp(p, time_units[i].name) == 0) {
			*unit_r = time_units[i].msecs;
			return 0;
		}
	}
	for (size_t i = 0; msecs && i < N_ELEMENTS(msec_units); i++) {
		if (strcmp(p, msec_units[i].name) == 0) {
			*unit_r = msec_units[i].msecs;
			return 0;
		}
	}
	return -1;
}

/* result_unit: 1000 to get seconds, 1 to get milliseconds. */
static int parse_time_in(const char *str, unsigned int result_unit,
			 unsigned int *value_r, const char **error_r)
{
	const char *p = str;
	unsigned int unit;
	uint64_t num;

	if (parse_number(&p, &num) == 0 &&
	    time_find_unit(skip_ws(p), result_unit == 1, &unit) == 0) {
		unit /= result_unit;
		if (num > UINT_MAX / unit) {
			*error_r = "time too large";
			return -1;
		}
		*value_r = (unsigned int)num * unit;
		return 0;
	}
	*error_r = result_unit == 1 ?
		"invalid time (use a number with an optional unit: ms, secs, "
		"mins, hours or days)" :
		"invalid time (use a number with an optional unit: secs, "
		"mins, hours or days)";
	return -1;
}

int config_parse_time(const char *str, unsigned int *secs_r,
		      const char **error_r)
{
	return parse_time_in(str, 1000, secs_r, error_r);
}

int config_parse_time_msecs(const char *str, unsigned int *msecs_r,
			    const char **error_r)
{
	return parse_time_in(str, 1, msecs_r, error_r);
}

int config_parse_bool(const char *str, bool *value_r, const char **error_r)
{
	if (strcmp(str, "yes") == 0)
		*value_r = true;
	else if (strcmp(str, "no") == 0)
		*value_r = false;
	else {
		*error_r = "invalid boolean (use yes or no)";
		return -1;
	}
	return 0;
}

bool config_value_needs_quotes(const char *value)
{
	size_t len = strlen(value);

	if (len == 0 || value[0] == '<' || isspace((unsigned char)value[0]) ||
	    isspace((unsigned char)value[len - 1]))
		return true;
	for (const char *p = value; *p != '\0'; p++) {
		if (strchr("#\"\\{}", *p) != NULL ||
		    (unsigned char)*p < 0x20 || *p == 0x7f)
			return true;
	}
	return false;
}

int config_append_value(buffer_t *out, const char *value)
{
	if (!config_value_needs_quotes(value))
		return buffer_append_str(out, value);
	if (buffer_append_c(out, '"') < 0)
		return -1;
	for (const char *p = value; *p != '\0'; p++) {
		const char *esc = NULL;
		switch (*p) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\t': esc = "\\t"; break;
		case '\r': esc = "\\r"; break;
		}
		if ((esc != NULL ? buffer_append_str(out, esc) :
		     buffer_append_c(out, *p)) < 0)
			return -1;
	}
	return buffer_append_c(out, '"');
}

int config_append_size(buffer_t *out, uint64_t size)
{
	static const char units[] = "kMGT";
	unsigned int i = 0;

	/* the largest unit that keeps the value exact */
	while (size != 0 && (size & 1023) == 0 && i < sizeof(units) - 1) {
		size >>= 10;
		i++;
	}
	if (i == 0)
		return buffer_printf(out, "%llu", (unsigned long long)size);
	return buffer_printf(out, "%llu%c", (unsigned long long)size,
			     units[i - 1]);
}

int config_append_time_msecs(buffer_t *out, unsigned int msecs)
{
	if (msecs % 1000 == 0)
		return config_append_time(out, msecs / 1000);
	return buffer_printf(out, "%u ms", msecs);
}

int config_append_time(buffer_t *out, unsigned int secs)
{
	static const struct {
		const char *one, *many;
		unsigned int secs;
	} units[] = {
		{ "day", "days", 86400 }, { "hour", "hours", 3600 },
		{ "min", "mins", 60 }, { "sec", "secs", 1 },
	};

	if (secs == 0)
		return buffer_append_c(out, '0');
	/* the largest unit that keeps the value exact */
	for (size_t i = 0;; i++) {
		if (secs % units[i].secs != 0)
			continue;
		unsigned int n = secs / units[i].secs;
		return buffer_printf(out, "%u %s", n,
				     n == 1 ? units[i].one : units[i].many);
	}
}
