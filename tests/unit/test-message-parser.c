/* Unit tests for mime/message-parser.c: part tree, sizes, sections,
   streaming in any chunk size, limits and malformed input. */
#include "test-common.h"
#include "message-parser.h"
#include "mempool.h"

static const char multipart_msg[] =
	"From: a@b\r\n"
	"Content-Type: multipart/mixed; boundary=\"xx\"\r\n"
	"\r\n"
	"preamble\r\n"
	"--xx\r\n"
	"Content-Type: text/plain\r\n"
	"\r\n"
	"hello\r\n"
	"world\r\n"
	"--xx\r\n"
	"Content-Type: message/rfc822\r\n"
	"\r\n"
	"Subject: inner\r\n"
	"\r\n"
	"inner body\r\n"
	"--xx--\r\n"
	"epilogue\r\n";

static struct message_part *parse_chunked(pool_t pool, const char *data,
					  size_t size, size_t chunk)
{
	struct message_parser *p = message_parser_init(pool, NULL);

	for (size_t i = 0; i < size; i += chunk)
		message_parser_feed(p, data + i, MIN(chunk, size - i));
	return message_parser_finish(&p);
}

static void test_parser_multipart(void)
{
	pool_t pool = pool_create("test", 1024);
	struct message_part *root = message_parse_data(pool, multipart_msg,
						       strlen(multipart_msg));
	struct message_part *p1, *p2;

	test_assert((root->flags & MESSAGE_PART_FLAG_MULTIPART) != 0);
	test_assert_int(root->children_count, 2);
	test_assert_int(root->header_size.physical, 59);
	test_assert_int(root->header_size.physical + root->body_size.physical,
			strlen(multipart_msg));
	p1 = root->children;
	test_assert_str(p1->type, "text");
	/* "hello\r\nworld": the CRLF before the boundary is not the part's */
	test_assert_int(p1->body_size.physical, 12);
	test_assert_int(p1->body_size.lines, 1);
	p2 = p1->next;
	test_assert((p2->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) != 0);
	test_assert(p2->children != NULL);
	test_assert_str(p2->children->fields[MPF_SUBJECT], "inner");
	test_assert_int(p2->children->body_size.physical, 10);
	pool_unref(&pool);
}

static void test_parser_chunks(void)
{
	pool_t pool = pool_create("test", 1024);
	struct message_part *ref = message_parse_data(pool, multipart_msg,
						      strlen(multipart_msg));
	bool ok = true;

	/* One byte at a time splits CR from LF and every boundary. */
	for (size_t chunk = 1; chunk < 40; chunk++) {
		struct message_part *r = parse_chunked(pool, multipart_msg,
			strlen(multipart_msg), chunk);
		const struct message_part *a = ref->children, *b = r->children;
		for (; a != NULL && b != NULL; a = a->next, b = b->next) {
			if (a->body_size.physical != b->body_size.physical ||
			    a->header_size.virtual != b->header_size.virtual ||
			    a->body_size.lines != b->body_size.lines)
				ok = false;
		}
		if (a != NULL || b != NULL)
			ok = false;
	}
	test_assert(ok);
	pool_unref(&pool);
}

static void test_parser_lf_sizes(void)
{
	pool_t pool = pool_create("test", 1024);
	const char *msg = "Subject: x\n\nline1\nline2\n";
	struct message_part *root = message_parse_data(pool, msg, strlen(msg));

	test_assert_int(root->header_size.physical, 12);
	test_assert_int(root->header_size.virtual, 14);
	test_assert_int(root->body_size.physical, 12);
	test_assert_int(root->body_size.virtual, 14);
	test_assert_int(root->body_size.lines, 2);
	pool_unref(&pool);
}

