/* A bounded memo of unpacked cache texts (imap-text-memo.h). */
#include "lib.h"
#include "imap-text-memo.h"

#include <string.h>

/* An entry in the arena: this header, the stored bytes, the text, padded
   to ENTRY_ALIGN. Entries are written one after the other and wrap to
   the start when the next one does not fit before the end. */
struct memo_entry {
	uint32_t stored_size;
	uint32_t text_len;
};
#define ENTRY_ALIGN 8

/* The slots of a hash value: a bucket of SLOT_WAYS (a direct-mapped
   table made colliding texts push each other out at every FETCH: 18% of
   200 texts in 1,024 slots). pos is the entry's position in the stream
   of everything ever written, plus one (0: empty). */
struct memo_slot {
	uint64_t pos;
	uint64_t hash;
};
#define SLOT_WAYS 4
/* A slot for every this many bytes of arena: more than the entries it
   can hold (texts average some hundreds of bytes). */
#define BYTES_PER_SLOT 256
#define SLOTS_MIN 16

static struct {
	size_t size;            /* configured arena size; 0: off */
	unsigned char *arena;   /* allocated at the first put */
	struct memo_slot *slots;
	size_t slot_mask;
	/* where the next entry goes in the stream of everything written
	   (its offset in the arena is write_pos % size) */
	uint64_t write_pos;
} memo;

uint64_t imap_text_memo_hits;

void imap_text_memo_init(size_t arena_size)
{
	imap_text_memo_deinit();
	memo.size = arena_size - arena_size % ENTRY_ALIGN;
}

void imap_text_memo_deinit(void)
{
	i_free(memo.arena);
	i_free(memo.slots);
	memset(&memo, 0, sizeof(memo));
}

static uint64_t memo_hash(const unsigned char *p, size_t size)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ size, w;

	for (; size >= 8; p += 8, size -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p, size);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

static size_t entry_need(size_t stored_size, size_t text_len)
{
	size_t need = sizeof(struct memo_entry) + stored_size + text_len;

	return need + (ENTRY_ALIGN - need % ENTRY_ALIGN) % ENTRY_ALIGN;
}

static struct memo_slot *memo_bucket(uint64_t hash)
{
	return &memo.slots[(hash & memo.slot_mask) & ~(size_t)(SLOT_WAYS - 1)];
}

/* The entry a slot points to, if nothing written since has reached it. */
static const struct memo_entry *slot_entry(const struct memo_slot *slot)
{
	if (slot->pos == 0)
		return NULL;
	uint64_t pos = slot->pos - 1;
	/* the bytes at pos are next written at pos + size */
	if (memo.write_pos > pos + memo.size)
		return NULL;
	return (const void *)(memo.arena + pos % memo.size);
}

bool imap_text_memo_get(const void *stored, size_t stored_size,
			buffer_t *out)
{
	if (memo.arena == NULL)
		return false;
	uint64_t hash = memo_hash(stored, stored_size);
	const struct memo_slot *bucket = memo_bucket(hash);

	for (unsigned int i = 0; i < SLOT_WAYS; i++) {
		const struct memo_entry *e;
		if (bucket[i].hash != hash ||
		    (e = slot_entry(&bucket[i])) == NULL ||
		    e->stored_size != stored_size)
			continue;
		const unsigned char *p = (const unsigned char *)(e + 1);
		if (memcmp(p, stored, stored_size) != 0)
			continue;
		if (buffer_append(out, p + stored_size, e->text_len) < 0)
			return false;
		imap_text_memo_hits++;
		return true;
	}
	return false;
}

static void memo_alloc(void)
{
	size_t slots = SLOTS_MIN;

	while (slots < memo.size / BYTES_PER_SLOT)
		slots <<= 1;
	memo.arena = i_malloc(memo.size);
	memo.slots = i_malloc(i_mul_size(slots, sizeof(*memo.slots)));
	memo.slot_mask = slots - 1;
}

void imap_text_memo_put(const void *stored, size_t stored_size,
			const void *text, size_t text_len)
{
	if (memo.size == 0 || stored_size > memo.size ||
	    text_len > memo.size)
		return;
	size_t need = entry_need(stored_size, text_len);
	if (need > memo.size / 8)
		return;
	if (memo.arena == NULL)
		memo_alloc();

	size_t off = memo.write_pos % memo.size;
	if (off + need > memo.size) {
		/* wrap: what is left at the end stays unused this round */
		memo.write_pos += memo.size - off;
		off = 0;
	}
	struct memo_entry *e = (void *)(memo.arena + off);
	e->stored_size = (uint32_t)stored_size;
	e->text_len = (uint32_t)text_len;
	unsigned char *p = (unsigned char *)(e + 1);
	memcpy(p, stored, stored_size);
	memcpy(p + stored_size, text, text_len);

	/* the bucket's slot of the same hash (most likely the same
	   stored bytes), else an empty or overwritten one, else the oldest */
	uint64_t hash = memo_hash(stored, stored_size);
	struct memo_slot *bucket = memo_bucket(hash), *slot = &bucket[0];
	for (unsigned int i = 0; i < SLOT_WAYS; i++) {
		if (bucket[i].hash == hash || slot_entry(&bucket[i]) == NULL) {
			slot = &bucket[i];
			break;
		}
		if (bucket[i].pos < slot->pos)
			slot = &bucket[i];
	}
	slot->pos = memo.write_pos + 1;
	slot->hash = hash;
	memo.write_pos += need;
}
