/* Text and JSON output of rows (admin-output.h). */
#include "admin-output.h"
#include "strfuncs.h"

#include <stdarg.h>

struct admin_output_field {
	const char *key;
	const unsigned char *data;
	size_t size;
};

struct admin_output {
	struct admin_ctx *ctx;
	enum admin_output_shape shape;
	const char *const *numeric_keys;
	unsigned int rows;
	pool_t row_pool;          /* the row being built; emptied per row */
	struct admin_output_field fields[ADMIN_OUTPUT_FIELDS_MAX];
	unsigned int field_count;
	const char *prefix_key, *prefix_value;
	bool forward;             /* rows go to forward_fd as frames */
	int forward_fd;
};

struct admin_output *admin_output_begin(struct admin_ctx *ctx,
					enum admin_output_shape shape,
					const char *const *numeric_keys)
{
	struct admin_output *out = p_malloc(ctx->pool, sizeof(*out));

	out->ctx = ctx;
	out->shape = shape;
	out->numeric_keys = numeric_keys;
	return out;
}

/* Decoded length of the valid UTF-8 sequence at p, or 0. */
static size_t utf8_seq_len(const unsigned char *p, size_t left)
{
	size_t len;
	unsigned int min;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0) { len = 2; min = 0x80; }
	else if ((p[0] & 0xf0) == 0xe0) { len = 3; min = 0x800; }
	else if ((p[0] & 0xf8) == 0xf0) { len = 4; min = 0x10000; }
	else return 0;
	if (len > left)
		return 0;
	unsigned int cp = p[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

void admin_json_string(const void *data, size_t size)
{
	const unsigned char *p = data;

	putchar('"');
	for (size_t i = 0; i < size;) {
		unsigned char c = p[i];
		if (c == '"' || c == '\\') {
			printf("\\%c", c);
			i++;
		} else if (c == '\n') {
			fputs("\\n", stdout);
			i++;
		} else if (c == '\r') {
			fputs("\\r", stdout);
			i++;
		} else if (c == '\t') {
			fputs("\\t", stdout);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			printf("\\u%04x", c);
			i++;
		} else {
			size_t len = utf8_seq_len(p + i, size - i);
			if (len == 0) {
				fputs("\\ufffd", stdout);
				i++;
			} else {
				fwrite(p + i, 1, len, stdout);
				i += len;
			}
		}
	}
	putchar('"');
}

static bool admin_output_is_numeric_key(const struct admin_output *out,
					const char *key)
{
	if (out->numeric_keys == NULL)
		return false;
	for (const char *const *k = out->numeric_keys; *k != NULL; k++) {
		if (strcmp(*k, key) == 0)
			return true;
	}
	return false;
}

static bool admin_is_number(const unsigned char *data, size_t size)
{
	if (size == 0 || size > 20 || (data[0] == '0' && size > 1))
		return false;
	for (size_t i = 0; i < size; i++) {
		if (data[i] < '0' || data[i] > '9')
			return false;
	}
	return true;
}

static void admin_output_json_row(struct admin_output *out)
{
	if (out->shape != ADMIN_OUTPUT_OBJECT)
		fputs(out->rows == 0 ? "[\n  " : ",\n  ", stdout);
	putchar('{');
	for (unsigned int i = 0; i < out->field_count; i++) {
		const struct admin_output_field *f = &out->fields[i];
		if (i > 0)
			fputs(", ", stdout);
		admin_json_string(f->key, strlen(f->key));
		fputs(": ", stdout);
		if (!admin_output_is_numeric_key(out, f->key))
			admin_json_string(f->data, f->size);
		else if (admin_is_number(f->data, f->size))
			fwrite(f->data, 1, f->size, stdout);
		else
			fputs("null", stdout);
	}
	putchar('}');
}

static void admin_output_text_row(struct admin_output *out)
{
	if (out->shape == ADMIN_OUTPUT_TABLE) {
		if (out->rows == 0) {
			for (unsigned int i = 0; i < out->field_count; i++)
				printf("%s%s", i == 0 ? "" : "\t",
				       out->fields[i].key);
			putchar('\n');
		}
		for (unsigned int i = 0; i < out->field_count; i++) {
			if (i > 0)
				putchar('\t');
			fwrite(out->fields[i].data, 1, out->fields[i].size, stdout);
		}
		putchar('\n');
		return;
	}
	if (out->rows > 0)
		putchar('\n');
	for (unsigned int i = 0; i < out->field_count; i++) {
		const struct admin_output_field *f = &out->fields[i];
		printf("%s: ", f->key);
		fwrite(f->data, 1, f->size, stdout);
		if (f->size == 0 || f->data[f->size - 1] != '\n')
			putchar('\n');
	}
}

void admin_output_set_prefix(struct admin_output *out, const char *key,
			     const char *value)
{
	out->prefix_key = key;
	out->prefix_value = value;
}

void admin_output_row_begin(struct admin_output *out)
{
	if (out->row_pool == NULL)
		out->row_pool = pool_create("admin output row", 4096);
	out->field_count = 0;
	if (out->prefix_key != NULL)
		admin_output_field(out, out->prefix_key, out->prefix_value,
				   strlen(out->prefix_value));
}

void admin_output_field(struct admin_output *out, const char *key,
			const void *data, size_t size)
{
	if (out->field_count >= ADMIN_OUTPUT_FIELDS_MAX)
		return;
	struct admin_output_field *f = &out->fields[out->field_count++];
	f->key = p_strdup(out->row_pool, key);
	unsigned char *copy = p_malloc(out->row_pool, size + 1);
	memcpy(copy, data, size);
	f->data = copy;
	f->size = size;
}

static int admin_write_full(int fd, const void *data, size_t size)
{
	const unsigned char *p = data;

	while (size > 0) {
		ssize_t ret = write(fd, p, size);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			return -1;
		p += ret;
		size -= (size_t)ret;
	}
	return 0;
}

/* 1 when size bytes were read, 0 at EOF before the first, -1. */
static int admin_read_full(int fd, void *data, size_t size)
{
	unsigned char *p = data;
	size_t got = 0;

	while (got < size) {
		ssize_t ret = read(fd, p + got, size - got);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0 || (ret == 0 && got > 0))
			return -1;
		if (ret == 0)
			return 0;
		got += (size_t)ret;
	}
	return 1;
}

