/* Bounded growable byte strings; see buffer.h for the invariants. */
#include "lib.h"
#include "buffer.h"

void buffer_init(buffer_t *buf, size_t max_size)
{
	memset(buf, 0, sizeof(*buf));
	buf->max_size = max_size;
	buf->alloc = MIN(max_size, (size_t)64) + 1;
	buf->data = i_malloc(buf->alloc);
}

void buffer_free(buffer_t *buf)
{
	i_free(buf->data);
	buf->used = buf->alloc = 0;
}

void buffer_reset(buffer_t *buf)
{
	buf->used = 0;
	buf->data[0] = '\0';
}

char *buffer_reserve(buffer_t *buf, size_t size)
{
	if (size > buf->max_size - buf->used)
		return NULL;
	size_t need = buf->used + size + 1;
	if (need > buf->alloc) {
		size_t new_alloc = buf->alloc;
		while (new_alloc < need)
			new_alloc = i_mul_size(new_alloc, 2);
		/* max_size may be SIZE_MAX ("no limit"): +1 would wrap to 0. */
		if (buf->max_size < SIZE_MAX)
			new_alloc = MIN(new_alloc, buf->max_size + 1);
		buf->data = i_realloc(buf->data, new_alloc);
		buf->alloc = new_alloc;
	}
	return buf->data + buf->used;
}

void buffer_commit(buffer_t *buf, size_t size)
{
	i_assert(size <= buf->alloc - buf->used - 1);
	buf->used += size;
	buf->data[buf->used] = '\0';
}

int buffer_append(buffer_t *buf, const void *data, size_t size)
{
	char *dest = buffer_reserve(buf, size);
	if (dest == NULL)
		return -1;
	if (size > 0)
		memcpy(dest, data, size);
	buffer_commit(buf, size);
	return 0;
}

int buffer_append_str(buffer_t *buf, const char *str)
{
	return buffer_append(buf, str, strlen(str));
}

int buffer_append_c(buffer_t *buf, char c)
{
	return buffer_append(buf, &c, 1);
}

int buffer_append_u32(buffer_t *buf, uint32_t n)
{
	char digits[10];
	unsigned int i = sizeof(digits);

	do {
		digits[--i] = (char)('0' + n % 10);
		n /= 10;
	} while (n != 0);
	return buffer_append(buf, digits + i, sizeof(digits) - i);
}

int buffer_vprintf(buffer_t *buf, const char *fmt, va_list args)
{
	va_list args2;
	va_copy(args2, args);
	int len = vsnprintf(NULL, 0, fmt, args2);
	va_end(args2);
	if (len < 0)
		return -1;
	char *dest = buffer_reserve(buf, (size_t)len);
	if (dest == NULL)
		return -1;
	(void)vsnprintf(dest, (size_t)len + 1, fmt, args);
	buffer_commit(buf, (size_t)len);
	return 0;
}

int buffer_printf(buffer_t *buf, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	int ret = buffer_vprintf(buf, fmt, args);
	va_end(args);
	return ret;
}

void buffer_delete_head(buffer_t *buf, size_t size)
{
	if (size >= buf->used) {
		buffer_reset(buf);
		return;
	}
	memmove(buf->data, buf->data + size, buf->used - size);
	buf->used -= size;
	buf->data[buf->used] = '\0';
}

void buffer_truncate(buffer_t *buf, size_t size)
{
	if (size < buf->used) {
		buf->used = size;
		buf->data[size] = '\0';
	}
}

char *buffer_detach(buffer_t *buf)
{
	char *data = buf->data;
	size_t max_size = buf->max_size;
	buffer_init(buf, max_size);
	return data;
}
