/* i;unicode-casemap, RFC 5051 (unicode-casemap.h). The tables come from
   lib/unicode-gen (build time): casemap_stage1 maps a code point's block
   (cp >> UNICODE_CASEMAP_DATA_SHIFT) to a row of casemap_blocks, whose
   entry for the code point indexes casemap_entries (0: the code point
   maps to itself); an entry is the offset << 8 | length of its folded
   UTF-8 in casemap_pool. Hangul syllables are decomposed arithmetically
   (Unicode 15 section 3.12), as UnicodeData.txt lists no decompositions
   for them. */
#include "lib.h"
#include "unicode-casemap.h"
#include "lib/unicode-casemap-data.h"

/* Changes when the folding changes without the tables changing (Hangul,
   invalid bytes), so that unicode_casemap_id() changes too. */
#define CASEMAP_ALGORITHM_REVISION 1u

#define HANGUL_S_BASE 0xac00u
#define HANGUL_L_BASE 0x1100u
#define HANGUL_V_BASE 0x1161u
#define HANGUL_T_BASE 0x11a7u
#define HANGUL_T_COUNT 28u
#define HANGUL_N_COUNT (21u * HANGUL_T_COUNT)
#define HANGUL_S_COUNT (19u * HANGUL_N_COUNT)
/* L V [T], three bytes each: from three input bytes */
#define HANGUL_OUT_MAX 9

_Static_assert(UNICODE_CASEMAP_DATA_CHAR_MAX <= UNICODE_CASEMAP_CHAR_MAX &&
	       HANGUL_OUT_MAX <= UNICODE_CASEMAP_CHAR_MAX,
	       "UNICODE_CASEMAP_CHAR_MAX is too small for the tables");
_Static_assert(UNICODE_CASEMAP_DATA_GROWTH_MAX <= UNICODE_CASEMAP_GROWTH_MAX &&
	       HANGUL_OUT_MAX / 3 <= UNICODE_CASEMAP_GROWTH_MAX,
	       "UNICODE_CASEMAP_GROWTH_MAX is too small for the tables");

/* Decode the character at p (p[0] >= 0x80, left >= 1 bytes). Returns
   its length, or 0 if the bytes are not a valid UTF-8 character (RFC
   3629 section 4: the second byte's range rules out overlong forms,
   surrogates and values above U+10FFFF). */
