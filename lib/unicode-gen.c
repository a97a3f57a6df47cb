/* unicode-gen: writes the tables of lib/unicode-casemap.c (RFC 5051
   i;unicode-casemap) from the Unicode Character Database's
   UnicodeData.txt, at build time (lib/local.mk).

     unicode-gen /usr/share/unicode/UnicodeData.txt > unicode-casemap-data.h

   For every code point c the table holds decompose(title(c)): the simple
   titlecase mapping (field 14) if c has one, then the decomposition
   (field 5, of any type: the "<tag>" is dropped) applied again to each
   resulting code point until none decomposes (NFKD without reordering,
   RFC 5051 section 2 step 2). Hangul syllables (algorithmic, no field 5)
   are left to unicode-casemap.c. Only code points whose result is not
   themselves are stored, as UTF-8.

   A build tool, standalone on purpose: libmoat needs its output, so it
   cannot link libmoat. It fails (exit 1, a message on stderr) on input
   it does not understand rather than writing a partial table. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CP_LIMIT 0x110000
/* Longest UnicodeData.txt line accepted (the longest is ~200 bytes). */
#define LINE_MAX_LEN 1024
/* Code points in one field 5 (the longest has 18: U+FDFA). */
#define DECOMP_MAX 18
/* Code points in a result after recursion. */
#define RESULT_MAX 32
/* Decompositions nest at most this deep (4 in Unicode 15). */
#define DEPTH_MAX 8
/* Code points per second-level block: 1 << BLOCK_SHIFT. */
#define BLOCK_SHIFT 7
#define BLOCK_SIZE (1u << BLOCK_SHIFT)
/* Distinct blocks and distinct results the index types can address. */
#define BLOCKS_MAX 256
#define ENTRIES_MAX 65535
/* UTF-8 bytes of all distinct results (offsets are 24 bits). */
#define POOL_MAX (1u << 20)

#define HANGUL_FIRST 0xac00
#define HANGUL_LAST 0xd7a3

/* Parsed UnicodeData.txt: static, so nothing needs freeing. */
static uint32_t title_of[CP_LIMIT];          /* 0: none */
static uint32_t decomp_off[CP_LIMIT];        /* into decomp_pool */
static uint8_t decomp_len[CP_LIMIT];         /* 0: none */
static uint32_t decomp_pool[CP_LIMIT];
static uint32_t decomp_used;

/* The tables being built. */
static uint16_t cp_entry[CP_LIMIT];          /* 0: maps to itself */
static uint32_t entry_val[ENTRIES_MAX + 1];  /* pool offset << 8 | length */
static unsigned int entry_count = 1;
static unsigned char pool[POOL_MAX];
static uint32_t pool_used;
static uint16_t blocks[BLOCKS_MAX][BLOCK_SIZE];
static unsigned int block_count = 1;         /* block 0: all identity */
static uint8_t stage1[CP_LIMIT / BLOCK_SIZE];

static void die(const char *msg, unsigned long line)
{
	if (line > 0)
		fprintf(stderr, "unicode-gen: line %lu: %s\n", line, msg);
	else
		fprintf(stderr, "unicode-gen: %s\n", msg);
	exit(1);
}

static int parse_hex(const char *s, const char **end_r, uint32_t *cp_r)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 16);
	if (end == s || errno != 0 || v >= CP_LIMIT)
		return -1;
	*end_r = end;
	*cp_r = (uint32_t)v;
	return 0;
}

/* Field 5: "[<tag> ]XXXX XXXX ...". */
static void parse_decomp(uint32_t cp, const char *s, unsigned long line)
{
	unsigned int n = 0;

	if (*s == '<') {
		s = strchr(s, '>');
		if (s == NULL)
			die("unterminated decomposition tag", line);
		s++;
	}
	decomp_off[cp] = decomp_used;
	while (*s == ' ')
		s++;
	while (*s != '\0') {
		uint32_t d;
		if (n == DECOMP_MAX || decomp_used == CP_LIMIT ||
		    parse_hex(s, &s, &d) < 0)
			die("bad decomposition", line);
		decomp_pool[decomp_used++] = d;
		n++;
		while (*s == ' ')
			s++;
	}
	if (n == 0)
		die("empty decomposition", line);
	decomp_len[cp] = (uint8_t)n;
}