void admin_output_forward(struct admin_output *out, int fd)
{
	out->forward = true;
	out->forward_fd = fd;
}

int admin_output_forward_done(int fd, int exit_code)
{
	unsigned char frame[1 + sizeof(int32_t)];
	int32_t code = exit_code;

	frame[0] = 'U';
	memcpy(frame + 1, &code, sizeof(code));
	return admin_write_full(fd, frame, sizeof(frame));
}

static void admin_output_send_row(struct admin_output *out)
{
	uint32_t count = out->field_count;
	unsigned char type = 'R';
	bool ok = admin_write_full(out->forward_fd, &type, 1) == 0 &&
		admin_write_full(out->forward_fd, &count, sizeof(count)) == 0;

	for (unsigned int i = 0; ok && i < out->field_count; i++) {
		const struct admin_output_field *f = &out->fields[i];
		uint32_t klen = (uint32_t)strlen(f->key);
		uint64_t vlen = f->size;
		ok = admin_write_full(out->forward_fd, &klen, sizeof(klen)) == 0 &&
			admin_write_full(out->forward_fd, &vlen, sizeof(vlen)) == 0 &&
			admin_write_full(out->forward_fd, f->key, klen) == 0 &&
			admin_write_full(out->forward_fd, f->data, f->size) == 0;
	}
	if (!ok)
		i_fatal("the parent moatadm went away: %m");
}

