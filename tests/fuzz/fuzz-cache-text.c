/* libFuzzer target for imap/imap-cache-text.c, the stored form of the
   cached ENVELOPE/BODY/BODYSTRUCTURE texts. The first byte picks:
     even: the rest is stored data read from a cache file (any tag, any
           garbage): unpacking succeeds with at most IMAP_CACHE_TEXT_MAX
           bytes into a bounded buffer, or fails leaving it unchanged;
     odd:  the rest is a text: pack then unpack gives it back exactly.
   Built and run by tests/fuzz/run.sh. */
#include "lib.h"
#include "buffer.h"
#include "imap-cache-text.h"

#include <string.h>

/* What the unpacked text may be appended to: FETCH's bound. */
#define FUZZ_OUT_MAX (IMAP_CACHE_TEXT_MAX + 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	buffer_t out, packed;

	if (size == 0)
		return 0;
	buffer_init(&out, FUZZ_OUT_MAX);
	if (buffer_append_str(&out, "prefix") < 0)
		abort();
	if ((data[0] & 1) == 0) {
		int ret = imap_cache_text_unpack(data + 1, size - 1, &out);
		if (ret == 0 && out.used - 6 > IMAP_CACHE_TEXT_MAX)
			abort();
		if (ret < 0 && out.used != 6)
			abort();
		if (memcmp(out.data, "prefix", 6) != 0)
			abort();
	} else {
		buffer_init(&packed, FUZZ_OUT_MAX);
		if (imap_cache_text_pack(data + 1, size - 1, &packed) < 0 ||
		    imap_cache_text_unpack(packed.data, packed.used, &out) < 0 ||
		    out.used != 6 + size - 1 ||
		    memcmp(out.data + 6, data + 1, size - 1) != 0)
			abort();
		buffer_free(&packed);
	}
	buffer_free(&out);
	return 0;
}