static void test_parser_sections(void)
{
	pool_t pool = pool_create("test", 1024);
	struct message_part *root = message_parse_data(pool, multipart_msg,
						       strlen(multipart_msg));
	struct message_section_range r;
	struct message_part *part;

	part = message_part_find_section(root, "1");
	test_assert(part == root->children);
	test_assert(message_part_get_range(part, MESSAGE_SECTION_ALL, &r) == 0);
	test_assert(memcmp(multipart_msg + r.physical_pos, "hello\r\nworld",
			   r.physical_size) == 0);
	test_assert(message_part_get_range(part, MESSAGE_SECTION_MIME, &r) == 0);
	test_assert(memcmp(multipart_msg + r.physical_pos,
			   "Content-Type: text/plain\r\n\r\n", r.physical_size) == 0);
	test_assert(message_part_get_range(part, MESSAGE_SECTION_HEADER, &r) < 0);

	part = message_part_find_section(root, "2");
	test_assert(message_part_get_range(part, MESSAGE_SECTION_HEADER, &r) == 0);
	test_assert(memcmp(multipart_msg + r.physical_pos,
			   "Subject: inner\r\n\r\n", r.physical_size) == 0);
	test_assert(message_part_get_range(part, MESSAGE_SECTION_TEXT, &r) == 0);
	test_assert(memcmp(multipart_msg + r.physical_pos, "inner body",
			   r.physical_size) == 0);
	/* 2.1 is the body of the single-part encapsulated message */
	part = message_part_find_section(root, "2.1");
	test_assert(part != NULL && part == root->children->next->children);
	test_assert(message_part_find_section(root, "3") == NULL);
	/* a multipart's part that is not multipart is its own part 1,
	   once (Dovecot answers the same) */
	test_assert(message_part_find_section(root, "1.1") == root->children);
	test_assert(message_part_find_section(root, "1.1.1") == NULL);
	test_assert(message_part_find_section(root, "0") == NULL);
	test_assert(message_part_find_section(root, "x") == NULL);
	pool_unref(&pool);
}

static void test_parser_limits(void)
{
	pool_t pool = pool_create("test", 1024);
	struct message_parser_settings set = {
		.max_depth = 3, .max_parts = 5, .max_field_size = 1024,
	};
	struct message_parser *p = message_parser_init(pool, &set);
	const char *nest = "Content-Type: multipart/mixed; boundary=a\n\n--a\n";
	struct message_part *root;
	unsigned int count = 0, depth = 0;

	for (int i = 0; i < 50; i++)
		message_parser_feed(p, nest, strlen(nest));
	root = message_parser_finish(&p);
	for (struct message_part *part = root; part != NULL;
	     part = part->children) {
		depth++;
		for (struct message_part *c = part; c != NULL; c = c->next)
			count++;
	}
	test_assert(depth <= set.max_depth + 1);
	test_assert(count <= set.max_parts);
	pool_unref(&pool);
}

static void test_parser_malformed(void)
{
	pool_t pool = pool_create("test", 1024);
	static const char *const msgs[] = {
		"",
		"\n",
		"no header end",
		"Content-Type: multipart/mixed; boundary=b\n\n--b\n",
		"Content-Type: multipart/mixed; boundary=b\n\n--b--\n--b\n",
		"Content-Type: multipart/mixed\n\nno boundary\n",
		"Content-Type: message/rfc822\n\n",
		"A: \0b\r\r\n\r\nbody\0\r",
		"Content-Type: multipart/mixed; boundary=\"\"\n\n--\n",
		": novalue\n \n\t\n\nx",
	};
	for (unsigned int i = 0; i < N_ELEMENTS(msgs); i++) {
		/* msgs[7] holds NULs: its length is that of the literal. */
		size_t len = i == 7 ? sizeof("A: \0b\r\r\n\r\nbody\0\r") - 1 :
			strlen(msgs[i]);
		struct message_part *root = message_parse_data(pool, msgs[i], len);
		test_assert(root != NULL);
		test_assert_int(root->header_size.physical +
				root->body_size.physical, len);
	}
	/* a 3 MB line without any LF */
	size_t big = 3 * 1024 * 1024;
	char *data = i_malloc(big);
	memset(data, 'x', big);
	memcpy(data, "Subject: ", 9);
	struct message_part *root = message_parse_data(pool, data, big);
	test_assert_int(root->header_size.physical, big);
	test_assert(root->fields[MPF_SUBJECT] != NULL &&
		    strlen(root->fields[MPF_SUBJECT]) <=
		    MESSAGE_PARSER_DEFAULT_MAX_FIELD_SIZE);
	i_free(data);
	pool_unref(&pool);
}

static void test_parser_header_callback_cb(struct message_part *part ATTR_UNUSED,
					   const struct message_header_field *f,
					   void *context)
{
	unsigned int *count = context;
	if (strcmp(f->name, "X-Folded") == 0 && strcmp(f->value, "a\n b") == 0)
		(*count)++;
}

