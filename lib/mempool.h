#ifndef MEMPOOL_H
#define MEMPOOL_H
/* Memory pools: an arena that frees everything allocated from it in one
   call. Each client and each command owns one, so ownership is obvious:
   whatever came from a pool lives until pool_unref() of that pool.
   Individual allocations cannot be freed. */

typedef struct pool *pool_t;

/* block_size is the size of the first block; later blocks double up to a
   cap. name is for debugging only (must be a static string). */
pool_t pool_create(const char *name, size_t block_size);
/* Frees every allocation of the pool and sets *pool to NULL. */
void pool_unref(pool_t *pool);
/* Frees all allocations but keeps the first block for reuse. */
void pool_clear(pool_t pool);

void *p_malloc(pool_t pool, size_t size);       /* zero-filled, 16-aligned */
char *p_strdup(pool_t pool, const char *str);  /* NULL -> NULL */
char *p_strndup(pool_t pool, const void *str, size_t max_len);
void *p_memdup(pool_t pool, const void *data, size_t size);
char *p_strdup_printf(pool_t pool, const char *fmt, ...) ATTR_FORMAT(2, 3);
/* Total bytes handed out (for limits and tests). */
size_t pool_get_used_size(pool_t pool);

#endif
