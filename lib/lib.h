#ifndef LIB_H
#define LIB_H
/* Common base for every moat file: standard headers, assertions, checked
   allocation and small helpers. Allocation failure aborts: a mail server that
   cannot allocate a few bytes cannot serve its client safely anyway. */

#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define N_ELEMENTS(arr) (sizeof(arr) / sizeof((arr)[0]))
#ifndef MIN
#  define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#  define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

#define ATTR_FORMAT(f, a) __attribute__((format(printf, f, a)))
#define ATTR_NORETURN __attribute__((noreturn))
#define ATTR_NULL_TERMINATED __attribute__((sentinel))
#define ATTR_UNUSED __attribute__((unused))
#define ATTR_WARN_UNUSED __attribute__((warn_unused_result))

/* A bug: logs and aborts (core dump for the developer). */
void i_panic(const char *fmt, ...) ATTR_FORMAT(1, 2) ATTR_NORETURN;

#define i_assert(expr) \
	do { if (__builtin_expect(!(expr), 0)) \
		i_panic("assertion failed: %s (%s:%d %s)", #expr, \
			__FILE__, __LINE__, __func__); } while (0)
#define i_unreached() \
	i_panic("unreachable code reached (%s:%d %s)", __FILE__, __LINE__, __func__)

void *i_malloc(size_t size);            /* zero-filled */
void *i_realloc(void *mem, size_t size);
char *i_strdup(const char *str);        /* NULL -> NULL */
char *i_strndup(const void *str, size_t max_len);
char *i_strdup_printf(const char *fmt, ...) ATTR_FORMAT(1, 2);
char *i_strdup_vprintf(const char *fmt, va_list args) ATTR_FORMAT(1, 0);
/* Frees *mem and sets it to NULL. */
#define i_free(mem) do { free(mem); (mem) = NULL; } while (0)

/* n * size, aborting on overflow. */
size_t i_mul_size(size_t n, size_t size);
size_t i_add_size(size_t a, size_t b);

/* Close *fd if it is >= 0, log failures, set it to -1. */
void i_close_fd(int *fd);
int fd_set_nonblock(int fd, bool nonblock);
int fd_set_cloexec(int fd, bool cloexec);
/* pwrite() all of data at offset, retrying short writes and EINTR.
   Returns 0, or -1 with errno (ENOSPC if the kernel wrote nothing). */
int fd_pwrite_full(int fd, const void *data, size_t size, off_t offset);
/* TCP_NODELAY on a client socket: IMAP replies are small and a reply
   split over two writes must not wait for the peer's delayed ACK (Nagle).
   Not a TCP socket (a socketpair from the TLS proxy): silently nothing. */
void fd_set_tcp_nodelay(int fd);

/* Overwrite a secret so the compiler cannot elide it. */
void safe_memset(void *data, int c, size_t size);
/* Constant-time comparison of two equally long secrets. */
bool mem_equals_timing_safe(const void *a, const void *b, size_t size);
/* Fill with random bytes from the kernel; aborts if it cannot. */
void random_fill(void *buf, size_t size);

/* Monotonic time in milliseconds. */
uint64_t time_monotonic_ms(void);

#endif
