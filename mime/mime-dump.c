/* mime-dump: print what moat's MIME parser makes of a message file:
   ENVELOPE, BODY, BODYSTRUCTURE, RFC822.SIZE and the section map.

   mime-dump [-l] FILE
     -l  machine format for tests/compare: records "NAME LEN\n<bytes>\n"
         for ENVELOPE, BODY, BODYSTRUCTURE and RFC822.SIZE only.

   The file is read in small chunks and fed to the streaming parser, as
   the server does; nothing needs the whole message in memory. */
#include "lib.h"
#include "buffer.h"
#include "log.h"
#include "imap-bodystructure.h"
#include "imap-envelope.h"
#include "message-parser.h"

#include <fcntl.h>

#define DUMP_READ_SIZE 4096

static struct message_part *parse_file(pool_t pool, const char *path)
{
	struct message_parser *parser = message_parser_init(pool, NULL);
	char buf[DUMP_READ_SIZE];
	ssize_t ret;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		i_fatal("open(%s) failed: %s", path, strerror(errno));
	while ((ret = read(fd, buf, sizeof(buf))) > 0)
		message_parser_feed(parser, buf, (size_t)ret);
	if (ret < 0)
		i_fatal("read(%s) failed: %s", path, strerror(errno));
	i_close_fd(&fd);
	return message_parser_finish(&parser);
}

static void print_item(bool machine, const char *name, const char *data,
		       size_t size)
{
	if (machine)
		printf("%s %zu\n", name, size);
	else
		printf("%s ", name);
	fwrite(data, 1, size, stdout);
	printf("\n");
}

static void print_range(struct message_part *root, const char *section,
			const char *kind, enum message_section_kind k)
{
	struct message_section_range r;

	if (message_section_get_range(root, section, k, &r) < 0)
		return;
	printf("SECTION %s%s%s offset %llu size %llu imap-size %llu\n",
	       section, *section != '\0' && *kind != '\0' ? "." : "", kind,
	       (unsigned long long)r.physical_pos,
	       (unsigned long long)r.physical_size,
	       (unsigned long long)r.virtual_size);
}

static void print_part(struct message_part *root,
		       const struct message_part *part, const char *section);

/* The numbered parts of container (a message or a multipart): its
   children, or for a message that is not multipart the message itself
   as part 1 (RFC 3501 6.4.5). */
static void print_numbered(struct message_part *root,
			   const struct message_part *container,
			   const char *prefix)
{
	char section[1024];
	unsigned int n = 1;

	if ((container->flags & MESSAGE_PART_FLAG_MULTIPART) == 0) {
		snprintf(section, sizeof(section), "%s%s1", prefix,
			 *prefix != '\0' ? "." : "");
		print_part(root, container, section);
		return;
	}
	for (const struct message_part *c = container->children; c != NULL;
	     c = c->next, n++) {
		snprintf(section, sizeof(section), "%s%s%u", prefix,
			 *prefix != '\0' ? "." : "", n);
		print_part(root, c, section);
	}
}

static void print_part(struct message_part *root,
		       const struct message_part *part, const char *section)
{
	print_range(root, section, "", MESSAGE_SECTION_ALL);
	print_range(root, section, "MIME", MESSAGE_SECTION_MIME);
	if ((part->flags & MESSAGE_PART_FLAG_MESSAGE_RFC822) != 0 &&
	    part->children != NULL) {
		print_range(root, section, "HEADER", MESSAGE_SECTION_HEADER);
		print_range(root, section, "TEXT", MESSAGE_SECTION_TEXT);
		print_numbered(root, part->children, section);
	} else if ((part->flags & MESSAGE_PART_FLAG_MULTIPART) != 0) {
		print_numbered(root, part, section);
	}
}

int main(int argc, char *argv[])
{
	bool machine = false;
	pool_t pool;
	struct message_part *root;
	buffer_t out;
	char size[32];

	if (argc == 3 && strcmp(argv[1], "-l") == 0) {
		machine = true;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: mime-dump [-l] FILE\n");
		return 2;
	}
	pool = pool_create("mime-dump", 16 * 1024);
	root = parse_file(pool, argv[1]);
	buffer_init(&out, IMAP_ENVELOPE_OUTPUT_MAX);

	imap_envelope_write(pool, root, &out);
	print_item(machine, "ENVELOPE", out.data, out.used);
	buffer_reset(&out);
	imap_bodystructure_write(pool, root, &out, false);
	print_item(machine, "BODY", out.data, out.used);
	buffer_reset(&out);
	imap_bodystructure_write(pool, root, &out, true);
	print_item(machine, "BODYSTRUCTURE", out.data, out.used);
	snprintf(size, sizeof(size), "%llu", (unsigned long long)
		 (root->header_size.virtual + root->body_size.virtual));
	print_item(machine, "RFC822.SIZE", size, strlen(size));
	if (!machine) {
		print_range(root, "", "HEADER", MESSAGE_SECTION_HEADER);
		print_range(root, "", "TEXT", MESSAGE_SECTION_TEXT);
		print_numbered(root, root, "");
	}
	buffer_free(&out);
	pool_unref(&pool);
	return 0;
}
