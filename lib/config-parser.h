#ifndef CONFIG_PARSER_H
#define CONFIG_PARSER_H
/* The generic moat.conf syntax, with no knowledge of setting names
   (moat-settings.c owns the schema). A file is turned into a stream of
   events, each with its FILE:LINE, handed to a callback in file order:

     key = value            KEY_VALUE (value bare and trimmed, "quoted"
                            with \" \\ \n \t \r escapes, or <PATH for the
                            contents of a file, one trailing newline cut)
     type [name] {          SECTION_BEGIN (sections nest)
     }                      SECTION_END
     !include PATH          the events of PATH (glob allowed; relative to
     !include_try PATH      the including file's directory; _try: a
                            missing file is not an error)
     # comment              anywhere outside quotes

   Each file must close the sections it opens. Errors come back as
   "FILE:LINE: message". The parser runs in master and in tools an admin
   or the MTA runs (moat-lda), on the admin's files; every line, file and
   nesting level is bounded. */

#include "mempool.h"
#include "buffer.h"

/* Longest line, and longest <file value: settings are short, and a bound
   keeps a wrong path (e.g. <file of a log) from eating memory. */
#define CONFIG_LINE_MAX (64 * 1024)
#define CONFIG_VALUE_FILE_MAX (64 * 1024)
/* !include nesting; also what stops an include loop. */
#define CONFIG_INCLUDE_DEPTH_MAX 10
/* Files opened in one parse (the main file counts), so a glob over a big
   directory cannot run away. */
#define CONFIG_INCLUDE_FILES_MAX 256
/* Open sections at once (moat itself uses two levels). */
#define CONFIG_SECTION_DEPTH_MAX 16

enum config_event_type {
	CONFIG_EVENT_KEY_VALUE,
	CONFIG_EVENT_SECTION_BEGIN,
	CONFIG_EVENT_SECTION_END,
};

struct config_event {
	enum config_event_type type;
	/* KEY_VALUE: the key; SECTION_BEGIN: the section type; else NULL */
	const char *key;
	/* KEY_VALUE: the value; SECTION_BEGIN: the name, NULL if none */
	const char *value;
	const char *file;
	unsigned int line;
};

/* Return 0 to go on, or -1 with *error_r set (a message without
   location; the parser adds "FILE:LINE: "). The event's strings are valid
   only during the call; *error_r must stay valid until the parse
   returns. */
typedef int config_callback_t(const struct config_event *event, void *context,
			      const char **error_r);

enum config_parse_flags {
	/* A <file value the process may not read (EACCES: the TLS key, for
	   a tool running as a mail user) is the empty string. */
	CONFIG_PARSE_FLAG_UNREADABLE_EMPTY = 0x01,
};

/* Parse path. Returns 0, or -1 with *error_r allocated from pool. */
int config_parse_file(const char *path, config_callback_t *callback,
		      void *context, pool_t pool, const char **error_r);
int config_parse_file_flags(const char *path, enum config_parse_flags flags,
			    config_callback_t *callback, void *context,
			    pool_t pool, const char **error_r);
/* The same from fd, read from offset 0 with pread (the fd's own offset is
   left alone, so a memfd can be read again). name is used in messages and
   its directory for relative !include paths. fd stays open. */
int config_parse_fd(int fd, const char *name, config_callback_t *callback,
		    void *context, pool_t pool, const char **error_r);

/* Value parsers for the typed settings; *error_r is a static string.
   size: a number with an optional B/k/M/G/T suffix (any case, powers of
   1024, a space allowed before it). time: a number with an optional unit
   s/sec/secs/m/min/mins/h/hour/hours/d/day/days (default seconds);
   time_msecs: the same in milliseconds, and ms/msec/msecs are units
   too. bool: exactly "yes" or "no". */
int config_parse_size(const char *str, uint64_t *size_r, const char **error_r);
int config_parse_time(const char *str, unsigned int *secs_r,
		      const char **error_r);
int config_parse_time_msecs(const char *str, unsigned int *msecs_r,
			    const char **error_r);
int config_parse_bool(const char *str, bool *value_r, const char **error_r);

/* The writing side: each appends text the parser reads back to the same
   value. Return -1 if out is full. */
bool config_value_needs_quotes(const char *value);
int config_append_value(buffer_t *out, const char *value) ATTR_WARN_UNUSED;
int config_append_size(buffer_t *out, uint64_t size) ATTR_WARN_UNUSED;
int config_append_time(buffer_t *out, unsigned int secs) ATTR_WARN_UNUSED;
/* Whole seconds as config_append_time() does, else "N ms". */
int config_append_time_msecs(buffer_t *out, unsigned int msecs) ATTR_WARN_UNUSED;

#endif