static void test_parser_header_callback(void)
{
	pool_t pool = pool_create("test", 1024);
	struct message_parser *p = message_parser_init(pool, NULL);
	const char *msg = "X-Folded: a\r\n b\r\nOther: x\r\n\r\n";
	unsigned int count = 0;

	message_parser_set_header_callback(p, test_parser_header_callback_cb,
					   &count);
	message_parser_feed(p, msg, strlen(msg));
	(void)message_parser_finish(&p);
	test_assert_int(count, 1);
	pool_unref(&pool);
}

/* Fed byte by byte: the root's header is done exactly at its blank line
   (or, for a message/rfc822 at the top, when the inner header starts),
   and the root's fields then equal those of the whole message's parse. */
static void test_parser_root_header_done(void)
{
	static const char *const msgs[] = {
		"Subject: s\r\nFrom: a@b\r\n\r\nbody\r\n",
		"Subject: s\nFrom: a@b\n\nbody\n",
		"Subject: folded\r\n more\r\n\r\n",
		"Content-Type: message/rfc822\r\nSubject: outer\r\n\r\n"
		"Subject: inner\r\n\r\ninner body\r\n",
	};
	for (unsigned int i = 0; i < N_ELEMENTS(msgs); i++) {
		pool_t pool = pool_create("test", 1024);
		struct message_part *whole = message_parse_data(pool, msgs[i],
								strlen(msgs[i]));
		struct message_parser *p = message_parser_init(pool, NULL);
		size_t len = strlen(msgs[i]), n = 0;
		const char *blank = strstr(msgs[i], "\n\r\n");
		if (blank == NULL)
			blank = strstr(msgs[i], "\n\n");
		size_t header_end = (size_t)(blank - msgs[i]) + 1;
		while (n < len && !message_parser_root_header_done(p))
			message_parser_feed(p, msgs[i] + n++, 1);
		/* not before the line that ends the header was complete */
		test_assert(n > header_end);
		test_assert(n <= header_end + 2);
		struct message_part *root = message_parser_finish(&p);
		test_assert_str(root->fields[MPF_SUBJECT],
				whole->fields[MPF_SUBJECT]);
		pool_unref(&pool);
	}
	/* a header without a blank line never finishes early */
	pool_t pool = pool_create("test", 1024);
	struct message_parser *p = message_parser_init(pool, NULL);
	message_parser_feed(p, "Subject: x\r\nFrom: y", 20);
	test_assert(!message_parser_root_header_done(p));
	(void)message_parser_finish(&p);
	pool_unref(&pool);
}

/* NUL bytes of a field (value, folded lines, name) become 0x80, however
   many and wherever they are; field names are matched whatever their
   case, and only whole names. */
static void test_parser_nuls_and_names(void)
{
	pool_t pool = pool_create("test", 1024);
	static const char msg[] =
		"SUBJECT: \0a\0\0b\0\r\n"
		" \0fold\0\r\n"
		"Subjects: not the subject\r\n"
		"Fro\0m: <a@example.org>\r\n"
		"to: <b@example.org>\r\n"
		"mime-version: 1.0\r\n"
		"Message-Id: <id@example.org>\r\n"
		"\r\nbody";
	struct message_part *root =
		message_parse_data(pool, msg, sizeof(msg) - 1);

	test_assert(root != NULL);
	test_assert_str(root->fields[MPF_SUBJECT],
			"\x80" "a\x80\x80" "b\x80\n \x80" "fold\x80");
	/* "Fro\0m" is no From */
	test_assert(root->fields[MPF_FROM] == NULL);
	test_assert_str(root->fields[MPF_TO], "<b@example.org>");
	test_assert_str(root->fields[MPF_MESSAGE_ID], "<id@example.org>");
	test_assert((root->flags & MESSAGE_PART_FLAG_IS_MIME) != 0);
	pool_unref(&pool);
}

TEST_MAIN(TEST(test_parser_multipart), TEST(test_parser_chunks),
	  TEST(test_parser_lf_sizes), TEST(test_parser_sections),
	  TEST(test_parser_limits), TEST(test_parser_malformed),
	  TEST(test_parser_header_callback), TEST(test_parser_root_header_done),
	  TEST(test_parser_nuls_and_names))
