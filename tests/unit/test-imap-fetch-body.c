/* Unit tests for imap/imap-fetch-body.c and imap/imap-body-stream.c:
   section specifiers, and section reading (CRLF view of LF files,
   HEADER.FIELDS filtering, base64 and quoted-printable decoding, partial
   skips), read back in pieces of every size so that each state machine
   sees its input split everywhere. */
#include "test-common.h"
#include "imap-common.h"
#include "imap-fetch-body.h"
#include "imap-fetch-cache.h"
#include "imap-cache-text.h"
#include "imap-envelope.h"
#include "message-parser.h"

#include <fcntl.h>
#include <sys/stat.h>

static void test_section_parse(void)
{
	static const struct {
		const char *spec;
		bool binary;
		const char *echo;   /* NULL: a syntax error */
		enum imap_section_text text;
		const char *part;
	} tests[] = {
		{ "", false, "", IMAP_SECTION_BODY, "" },
		{ "HEADER", false, "HEADER", IMAP_SECTION_HEADER, "" },
		{ "text", false, "TEXT", IMAP_SECTION_TEXT, "" },
		{ "1.2.mime", false, "1.2.MIME", IMAP_SECTION_MIME, "1.2" },
		{ "3.HEADER", false, "3.HEADER", IMAP_SECTION_HEADER, "3" },
		{ "12", false, "12", IMAP_SECTION_BODY, "12" },
		{ "header.fields (from \"To\" x-a)", false,
		  "HEADER.FIELDS (FROM \"TO\" X-A)",
		  IMAP_SECTION_HEADER_FIELDS, "" },
		{ "2.HEADER.FIELDS.NOT (Subject)", false,
		  "2.HEADER.FIELDS.NOT (SUBJECT)",
		  IMAP_SECTION_HEADER_FIELDS_NOT, "2" },
		{ "1.2", true, "1.2", IMAP_SECTION_BODY, "1.2" },
		{ "", true, "", IMAP_SECTION_BODY, "" },
		{ "MIME", false, NULL, 0, NULL },
		{ "1.", false, NULL, 0, NULL },
		{ "1.FOO", false, NULL, 0, NULL },
		{ "HEADER.FIELDS", false, NULL, 0, NULL },
		{ "HEADER.FIELDS ()", false, NULL, 0, NULL },
		{ "HEADER.FIELDS (A", false, NULL, 0, NULL },
		{ "HEADER.FIELDS (A) ", false, NULL, 0, NULL },
		{ "HEADER.FIELDS (A  B)", false, NULL, 0, NULL },
		{ "HEADER.FIELDS (\"A)", false, NULL, 0, NULL },
		{ "TEXT.MIME", false, NULL, 0, NULL },
		{ "1.TEXT", true, NULL, 0, NULL },
		{ "HEADER", true, NULL, 0, NULL },
	};
	pool_t pool = pool_create("test", 1024);

	for (unsigned int i = 0; i < N_ELEMENTS(tests); i++) {
		struct imap_section sec;
		const char *echo = NULL;
		int ret = imap_section_parse(pool, tests[i].spec,
					     tests[i].binary, &sec, &echo);
		if (tests[i].echo == NULL) {
			test_assert(ret < 0);
			continue;
		}
		test_assert(ret == 0);
		if (ret < 0)
			continue;
		test_assert_str(echo, tests[i].echo);
		test_assert_str(sec.part, tests[i].part);
		test_assert_int(sec.text, tests[i].text);
	}
	pool_unref(&pool);
}

/* Write data to a file, parse it and read section spec back, in reads
   of piece bytes, after skipping skip bytes. */
