/* Packing cached ENVELOPE/BODY/BODYSTRUCTURE texts (imap-cache-text.h). */
#include "lib.h"
#include "imap-cache-text.h"

#include <string.h>
#include <zlib.h>

#define TAG_PLAIN 'T'
/* 'Z' (the text's LEB128 length, then deflate) is what earlier builds
   wrote: still read, no longer written. 'Y' drops the length (1-3 bytes
   a text): inflate stops at the stream's end. */
#define TAG_DEFLATE_DICT1 'Z'
#define TAG_DEFLATE_DICT1_UNSIZED 'Y'
/* Bytes of a LEB128 length up to IMAP_CACHE_TEXT_MAX. */
#define LEN_BYTES_MAX 4
/* deflate: a 4 KiB window holds the dictionary and a normal text; a
   small hash keeps the process's zlib state near 40 KiB. */
#define PACK_LEVEL 9
#define PACK_WINDOW_BITS 12
#define PACK_MEM_LEVEL 6
/* Unpacking a 'Y' text reserves output in steps of this size: most
   texts fit in one. */
#define UNPACK_STEP 4096
/* inflate accepts every window deflate may use */
#define UNPACK_WINDOW_BITS 15

/* Dictionary 1: the IMAP syntax ENVELOPE and BODYSTRUCTURE texts are
   made of, the most frequent last (deflate finds near strings cheaper).
   The stored data depends on every byte: never edit it. */
static const char dict1[] =
	"(\"application\" \"octet-stream\" (\"name\" \"\") NIL NIL "
	"\"base64\" (\"attachment\" (\"filename\" \"\")) NIL NIL)"
	"(\"text\" \"html\" (\"charset\" \"iso-8859-1\") NIL NIL "
	"\"quoted-printable\" (\"inline\" NIL) NIL NIL) \"alternative\" "
	"(\"boundary\" \"\") NIL NIL NIL) \"mixed\" (\"boundary\" \"\") "
	"NIL NIL NIL)(\"text\" \"plain\" (\"charset\" \"utf-8\") NIL NIL "
	"\"8bit\" (\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL "
	"\"7bit\" NIL NIL NIL NIL \"Sun, \" \"Sat, \" \"Fri, \" \"Thu, \" "
	"\"Wed, \" \"Tue, \" \"Mon, \"  Jan 20  Feb 20  Mar 20  Apr 20  "
	"May 20  Jun 20  Jul 20  Aug 20  Sep 20  Oct 20  Nov 20  Dec 20 "
	"+0100\" +0200\" -0400\" -0500\" -0700\" -0800\" +0000\" \"Fwd: "
	"\"Re:  \"gmail.com\")) \"yahoo.com\")) \"outlook.com\")) "
	"\"hotmail.com\")) ((NIL NIL \"\" \"\")) NIL \"<@mail.gmail.com>\" "
	"\"<@gmail.com>\" \"<\" NIL NIL \"\")) ((NIL NIL \"\" \"\")) "
	"((\"\" NIL \"\" \"\")) ((\"\" NIL \"\" \"\")) ((\"\" NIL \"\" \"\")) ";

/* One deflate and one inflate state per process, reset per text. */
static z_stream pack_zs, unpack_zs;
static bool pack_ready, unpack_ready;

static voidpf zs_alloc(voidpf opaque ATTR_UNUSED, uInt items, uInt size)
{
	return i_malloc(i_mul_size(items, size));
}

static void zs_free(voidpf opaque ATTR_UNUSED, voidpf address)
{
	free(address);
}

static void zs_setup(z_stream *zs)
{
	memset(zs, 0, sizeof(*zs));
	zs->zalloc = zs_alloc;
	zs->zfree = zs_free;
}