static int admin_output_relay_row(struct admin_output *out, int fd,
				  uint64_t max_value)
{
	uint32_t count, klen;
	uint64_t vlen;
	char key[ADMIN_FRAME_KEY_MAX + 1];

	if (admin_read_full(fd, &count, sizeof(count)) <= 0 ||
	    count > ADMIN_OUTPUT_FIELDS_MAX)
		return -1;
	admin_output_row_begin(out);
	for (uint32_t i = 0; i < count; i++) {
		if (admin_read_full(fd, &klen, sizeof(klen)) <= 0 ||
		    admin_read_full(fd, &vlen, sizeof(vlen)) <= 0 ||
		    klen > ADMIN_FRAME_KEY_MAX || vlen > max_value ||
		    admin_read_full(fd, key, klen) < 0)
			return -1;
		key[klen] = '\0';
		unsigned char *value = p_malloc(out->row_pool, (size_t)vlen + 1);
		if (vlen > 0 && admin_read_full(fd, value, (size_t)vlen) <= 0)
			return -1;
		admin_output_field(out, key, value, (size_t)vlen);
	}
	admin_output_row_end(out);
	return 1;
}

int admin_output_relay(struct admin_output *out, int fd, uint64_t max_value,
		       int *exit_code_r)
{
	unsigned char type;
	int32_t code;

	int ret = admin_read_full(fd, &type, 1);
	if (ret <= 0)
		return ret;
	if (type == 'R')
		return admin_output_relay_row(out, fd, max_value);
	if (type != 'U' || admin_read_full(fd, &code, sizeof(code)) <= 0)
		return -1;
	*exit_code_r = code;
	return 2;
}

void admin_output_row_end(struct admin_output *out)
{
	if (out->forward)
		admin_output_send_row(out);
	else if (out->ctx->json)
		admin_output_json_row(out);
	else
		admin_output_text_row(out);
	out->rows++;
	pool_unref(&out->row_pool);
	out->field_count = 0;
}

void admin_output_row(struct admin_output *out, const char *const *kv)
{
	admin_output_row_begin(out);
	for (; kv[0] != NULL && kv[1] != NULL; kv += 2)
		admin_output_field(out, kv[0], kv[1], strlen(kv[1]));
	admin_output_row_end(out);
}

void admin_output_rowv(struct admin_output *out, ...)
{
	const char *kv[ADMIN_OUTPUT_FIELDS_MAX * 2 + 1];
	unsigned int count = 0;
	const char *arg;
	va_list va;

	va_start(va, out);
	while ((arg = va_arg(va, const char *)) != NULL &&
	       count < N_ELEMENTS(kv) - 1)
		kv[count++] = arg;
	va_end(va);
	kv[count] = NULL;
	admin_output_row(out, kv);
}

void admin_output_abort(struct admin_output **_out)
{
	struct admin_output *out = *_out;

	*_out = NULL;
	if (out->row_pool != NULL)
		pool_unref(&out->row_pool);
	fflush(stdout);
}

int admin_output_end(struct admin_output **_out, int exit_code,
		     const char *code, const char *text)
{
	struct admin_output *out = *_out;
	struct admin_ctx *ctx = out->ctx;

	*_out = NULL;
	if (out->row_pool != NULL)
		pool_unref(&out->row_pool);
	if (exit_code != 0 && out->rows == 0 && !ctx->errors_to_stderr)
		return admin_fail(ctx, exit_code, code, "%s", text);
	if (ctx->json) {
		if (out->shape != ADMIN_OUTPUT_OBJECT)
			fputs(out->rows == 0 ? "[]\n" : "\n]\n", stdout);
		else if (out->rows == 0)
			fputs("{}\n", stdout);
		else
			putchar('\n');
	}
	if (exit_code != 0)
		fprintf(stderr, "moatadm: %s\n", text);
	fflush(stdout);
	return exit_code;
}
