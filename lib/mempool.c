/* Arena pools: blocks chained in a list, bump allocation inside a block. */
#include "lib.h"
#include "mempool.h"

/* Later blocks double up to this size; bigger requests get a block of
   their own. Keeps waste bounded for pools that grow a lot. */
#define POOL_MAX_BLOCK_SIZE (64 * 1024)
#define POOL_ALIGN 16

struct pool_block {
	struct pool_block *next;
	size_t size, used;
	/* data follows, aligned */
	unsigned char data[] __attribute__((aligned(POOL_ALIGN)));
};

struct pool {
	const char *name;
	struct pool_block *blocks;  /* newest first; the last is the first */
	size_t next_block_size;
	size_t first_block_size;
	size_t used_total;
};

static struct pool_block *pool_block_new(size_t size)
{
	struct pool_block *block =
		i_malloc(i_add_size(sizeof(*block), size));
	block->size = size;
	return block;
}

pool_t pool_create(const char *name, size_t block_size)
{
	pool_t pool = i_malloc(sizeof(*pool));
	if (block_size < 64)
		block_size = 64;
	pool->name = name;
	pool->first_block_size = block_size;
	pool->next_block_size = block_size;
	pool->blocks = pool_block_new(block_size);
	return pool;
}

static void pool_free_blocks(struct pool_block *block, struct pool_block *keep)
{
	while (block != NULL && block != keep) {
		struct pool_block *next = block->next;
		free(block);
		block = next;
	}
}

void pool_unref(pool_t *_pool)
{
	pool_t pool = *_pool;
	if (pool == NULL)
		return;
	*_pool = NULL;
	pool_free_blocks(pool->blocks, NULL);
	free(pool);
}

void pool_clear(pool_t pool)
{
	struct pool_block *first = pool->blocks;
	while (first->next != NULL)
		first = first->next;
	pool_free_blocks(pool->blocks, first);
	/* past used the block is still zero: only what was handed out is
	   cleared (a pool cleared per message often used none of it) */
	memset(first->data, 0, first->used);
	first->used = 0;
	pool->blocks = first;
	pool->next_block_size = pool->first_block_size;
	pool->used_total = 0;
}

void *p_malloc(pool_t pool, size_t size)
{
	size_t aligned = i_add_size(size, POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
	struct pool_block *block = pool->blocks;

	if (aligned == 0)
		aligned = POOL_ALIGN;
	if (block->size - block->used < aligned) {
		if (pool->next_block_size < POOL_MAX_BLOCK_SIZE)
			pool->next_block_size *= 2;
		size_t new_size = MAX(pool->next_block_size, aligned);
		block = pool_block_new(new_size);
		block->next = pool->blocks;
		pool->blocks = block;
	}
	void *mem = block->data + block->used;
	block->used += aligned;
	pool->used_total += aligned;
	return mem;   /* blocks are zero-filled and never reused unzeroed */
}

char *p_strdup(pool_t pool, const char *str)
{
	if (str == NULL)
		return NULL;
	return p_memdup(pool, str, strlen(str) + 1);
}

char *p_strndup(pool_t pool, const void *str, size_t max_len)
{
	/* (NULL, 0) is an empty string, as from an empty buffer. */
	size_t len = max_len == 0 ? 0 : strnlen(str, max_len);
	char *dup = p_malloc(pool, i_add_size(len, 1));
	if (len > 0)
		memcpy(dup, str, len);
	return dup;
}

void *p_memdup(pool_t pool, const void *data, size_t size)
{
	void *mem = p_malloc(pool, size);
	if (size > 0)
		memcpy(mem, data, size);
	return mem;
}

char *p_strdup_printf(pool_t pool, const char *fmt, ...)
{
	va_list args, args2;
	va_start(args, fmt);
	va_copy(args2, args);
	int len = vsnprintf(NULL, 0, fmt, args);
	va_end(args);
	if (len < 0)
		i_panic("vsnprintf(%s) failed", fmt);
	char *str = p_malloc(pool, (size_t)len + 1);
	(void)vsnprintf(str, (size_t)len + 1, fmt, args2);
	va_end(args2);
	return str;
}

size_t pool_get_used_size(pool_t pool)
{
	return pool->used_total;
}