static int pack_begin(void)
{
	if (!pack_ready) {
		zs_setup(&pack_zs);
		if (deflateInit2(&pack_zs, PACK_LEVEL, Z_DEFLATED,
				 -PACK_WINDOW_BITS, PACK_MEM_LEVEL,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			return -1;
		pack_ready = true;
	} else if (deflateReset(&pack_zs) != Z_OK) {
		return -1;
	}
	return deflateSetDictionary(&pack_zs, (const Bytef *)dict1,
				    sizeof(dict1) - 1) == Z_OK ? 0 : -1;
}

static int unpack_begin(void)
{
	if (!unpack_ready) {
		zs_setup(&unpack_zs);
		if (inflateInit2(&unpack_zs, -UNPACK_WINDOW_BITS) != Z_OK)
			return -1;
		unpack_ready = true;
	} else if (inflateReset(&unpack_zs) != Z_OK) {
		return -1;
	}
	/* a raw stream takes its dictionary before the first inflate() */
	return inflateSetDictionary(&unpack_zs, (const Bytef *)dict1,
				    sizeof(dict1) - 1) == Z_OK ? 0 : -1;
}

/* Returns the bytes used, 0 if garbled or past IMAP_CACHE_TEXT_MAX. */
static size_t len_decode(const unsigned char *p, size_t size, size_t *len_r)
{
	size_t len = 0;

	for (size_t i = 0; i < size && i < LEN_BYTES_MAX; i++) {
		len |= (size_t)(p[i] & 0x7f) << (7 * i);
		if ((p[i] & 0x80) == 0) {
			if (len > IMAP_CACHE_TEXT_MAX)
				return 0;
			*len_r = len;
			return i + 1;
		}
	}
	return 0;
}

static int pack_plain(const void *text, size_t len, buffer_t *out)
{
	buffer_reset(out);
	if (buffer_append_c(out, TAG_PLAIN) < 0 ||
	    buffer_append(out, text, len) < 0)
		return -1;
	return 0;
}

int imap_cache_text_pack(const void *text, size_t len, buffer_t *out)
{
	const unsigned char head[1] = { TAG_DEFLATE_DICT1_UNSIZED };
	size_t head_len = sizeof(head), bound;
	char *dest;

	if (len > IMAP_CACHE_TEXT_MAX)
		return -1;
	if (len < IMAP_CACHE_TEXT_MIN_PACK || pack_begin() < 0)
		return pack_plain(text, len, out);
	bound = deflateBound(&pack_zs, (uLong)len);
	buffer_reset(out);
	if (buffer_append(out, head, head_len) < 0 ||
	    (dest = buffer_reserve(out, bound)) == NULL)
		return pack_plain(text, len, out);
	pack_zs.next_in = (Bytef *)(uintptr_t)text;
	pack_zs.avail_in = (uInt)len;
	pack_zs.next_out = (Bytef *)dest;
	pack_zs.avail_out = (uInt)bound;
	/* bound is enough for a single Z_FINISH call */
	if (deflate(&pack_zs, Z_FINISH) != Z_STREAM_END)
		return pack_plain(text, len, out);
	size_t packed = bound - pack_zs.avail_out;
	if (head_len + packed >= 1 + len)
		return pack_plain(text, len, out);
	buffer_commit(out, packed);
	return 0;
}

static int unpack_deflate(const unsigned char *p, size_t size, buffer_t *out)
{
	size_t len, used, old_used = out->used;
	char *dest;

	if ((used = len_decode(p, size, &len)) == 0 || unpack_begin() < 0)
		return -1;
	if ((dest = buffer_reserve(out, len)) == NULL)
		return -1;
	unpack_zs.next_in = (Bytef *)(uintptr_t)(p + used);
	unpack_zs.avail_in = (uInt)(size - used);
	unpack_zs.next_out = (Bytef *)dest;
	unpack_zs.avail_out = (uInt)len;
	int ret = inflate(&unpack_zs, Z_FINISH);
	/* exactly len bytes, exactly all of the input */
	if (ret != Z_STREAM_END || unpack_zs.avail_out != 0 ||
	    unpack_zs.avail_in != 0) {
		buffer_truncate(out, old_used);
		return -1;
	}
	buffer_commit(out, len);
	return 0;
}

/* A 'Y' text: inflate until the stream ends, at most
   IMAP_CACHE_TEXT_MAX bytes and what out can hold. */
static int unpack_deflate_unsized(const unsigned char *p, size_t size,
				  buffer_t *out)
{
	size_t old_used = out->used;
	int ret = Z_OK;

	if (unpack_begin() < 0)
		return -1;
	unpack_zs.next_in = (Bytef *)(uintptr_t)p;
	unpack_zs.avail_in = (uInt)size;
	while (ret == Z_OK) {
		size_t produced = out->used - old_used;
		/* one byte past the maximum shows a text that is too long */
		size_t step = MIN(UNPACK_STEP, IMAP_CACHE_TEXT_MAX + 1 - produced);
		step = MIN(step, out->max_size - out->used);
		char *dest;
		if (produced > IMAP_CACHE_TEXT_MAX || step == 0 ||
		    (dest = buffer_reserve(out, step)) == NULL)
			break;
		unpack_zs.next_out = (Bytef *)dest;
		unpack_zs.avail_out = (uInt)step;
		ret = inflate(&unpack_zs, Z_NO_FLUSH);
		buffer_commit(out, step - unpack_zs.avail_out);
	}
	/* the whole input is one stream, of at most the maximum */
	if (ret == Z_STREAM_END && unpack_zs.avail_in == 0 &&
	    out->used - old_used <= IMAP_CACHE_TEXT_MAX)
		return 0;
	buffer_truncate(out, old_used);
	return -1;
}

bool imap_cache_text_is_packed(const void *data, size_t size)
{
	const unsigned char *p = data;

	return size > 0 && p[0] != TAG_PLAIN;
}

int imap_cache_text_unpack(const void *data, size_t size, buffer_t *out)
{
	const unsigned char *p = data;

	if (size == 0 || size - 1 > IMAP_CACHE_TEXT_MAX)
		return -1;
	switch (p[0]) {
	case TAG_PLAIN:
		return buffer_append(out, p + 1, size - 1);
	case TAG_DEFLATE_DICT1:
		return unpack_deflate(p + 1, size - 1, out);
	case TAG_DEFLATE_DICT1_UNSIZED:
		return unpack_deflate_unsized(p + 1, size - 1, out);
	}
	return -1;
}