static size_t utf8_decode(const unsigned char *p, size_t left, uint32_t *cp_r)
{
	unsigned char b = p[0], lo = 0x80, hi = 0xbf;
	size_t len;
	uint32_t cp;

	if (b >= 0xc2 && b <= 0xdf) {
		len = 2;
		cp = b & 0x1f;
	} else if (b >= 0xe0 && b <= 0xef) {
		len = 3;
		cp = b & 0x0f;
		lo = b == 0xe0 ? 0xa0 : 0x80;
		hi = b == 0xed ? 0x9f : 0xbf;
	} else if (b >= 0xf0 && b <= 0xf4) {
		len = 4;
		cp = b & 0x07;
		lo = b == 0xf0 ? 0x90 : 0x80;
		hi = b == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 0;
	}
	if (left < len || p[1] < lo || p[1] > hi)
		return 0;
	cp = (cp << 6) | (p[1] & 0x3f);
	for (size_t i = 2; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	*cp_r = cp;
	return len;
}

static size_t utf8_put3(uint32_t cp, unsigned char *out)
{
	out[0] = (unsigned char)(0xe0 | (cp >> 12));
	out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	out[2] = (unsigned char)(0x80 | (cp & 0x3f));
	return 3;
}

/* A Hangul syllable's jamo (all in U+1100..U+11FF: 3 bytes each), or 0
   if they do not fit in room. */
static size_t hangul_fold(uint32_t cp, unsigned char *out, size_t room)
{
	uint32_t s = cp - HANGUL_S_BASE, t = s % HANGUL_T_COUNT;
	size_t len = t == 0 ? 6 : 9;

	if (len > room)
		return 0;
	utf8_put3(HANGUL_L_BASE + s / HANGUL_N_COUNT, out);
	utf8_put3(HANGUL_V_BASE + (s % HANGUL_N_COUNT) / HANGUL_T_COUNT, out + 3);
	if (t != 0)
		utf8_put3(HANGUL_T_BASE + t, out + 6);
	return len;
}

/* Fold the valid character cp (src_len bytes at src) into out. Returns
   the bytes written, 0 if they do not fit in room. */
static size_t fold_char(uint32_t cp, const unsigned char *src, size_t src_len,
			unsigned char *out, size_t room)
{
	const unsigned char *bytes = src;
	size_t len = src_len;

	if (cp - HANGUL_S_BASE < HANGUL_S_COUNT)
		return hangul_fold(cp, out, room);
	if (cp < UNICODE_CASEMAP_DATA_LIMIT) {
		uint8_t block = casemap_stage1[cp >> UNICODE_CASEMAP_DATA_SHIFT];
		uint16_t entry = casemap_blocks[block][cp & ((1u <<
				UNICODE_CASEMAP_DATA_SHIFT) - 1)];
		if (entry != 0) {
			bytes = casemap_pool + (casemap_entries[entry] >> 8);
			len = casemap_entries[entry] & 0xff;
		}
	}
	if (len > room)
		return 0;
	memcpy(out, bytes, len);
	return len;
}

#define BYTES8(b) ((uint64_t)(b) * 0x0101010101010101ULL)

/* The hot path: a run of ASCII (only a-z change), as far as out has
   room. Returns its length. Eight bytes at a time while they are all
   ASCII: adding 0x80 - 'a' to a byte below 0x80 sets its high bit iff
   it is >= 'a' (no carry into the next byte), adding 0x80 - 'z' - 1 iff
   it is > 'z'; the bytes in between get 0x20 cleared. */
static size_t ascii_run(const unsigned char *p, size_t size, unsigned char *o)
{
	size_t k = 0;

	for (; k + 8 <= size; k += 8) {
		uint64_t w, letters;
		memcpy(&w, p + k, 8);
		if ((w & BYTES8(0x80)) != 0)
			break;
		letters = (w + BYTES8(0x80 - 'a')) & ~(w + BYTES8(0x80 - 'z' - 1)) &
			BYTES8(0x80);
		w ^= letters >> 2;
		memcpy(o + k, &w, 8);
	}
	for (; k < size && p[k] < 0x80; k++)
		o[k] = (unsigned char)(p[k] - ((unsigned int)(p[k] - 'a') < 26 ?
					       32 : 0));
	return k;
}

size_t unicode_casemap(const void *in, size_t in_size, size_t *in_used_r,
		       void *out, size_t out_size)
{
	const unsigned char *p = in;
	unsigned char *o = out;
	size_t i = 0, j = 0;

	while (i < in_size) {
		uint32_t cp;
		size_t n, w;

		if (p[i] < 0x80) {
			n = ascii_run(p + i, MIN(in_size - i, out_size - j), o + j);
			if (n == 0)
				break;   /* out is full */
			i += n;
			j += n;
			continue;
		}
		if ((n = utf8_decode(p + i, in_size - i, &cp)) == 0) {
			/* not valid UTF-8: the byte as it is */
			if (j == out_size)
				break;
			o[j++] = p[i++];
			continue;
		}
		if ((w = fold_char(cp, p + i, n, o + j, out_size - j)) == 0)
			break;
		i += n;
		j += w;
	}
	*in_used_r = i;
	return j;
}

int unicode_casemap_append(buffer_t *buf, const void *data, size_t size)
{
	const unsigned char *p = data;

	while (size > 0) {
		/* usually enough for all of it in one step */
		size_t want = MIN(buf->max_size - buf->used,
				  size + UNICODE_CASEMAP_CHAR_MAX);
		char *dest = want == 0 ? NULL : buffer_reserve(buf, want);
		size_t used;

		if (dest == NULL)
			return -1;
		buffer_commit(buf, unicode_casemap(p, size, &used, dest, want));
		if (used == 0)
			return -1;   /* the next character does not fit */
		p += used;
		size -= used;
	}
	return 0;
}

size_t unicode_utf8_partial_tail(const void *data, size_t size)
{
	const unsigned char *p = data;

	/* look back at most 3 bytes for a lead byte whose sequence does
	   not fit in what is left */
	for (size_t back = 1; back <= 3 && back <= size; back++) {
		unsigned char b = p[size - back];
		if ((b & 0xc0) == 0x80)
			continue;
		size_t need = (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 :
			(b & 0xf8) == 0xf0 ? 4 : 1;
		return need > back ? back : 0;
	}
	return 0;
}

uint32_t unicode_casemap_id(void)
{
	uint32_t id = UNICODE_CASEMAP_DATA_ID ^
		(CASEMAP_ALGORITHM_REVISION * 0x9e3779b9u);

	return id == 0 ? 1 : id;
}
