/* Base helpers: checked allocation, fds, secrets, time. */
#include "lib.h"
#include "log.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static void ATTR_NORETURN out_of_memory(size_t size)
{
	/* No allocation here: report with a fixed buffer and abort. */
	char msg[96];
	int len = snprintf(msg, sizeof(msg), "fatal: out of memory (%zu bytes)\n", size);
	if (len > 0)
		(void)!write(STDERR_FILENO, msg, (size_t)len);
	abort();
}

void *i_malloc(size_t size)
{
	void *mem = calloc(1, size == 0 ? 1 : size);
	if (mem == NULL)
		out_of_memory(size);
	return mem;
}

void *i_realloc(void *mem, size_t size)
{
	void *new_mem = realloc(mem, size == 0 ? 1 : size);
	if (new_mem == NULL)
		out_of_memory(size);
	return new_mem;
}

char *i_strdup(const char *str)
{
	if (str == NULL)
		return NULL;
	size_t len = strlen(str);
	char *dup = i_malloc(len + 1);
	memcpy(dup, str, len);
	return dup;
}

char *i_strndup(const void *str, size_t max_len)
{
	/* (NULL, 0) is an empty string, as from an empty buffer. */
	size_t len = max_len == 0 ? 0 : strnlen(str, max_len);
	char *dup = i_malloc(i_add_size(len, 1));
	if (len > 0)
		memcpy(dup, str, len);
	return dup;
}

char *i_strdup_vprintf(const char *fmt, va_list args)
{
	char *str;
	if (vasprintf(&str, fmt, args) < 0)
		out_of_memory(strlen(fmt));
	return str;
}

char *i_strdup_printf(const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	char *str = i_strdup_vprintf(fmt, args);
	va_end(args);
	return str;
}

size_t i_mul_size(size_t n, size_t size)
{
	size_t result;
	if (__builtin_mul_overflow(n, size, &result))
		i_panic("size overflow: %zu * %zu", n, size);
	return result;
}

size_t i_add_size(size_t a, size_t b)
{
	size_t result;
	if (__builtin_add_overflow(a, b, &result))
		i_panic("size overflow: %zu + %zu", a, b);
	return result;
}

void i_close_fd(int *fd)
{
	if (*fd < 0)
		return;
	if (close(*fd) < 0 && errno != EINTR)
		i_error("close(%d) failed: %s", *fd, strerror(errno));
	*fd = -1;
}

int fd_set_nonblock(int fd, bool nonblock)
{
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0)
		return -1;
	flags = nonblock ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
	return fcntl(fd, F_SETFL, flags);
}

int fd_set_cloexec(int fd, bool cloexec)
{
	int flags = fcntl(fd, F_GETFD);
	if (flags < 0)
		return -1;
	flags = cloexec ? (flags | FD_CLOEXEC) : (flags & ~FD_CLOEXEC);
	return fcntl(fd, F_SETFD, flags);
}

int fd_pwrite_full(int fd, const void *data, size_t size, off_t offset)
{
	const char *p = data;

	while (size > 0) {
		ssize_t ret = pwrite(fd, p, size, offset);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (ret == 0) {
			errno = ENOSPC;
			return -1;
		}
		p += ret;
		size -= (size_t)ret;
		offset += ret;
	}
	return 0;
}

void fd_set_tcp_nodelay(int fd)
{
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void safe_memset(void *data, int c, size_t size)
{
	memset(data, c, size);
	/* Keeps the compiler from treating the memset as dead. */
	__asm__ __volatile__("" : : "r"(data) : "memory");
}

bool mem_equals_timing_safe(const void *a, const void *b, size_t size)
{
	const volatile unsigned char *pa = a, *pb = b;
	unsigned char diff = 0;
	for (size_t i = 0; i < size; i++)
		diff |= pa[i] ^ pb[i];
	return diff == 0;
}

void random_fill(void *buf, size_t size)
{
	unsigned char *p = buf;
	while (size > 0) {
		ssize_t ret = getrandom(p, size, 0);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			i_fatal("getrandom() failed: %s", strerror(errno));
		}
		p += ret;
		size -= (size_t)ret;
	}
}

uint64_t time_monotonic_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		i_panic("clock_gettime(CLOCK_MONOTONIC) failed: %s", strerror(errno));
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