/* Splits line at ';' into the 15 fields (in place). */
static void split_fields(char *line, char *fields[15], unsigned long lineno)
{
	unsigned int n = 0;

	fields[n++] = line;
	for (char *p = line; *p != '\0'; p++) {
		if (*p != ';')
			continue;
		if (n == 15)
			die("more than 15 fields", lineno);
		*p = '\0';
		fields[n++] = p + 1;
	}
	if (n != 15)
		die("fewer than 15 fields", lineno);
}

static void read_data(FILE *f)
{
	char line[LINE_MAX_LEN];
	unsigned long lineno = 0;
	unsigned int count = 0;

	while (fgets(line, sizeof(line), f) != NULL) {
		char *fields[15];
		const char *end;
		uint32_t cp, t;
		size_t len = strlen(line);

		lineno++;
		if (len == 0 || line[len - 1] != '\n')
			die("line too long or not terminated", lineno);
		line[--len] = '\0';
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		if (len == 0)
			continue;
		split_fields(line, fields, lineno);
		if (parse_hex(fields[0], &end, &cp) < 0 || *end != '\0')
			die("bad code point", lineno);
		if (fields[5][0] != '\0')
			parse_decomp(cp, fields[5], lineno);
		if (fields[14][0] != '\0') {
			if (parse_hex(fields[14], &end, &t) < 0 || *end != '\0')
				die("bad titlecase mapping", lineno);
			title_of[cp] = t;
		}
		count++;
	}
	if (ferror(f))
		die("read error", 0);
	/* a truncated file would give a table that folds too little */
	if (count < 30000 || decomp_len[0x00c5] == 0 || title_of['a'] != 'A')
		die("input does not look like UnicodeData.txt", 0);
}

/* Append the full decomposition of cp to out (count *n). */
static void decompose(uint32_t cp, uint32_t *out, unsigned int *n,
		      unsigned int depth)
{
	if (depth > DEPTH_MAX)
		die("decompositions nest too deeply", 0);
	if (decomp_len[cp] == 0) {
		if (*n == RESULT_MAX)
			die("a decomposition is too long", 0);
		out[(*n)++] = cp;
		return;
	}
	for (unsigned int i = 0; i < decomp_len[cp]; i++)
		decompose(decomp_pool[decomp_off[cp] + i], out, n, depth + 1);
}

static size_t utf8_put(uint32_t cp, unsigned char *out)
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xc0 | (cp >> 6));
		out[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xe0 | (cp >> 12));
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (unsigned char)(0xf0 | (cp >> 18));
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The entry holding these UTF-8 bytes, added if new (a linear search:
   a few thousand entries, once per build). */
static uint16_t entry_get(const unsigned char *bytes, size_t len)
{
	for (unsigned int i = 1; i < entry_count; i++) {
		uint32_t v = entry_val[i];
		if ((v & 0xff) == len && memcmp(pool + (v >> 8), bytes, len) == 0)
			return (uint16_t)i;
	}
	if (entry_count > ENTRIES_MAX || len > 0xff ||
	    pool_used + len > POOL_MAX)
		die("tables overflow their index types", 0);
	memcpy(pool + pool_used, bytes, len);
	entry_val[entry_count] = (pool_used << 8) | (uint32_t)len;
	pool_used += (uint32_t)len;
	return (uint16_t)entry_count++;
}

struct stats {
	uint32_t limit;          /* first code point of the identity tail */
	size_t char_max;         /* longest result in bytes */
	unsigned int growth;     /* max result bytes per input byte, rounded up */
};

