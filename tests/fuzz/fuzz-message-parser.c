/* libFuzzer target for the MIME parser and the IMAP structure writers.
   The first input byte picks the feed chunk size so the fuzzer also tries
   CR/LF and boundaries split across chunks. Build (from the top dir):

   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 \
     -Ibuild/test -Ilib -Imime tests/fuzz/fuzz-message-parser.c \
     mime/message-*.c mime/rfc2047.c mime/rfc2231.c mime/imap-*.c \
     lib/lib.c lib/mempool.c lib/buffer.c lib/strfuncs.c lib/log.c \
     -o fuzz-message-parser
   ./fuzz-message-parser -max_total_time=60 -max_len=65536 */
#include "lib.h"
#include "buffer.h"
#include "imap-bodystructure.h"
#include "imap-envelope.h"
#include "message-date.h"
#include "message-parser.h"
#include "rfc2047.h"

/* Small limits so deep nesting and many parts are reached quickly. */
static const struct message_parser_settings fuzz_set = {
	.max_depth = 20,
	.max_parts = 500,
	.max_field_size = 4096,
};

static void fuzz_sections(struct message_part *root)
{
	static const char *const sections[] = {
		"", "1", "2", "1.1", "1.2", "2.1", "1.1.1", "3.2.1"
	};
	struct message_section_range r;

	for (unsigned int i = 0; i < N_ELEMENTS(sections); i++) {
		struct message_part *p = message_part_find_section(root,
								   sections[i]);
		if (p == NULL)
			continue;
		for (int k = MESSAGE_SECTION_FULL; k <= MESSAGE_SECTION_MIME; k++) {
			(void)message_part_get_range(p, k, &r);
			(void)message_section_get_range(root, sections[i], k,
							&r);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pool_t pool;
	struct message_parser *parser;
	struct message_part *root;
	buffer_t out;
	size_t chunk;

	if (size == 0)
		return 0;
	chunk = (size_t)data[0] + 1;
	data++;
	size--;
	pool = pool_create("fuzz", 4096);
	parser = message_parser_init(pool, &fuzz_set);
	for (size_t i = 0; i < size; i += chunk)
		message_parser_feed(parser, data + i, MIN(chunk, size - i));
	root = message_parser_finish(&parser);
	i_assert(root->header_size.physical + root->body_size.physical == size);

	buffer_init(&out, IMAP_ENVELOPE_OUTPUT_MAX);
	imap_envelope_write(pool, root, &out);
	buffer_reset(&out);
	imap_bodystructure_write(pool, root, &out, true);
	buffer_free(&out);
	fuzz_sections(root);
	if (root->fields[MPF_SUBJECT] != NULL) {
		const char *s = root->fields[MPF_SUBJECT];
		(void)rfc2047_decode(pool, s, strlen(s));
	}
	if (root->fields[MPF_DATE] != NULL) {
		time_t t;
		int tz;
		const char *s = root->fields[MPF_DATE];
		(void)message_date_parse(s, strlen(s), &t, &tz);
	}
	pool_unref(&pool);
	return 0;
}