static const char *read_section(const char *data, const char *spec,
				bool binary, size_t piece, uint64_t skip,
				uint64_t *size_r)
{
	static char out[4096];
	char path[1024];
	pool_t pool = pool_create("test", 1024);
	struct imap_section sec;
	struct imap_body_source src;
	struct imap_body_stream *s = i_malloc(sizeof(*s));
	const char *echo;
	bool has_nul;
	size_t len = 0;
	ssize_t ret;

	snprintf(path, sizeof(path), "%s/msg", test_tmpdir());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	i_assert(fd >= 0);
	i_assert(write(fd, data, strlen(data)) == (ssize_t)strlen(data));
	struct message_part *root =
		message_parse_data(pool, data, strlen(data));
	i_assert(imap_section_parse(pool, spec, binary, &sec, &echo) == 0);
	i_assert(imap_body_source_get(root, &sec, 0, &src) == 0);
	imap_body_stream_init(s, fd, strchr(data, '\r') == NULL, &sec, &src);
	i_assert(imap_body_stream_measure(s, size_r, &has_nul) == 0);
	i_assert(imap_body_stream_skip(s, skip) == 0);
	while ((ret = imap_body_stream_read(s, (unsigned char *)out + len,
					    MIN(piece, sizeof(out) - 1 - len))) > 0)
		len += (size_t)ret;
	out[len] = '\0';
	i_close_fd(&fd);
	i_free(s);
	pool_unref(&pool);
	return out;
}

static void check_section(const char *data, const char *spec, bool binary,
			  const char *want)
{
	for (size_t piece = 1; piece <= 9; piece++) {
		uint64_t size;
		const char *got = read_section(data, spec, binary, piece, 0,
					       &size);
		test_assert_str(got, want);
		test_assert_int(size, strlen(want));
	}
	/* a skip lands anywhere in the output */
	for (uint64_t skip = 1; skip <= strlen(want); skip++) {
		uint64_t size;
		test_assert_str(read_section(data, spec, binary, 3, skip,
					     &size), want + skip);
	}
}

#define MSG_LF \
	"From: a@example.org\n" \
	"To: b@example.org,\n\tc@example.org\n" \
	"Subject: s\n" \
	"MIME-Version: 1.0\n" \
	"Content-Type: multipart/mixed; boundary=X\n" \
	"\n" \
	"--X\n" \
	"Content-Type: text/plain\n" \
	"Content-Transfer-Encoding: quoted-printable\n" \
	"\n" \
	"a=3Db  \n" \
	"soft=\n" \
	"break=\n" \
	"\n" \
	"--X\n" \
	"Content-Transfer-Encoding: base64\n" \
	"\n" \
	"aGVs\n" \
	"bG8h\n" \
	"IQ==\n" \
	"--X--\n"

static void test_header_sections(void)
{
	check_section(MSG_LF, "HEADER.FIELDS (to SUBJECT)", false,
		      "To: b@example.org,\r\n\tc@example.org\r\n"
		      "Subject: s\r\n\r\n");
	check_section(MSG_LF, "HEADER.FIELDS.NOT (To Subject MIME-Version)",
		      false, "From: a@example.org\r\n"
		      "Content-Type: multipart/mixed; boundary=X\r\n\r\n");
	check_section(MSG_LF, "HEADER.FIELDS (X-NONE)", false, "\r\n");
	check_section(MSG_LF, "1.MIME", false,
		      "Content-Type: text/plain\r\n"
		      "Content-Transfer-Encoding: quoted-printable\r\n\r\n");
	check_section(MSG_LF, "2", false, "aGVs\r\nbG8h\r\nIQ==");
}

static void test_decoding(void)
{
	check_section(MSG_LF, "1", true, "a=b\r\nsoftbreak");
	check_section(MSG_LF, "2", true, "hello!!");
	/* CRLF files too; an invalid escape is kept */
	check_section("Content-Transfer-Encoding: quoted-printable\r\n"
		      "MIME-Version: 1.0\r\n\r\n=4x =41\t\r\n=\r\nend",
		      "1", true, "=4x A\r\nend");
	check_section("Content-Transfer-Encoding: base64\r\n"
		      "MIME-Version: 1.0\r\n\r\nYQ", "1", true, "a");
}

