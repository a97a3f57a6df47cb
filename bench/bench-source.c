/* Messages for APPEND: a directory of .eml files, an mbox file, or
   synthetic messages. Every message is converted to CRLF line endings
   (IMAP literals carry CRLF lines). */
#include "imapload.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Bigger sources are not useful for a benchmark and would only eat memory. */
#define SOURCE_MAX_FILE_SIZE (64 * 1024 * 1024)
#define SOURCE_MAX_PATHS 100000
#define SOURCE_MAX_DEPTH 8

struct path_list {
	char **paths;
	size_t count, size;
};

struct msg_list {
	struct bench_message *msgs;
	unsigned int count, max;
};

/* LF or CRLF or mixed -> CRLF; bare CR is kept as is. */
static void to_crlf(const char *data, size_t size, struct bench_message *msg_r)
{
	char *out = bench_malloc(size * 2 + 3);
	size_t i, o = 0;

	for (i = 0; i < size; i++) {
		if (data[i] == '\n' && (i == 0 || data[i - 1] != '\r'))
			out[o++] = '\r';
		out[o++] = data[i];
	}
	if (o < 2 || out[o - 1] != '\n') {
		out[o++] = '\r';
		out[o++] = '\n';
	}
	msg_r->data = out;
	msg_r->size = o;
}

static bool msg_list_add(struct msg_list *list, const char *data, size_t size)
{
	if (list->max != 0 && list->count >= list->max)
		return false;
	if (size == 0)
		return true;
	list->msgs = bench_realloc(list->msgs,
				   sizeof(*list->msgs) * (list->count + 1));
	to_crlf(data, size, &list->msgs[list->count++]);
	return true;
}

static int read_file(const char *path, char **data_r, size_t *size_r)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *data;

	if (f == NULL || fstat(fileno(f), &st) < 0) {
		perror(path);
		if (f != NULL)
			fclose(f);
		return -1;
	}
	if (st.st_size > SOURCE_MAX_FILE_SIZE * 16) {
		fprintf(stderr, "%s: too big\n", path);
		fclose(f);
		return -1;
	}
	data = bench_malloc((size_t)st.st_size + 1);
	*size_r = fread(data, 1, (size_t)st.st_size, f);
	fclose(f);
	*data_r = data;
	return 0;
}

static void collect_paths(const char *dir, unsigned int depth,
			  struct path_list *list)
{
	struct dirent *d;
	DIR *dirp;

	if (depth > SOURCE_MAX_DEPTH || (dirp = opendir(dir)) == NULL)
		return;
	while ((d = readdir(dirp)) != NULL && list->count < SOURCE_MAX_PATHS) {
		size_t len = strlen(d->d_name);
		char *path;
		struct stat st;

		if (d->d_name[0] == '.')
			continue;
		path = bench_malloc(strlen(dir) + len + 2);
		sprintf(path, "%s/%s", dir, d->d_name);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			collect_paths(path, depth + 1, list);
			free(path);
		} else if (len > 4 && strcmp(d->d_name + len - 4, ".eml") == 0 &&
			   st.st_size <= SOURCE_MAX_FILE_SIZE) {
			if (list->count == list->size) {
				list->size = list->size * 2 + 64;
				list->paths = bench_realloc(list->paths,
					sizeof(char *) * list->size);
			}
			list->paths[list->count++] = path;
		} else {
			free(path);
		}
	}
	closedir(dirp);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_dir(const char *dir, struct msg_list *msgs)
{
	struct path_list list = { NULL, 0, 0 };
	size_t i;

	collect_paths(dir, 0, &list);
	qsort(list.paths, list.count, sizeof(char *), cmp_str);
	for (i = 0; i < list.count; i++) {
		char *data;
		size_t size;

		if (read_file(list.paths[i], &data, &size) == 0) {
			bool more = msg_list_add(msgs, data, size);
			free(data);
			if (!more)
				break;
		}
	}
	for (i = 0; i < list.count; i++)
		free(list.paths[i]);
	free(list.paths);
	return 0;
}

/* mboxrd: messages start at "From " lines; ">From " (any number of '>')
   lines lose one '>'. The From_ line itself is not part of the message. */
static int load_mbox(const char *path, struct msg_list *msgs)
{
	char *data, *out, *p, *end;
	size_t size, o = 0;
	bool in_msg = false;

	if (read_file(path, &data, &size) < 0)
		return -1;
	out = bench_malloc(size + 1);
	end = data + size;
	for (p = data; p < end; ) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *line_end = nl == NULL ? end : nl + 1;
		const char *q = p;

		if ((p == data || p[-1] == '\n') && end - p >= 5 &&
		    memcmp(p, "From ", 5) == 0) {
			if (in_msg && !msg_list_add(msgs, out, o))
				break;
			in_msg = true;
			o = 0;
			p = line_end;
			continue;
		}
		while (q < line_end && *q == '>')
			q++;
		if (q > p && line_end - q >= 5 && memcmp(q, "From ", 5) == 0)
			p++;
		memcpy(out + o, p, (size_t)(line_end - p));
		o += (size_t)(line_end - p);
		p = line_end;
	}
	if (in_msg && p >= end)
		(void)msg_list_add(msgs, out, o);
	free(out);
	free(data);
	return 0;
}

int bench_source_load(const char *path, unsigned int max,
		      struct bench_message **msgs_r)
{
	struct msg_list msgs = { NULL, 0, max };
	struct stat st;
	int ret;

	if (stat(path, &st) < 0) {
		perror(path);
		return -1;
	}
	ret = S_ISDIR(st.st_mode) ? load_dir(path, &msgs) :
		load_mbox(path, &msgs);
	if (ret < 0 || msgs.count == 0) {
		fprintf(stderr, "%s: no messages found\n", path);
		free(msgs.msgs);
		return -1;
	}
	*msgs_r = msgs.msgs;
	return (int)msgs.count;
}

void bench_message_synth(unsigned int n, unsigned int seed,
			 struct bench_message *msg_r)
{
	/* about 3 KB: the median size of real mail without attachments */
	static const char body_line[] =
		"The quick brown fox jumps over the lazy dog, again and again.\r\n";
	const unsigned int body_lines = 44;
	size_t size = 1024 + body_lines * (sizeof(body_line) - 1);
	char *data = bench_malloc(size);
	int len;
	unsigned int i;

	len = snprintf(data, size,
		"From: Bench Sender <sender@example.org>\r\n"
		"To: Bench Receiver <receiver@example.org>\r\n"
		"Subject: imapload message %u\r\n"
		"Date: Mon, 7 Feb 1994 21:52:25 -0800\r\n"
		"Message-ID: <%u.%u.imapload@example.org>\r\n"
		"MIME-Version: 1.0\r\n"
		"Content-Type: text/plain; charset=us-ascii\r\n"
		"\r\n", n, seed, n);
	for (i = 0; i < body_lines; i++) {
		memcpy(data + len, body_line, sizeof(body_line) - 1);
		len += (int)(sizeof(body_line) - 1);
	}
	msg_r->data = data;
	msg_r->size = (size_t)len;
}