static void build_entries(struct stats *st)
{
	unsigned char buf[RESULT_MAX * 4], in[4];

	for (uint32_t cp = 0; cp < CP_LIMIT; cp++) {
		uint32_t result[RESULT_MAX];
		unsigned int n = 0;
		uint32_t t = title_of[cp] != 0 ? title_of[cp] : cp;

		if ((cp >= HANGUL_FIRST && cp <= HANGUL_LAST) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			continue;
		decompose(t, result, &n, 0);
		if (n == 1 && result[0] == cp)
			continue;
		size_t len = 0;
		for (unsigned int i = 0; i < n; i++)
			len += utf8_put(result[i], buf + len);
		cp_entry[cp] = entry_get(buf, len);
		size_t in_len = utf8_put(cp, in);
		unsigned int growth = (unsigned int)((len + in_len - 1) / in_len);
		if (len > st->char_max)
			st->char_max = len;
		if (growth > st->growth)
			st->growth = growth;
		st->limit = cp + 1;
	}
}

static void build_blocks(struct stats *st)
{
	st->limit = (st->limit + BLOCK_SIZE - 1) & ~(BLOCK_SIZE - 1);
	for (uint32_t b = 0; b < st->limit / BLOCK_SIZE; b++) {
		const uint16_t *src = cp_entry + b * BLOCK_SIZE;
		unsigned int i;
		for (i = 0; i < block_count; i++) {
			if (memcmp(blocks[i], src, sizeof(blocks[i])) == 0)
				break;
		}
		if (i == block_count) {
			if (block_count == BLOCKS_MAX)
				die("too many distinct blocks", 0);
			memcpy(blocks[block_count++], src, sizeof(blocks[0]));
		}
		stage1[b] = (uint8_t)i;
	}
}

/* FNV-1a 32 over the tables: a fingerprint of the folding, stored with
   cached sort keys so that keys folded by other tables are recomputed. */
static uint32_t fnv(uint32_t h, const void *data, size_t size)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < size; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static uint32_t tables_id(const struct stats *st)
{
	uint32_t h = 2166136261u;

	h = fnv(h, stage1, st->limit / BLOCK_SIZE);
	h = fnv(h, blocks, sizeof(blocks[0]) * block_count);
	h = fnv(h, entry_val, sizeof(entry_val[0]) * entry_count);
	return fnv(h, pool, pool_used);
}

/* One value of an array being printed, 16 to a line. */
static void print_value(size_t i, uint32_t v)
{
	printf("%s%s%u", i == 0 ? "" : ",", i % 16 == 0 ? "\n\t" : " ", v);
}

static void write_tables(const struct stats *st)
{
	printf("/* Generated by lib/unicode-gen from UnicodeData.txt: do not "
	       "edit. */\n");
	printf("#define UNICODE_CASEMAP_DATA_LIMIT 0x%xu\n", st->limit);
	printf("#define UNICODE_CASEMAP_DATA_SHIFT %u\n", BLOCK_SHIFT);
	printf("#define UNICODE_CASEMAP_DATA_CHAR_MAX %zu\n", st->char_max);
	printf("#define UNICODE_CASEMAP_DATA_GROWTH_MAX %u\n", st->growth);
	printf("#define UNICODE_CASEMAP_DATA_ID 0x%08xu\n\n", tables_id(st));
	printf("static const uint8_t casemap_stage1[] = {");
	for (size_t i = 0; i < st->limit / BLOCK_SIZE; i++)
		print_value(i, stage1[i]);
	printf("\n};\nstatic const uint16_t casemap_blocks[][%u] = {\n",
	       BLOCK_SIZE);
	for (unsigned int b = 0; b < block_count; b++) {
		printf("{");
		for (unsigned int i = 0; i < BLOCK_SIZE; i++)
			print_value(i, blocks[b][i]);
		printf("\n},\n");
	}
	printf("};\nstatic const uint32_t casemap_entries[] = {");
	for (size_t i = 0; i < entry_count; i++)
		print_value(i, entry_val[i]);
	printf("\n};\nstatic const unsigned char casemap_pool[] = {");
	for (size_t i = 0; i < pool_used; i++)
		print_value(i, pool[i]);
	printf("\n};\n");
}

int main(int argc, char **argv)
{
	struct stats st = { 0, 0, 1 };
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: unicode-gen UnicodeData.txt\n");
		return 2;
	}
	if ((f = fopen(argv[1], "r")) == NULL) {
		fprintf(stderr, "unicode-gen: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	read_data(f);
	fclose(f);
	build_entries(&st);
	build_blocks(&st);
	write_tables(&st);
	if (fflush(stdout) != 0 || ferror(stdout))
		die("write error", 0);
	return 0;
}