static void test_unknown_cte(void)
{
	static const char msg[] = "MIME-Version: 1.0\r\n"
		"Content-Transfer-Encoding: x-uuencode\r\n\r\nbody";
	pool_t pool = pool_create("test", 1024);
	struct imap_section sec;
	struct imap_body_source src;
	const char *echo;
	struct message_part *root = message_parse_data(pool, msg, strlen(msg));

	test_assert(imap_section_parse(pool, "1", true, &sec, &echo) == 0);
	test_assert(imap_body_source_get(root, &sec, 0, &src) < 0);
	/* BODY[1] does not decode, so it is fine */
	test_assert(imap_section_parse(pool, "1", false, &sec, &echo) == 0);
	test_assert(imap_body_source_get(root, &sec, 0, &src) == 0);
	test_assert(src.found && src.virt_size == 4);
	/* a part that does not exist is empty */
	test_assert(imap_section_parse(pool, "7", true, &sec, &echo) == 0);
	test_assert(imap_body_source_get(root, &sec, 0, &src) == 0);
	test_assert(!src.found);
	pool_unref(&pool);
}

/* Texts cached by a moat whose writers differed must not be served:
   the cache field names carry IMAP_MSG_TEXT_VERSION, and a value under
   the old (version 1) name is ignored and computed again. */
static void test_cache_version(void)
{
	static const char msg[] = "From: \"\" <list@example.org>\r\n"
		"Subject: s\r\n\r\nbody\r\n";
	static const char fresh[] = "(NIL \"s\" ((NIL NIL \"list\" "
		"\"example.org\")) ((NIL NIL \"list\" \"example.org\")) "
		"((NIL NIL \"list\" \"example.org\")) NIL NIL NIL NIL NIL)";
	char root[1024], path[1200];
	struct imap_msg_structure ms;
	struct mailbox *box;
	buffer_t packed, out;
	const void *data;
	const char *error;
	size_t size;

	snprintf(root, sizeof(root), "%s/CacheVersion", test_tmpdir());
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	mailbox_close(&box);
	snprintf(path, sizeof(path), "%s/cur/1.test:2,", root);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	test_assert(fd >= 0 && write(fd, msg, strlen(msg)) ==
		    (ssize_t)strlen(msg));
	i_close_fd(&fd);
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_get_count(box), 1);
	/* what version 1 cached: the old name, an old text */
	buffer_init(&packed, IMAP_CACHE_TEXT_MAX + 16);
	test_assert(imap_cache_text_pack("(STALE)", 7, &packed) == 0);
	test_assert(mailbox_msg_cache_add(box, 1, "imap.envelope", packed.data,
					  packed.used, &error) == 0);
	test_assert(mailbox_cache_flush(box, &error) == 0);
	mailbox_close(&box);

	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	test_assert_int(mailbox_msg_cache_lookup(box, 1, "imap.envelope",
						 &data, &size), 1);
	memset(&ms, 0, sizeof(ms));
	buffer_init(&out, IMAP_ENVELOPE_OUTPUT_MAX);
	uint64_t misses = imap_fetch_counters.text_misses;
	test_assert(imap_msg_text_get(&ms, box, 1, IMAP_MSG_TEXT_ENVELOPE,
				      &out, &error) == 0);
	test_assert_int(imap_fetch_counters.text_misses, misses + 1);
	test_assert(out.used == strlen(fresh) &&
		    memcmp(out.data, fresh, out.used) == 0);
	imap_fetch_cache_flush(&ms, box);
	imap_msg_structure_clear(&ms);
	mailbox_close(&box);

	/* the fresh text was cached under the current name */
	test_assert_int(mailbox_open(root, "INBOX", MAILBOX_OPEN_NO_FSYNC,
				     &box, &error), 1);
	buffer_reset(&out);
	uint64_t hits = imap_fetch_counters.text_hits;
	test_assert(imap_msg_text_get(&ms, box, 1, IMAP_MSG_TEXT_ENVELOPE,
				      &out, &error) == 0);
	test_assert_int(imap_fetch_counters.text_hits, hits + 1);
	test_assert(out.used == strlen(fresh) &&
		    memcmp(out.data, fresh, out.used) == 0);
	imap_msg_structure_clear(&ms);
	mailbox_close(&box);
	buffer_free(&out);
	buffer_free(&packed);
}

static void test_cleanup(void)
{
	test_tmpdir_cleanup();
}

TEST_MAIN(TEST(test_section_parse), TEST(test_header_sections),
	  TEST(test_decoding), TEST(test_unknown_cte),
	  TEST(test_cache_version), TEST(test_cleanup))
