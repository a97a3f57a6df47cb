/* libFuzzer target for lmtp's syntax (lmtp/lmtp-proto.c) and its DATA
   reader (lmtp/lmtp-data.c), the code that parses the MTA's bytes. Built
   and run by tests/fuzz/run.sh.

   Input layout: byte 0 picks the chunk size DATA bytes are fed in; the
   rest up to the first LF is one command line, run through every parser;
   everything after it is DATA input. Checked: parsers never write past
   their bounds (ASan), an accepted 8-bit address is valid UTF-8 and came
   with SMTPUTF8 (RFC 6531), the DATA reader consumes exactly up to the end
   line and, without the end line, everything; the undone transparency
   gives back at most the bytes fed. */

#include "lib.h"
#include "lmtp-proto.h"
#include "lmtp-data.h"
#include "utf8.h"

#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz check failed: %s\n", what);
		abort();
	}
}

static void fuzz_line(const char *line)
{
	struct lmtp_mail mail;
	struct lmtp_rcpt_addr rcpt;
	struct lmtp_error error;
	const char *args;
	uint64_t bdat_size;
	bool last;

	(void)lmtp_verb_parse(line, &args);
	if (lmtp_parse_mail(args, &mail, &error) == 0) {
		size_t len = strlen(mail.path);
		check(len <= LMTP_PATH_MAX, "mail path bound");
		check(!utf8_has_8bit(mail.path, len) ||
		      (mail.smtputf8 && utf8_is_valid(mail.path, len)),
		      "8-bit sender only with SMTPUTF8, as UTF-8");
	}
	if (lmtp_parse_rcpt(args, &rcpt, &error) == 0) {
		size_t len = strlen(rcpt.path);
		bool eightbit = utf8_has_8bit(rcpt.path, len);
		int plain = lmtp_address_check(rcpt.path, false, false, &error);
		int utf8 = lmtp_address_check(rcpt.path, true, false, &error);
		check((plain == 0) == !eightbit,
		      "8-bit recipient refused without SMTPUTF8");
		check((utf8 == 0) == (!eightbit || utf8_is_valid(rcpt.path, len)),
		      "with SMTPUTF8 a recipient must be UTF-8");
		char user[LMTP_PATH_MAX + 1], detail[LMTP_PATH_MAX + 1];
		char domain[LMTP_PATH_MAX + 1], key[257];
		lmtp_address_split(rcpt.path, "+", user, detail, domain);
		check(strlen(user) + strlen(domain) <= strlen(rcpt.path),
		      "split parts are parts");
		(void)lmtp_username_format("%Lu", user, domain, key, sizeof(key));
		(void)lmtp_username_format("%n-%d%%", user, domain, key, 8);
	}
	(void)lmtp_parse_bdat(args, &bdat_size, &last);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t chunk = (size_t)data[0] + 1;
	data++;
	size--;

	const uint8_t *lf = memchr(data, '\n', size);
	size_t line_len = lf == NULL ? size : (size_t)(lf - data);
	if (line_len <= LMTP_LINE_MAX) {
		char line[LMTP_LINE_MAX + 1];
		memcpy(line, data, line_len);
		line[line_len] = '\0';
		fuzz_line(line);
	}
	if (lf == NULL)
		return 0;
	data = lf + 1;
	size -= line_len + 1;

	struct lmtp_data *msg = lmtp_data_create(4096);
	check(msg != NULL, "memfd");
	size_t pos = 0;
	while (pos < size && !lmtp_data_is_done(msg)) {
		size_t n = MIN(chunk, size - pos);
		size_t used = lmtp_data_feed_dotted(msg, data + pos, n);
		check(used <= n, "consumed at most what was fed");
		check(used == n || lmtp_data_is_done(msg), "short only at the end");
		pos += used;
	}
	check(lmtp_data_size(msg) <= pos, "transparency never adds bytes");
	int fd = lmtp_data_finish(msg);
	struct stat st;
	check(fd >= 0 && fstat(fd, &st) == 0, "finish");
	check((uint64_t)st.st_size == (lmtp_data_too_big(msg) ? st.st_size :
					lmtp_data_size(msg)), "stored size");
	check((uint64_t)st.st_size <= 4096, "limit");
	lmtp_data_destroy(&msg);
	return 0;
}
