#ifndef BUFFER_H
#define BUFFER_H
/* buffer_t: a growable byte string with a hard maximum size.
   Invariants: data is always NUL-terminated at data[used] (so it can be
   used as a C string when it holds text); used <= max_size. Appends that
   would exceed max_size fail with -1 and leave the buffer unchanged, so a
   peer can never make us grow without bound. The buffer owns data; free it
   with buffer_free(). */

#include <stddef.h>
#include <stdint.h>

typedef struct buffer {
	char *data;
	size_t used;
	size_t alloc;      /* bytes allocated for data, including the NUL */
	size_t max_size;   /* hard cap for used */
} buffer_t;

void buffer_init(buffer_t *buf, size_t max_size);
void buffer_free(buffer_t *buf);
void buffer_reset(buffer_t *buf);                /* used = 0 */
/* Returns 0, or -1 if the result would exceed max_size. */
int buffer_append(buffer_t *buf, const void *data, size_t size) ATTR_WARN_UNUSED;
int buffer_append_str(buffer_t *buf, const char *str) ATTR_WARN_UNUSED;
int buffer_append_c(buffer_t *buf, char c) ATTR_WARN_UNUSED;
/* The decimal digits of n (what printf's "%u" writes, without its cost:
   SORT and THREAD answers are lists of thousands of numbers). */
int buffer_append_u32(buffer_t *buf, uint32_t n) ATTR_WARN_UNUSED;
int buffer_printf(buffer_t *buf, const char *fmt, ...) ATTR_FORMAT(2, 3) ATTR_WARN_UNUSED;
int buffer_vprintf(buffer_t *buf, const char *fmt, va_list args) ATTR_FORMAT(2, 0) ATTR_WARN_UNUSED;
/* Removes the first size bytes. */
void buffer_delete_head(buffer_t *buf, size_t size);
void buffer_truncate(buffer_t *buf, size_t size);
/* Make room for at least size more bytes and return a pointer to them;
   NULL if that would pass max_size. Follow with buffer_commit(). */
char *buffer_reserve(buffer_t *buf, size_t size);
void buffer_commit(buffer_t *buf, size_t size);
/* Detach data (caller frees with free()); the buffer is reset. */
char *buffer_detach(buffer_t *buf);

#endif
