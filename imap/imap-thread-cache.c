/* The last THREAD answer of the process (imap-thread-cache.h). */
#include "lib.h"
#include "imap-thread-cache.h"

#include <string.h>
#include <strings.h>

/* Search keys whose match follows from the messages' flags alone (each
   change raises the modseq): nothing with an argument, nothing of the
   session (RECENT, NEW, OLD, $) or of the clock (OLDER, YOUNGER). */
static const char *const static_keys[] = {
	"ALL", "ANSWERED", "DELETED", "DRAFT", "FLAGGED", "SEEN",
	"UNANSWERED", "UNDELETED", "UNDRAFT", "UNFLAGGED", "UNSEEN", "NOT",
};
/* A program of more keys than this is not keyed. */
#define PROGRAM_KEYS_MAX 8

static struct {
	size_t max_size;
	struct imap_thread_cache_key key;    /* its strings are these: */
	char *mailbox, *program;
	struct imap_thread_answer *answer;
} cache;

void imap_thread_cache_init(size_t max_size)
{
	imap_thread_cache_deinit();
	cache.max_size = max_size;
}

static void cache_clear(void)
{
	if (cache.answer != NULL)
		imap_thread_answer_unref(&cache.answer);
	i_free(cache.mailbox);
	i_free(cache.program);
	memset(&cache.key, 0, sizeof(cache.key));
}

void imap_thread_cache_deinit(void)
{
	cache_clear();
	cache.max_size = 0;
}

size_t imap_thread_cache_max_size(void)
{
	return cache.max_size;
}

static bool key_is_static(const char *atom)
{
	for (unsigned int i = 0; i < N_ELEMENTS(static_keys); i++) {
		if (strcasecmp(atom, static_keys[i]) == 0)
			return true;
	}
	return false;
}

bool imap_thread_cache_program(const struct imap_arg *args, buffer_t *out)
{
	const char *atom;
	unsigned int n = 0;

	buffer_reset(out);
	for (; args->type != IMAP_ARG_EOL; args++, n++) {
		if (n == PROGRAM_KEYS_MAX || !imap_arg_get_atom(args, &atom) ||
		    !key_is_static(atom))
			return false;
		for (const char *p = atom; *p != '\0'; p++) {
			char c = *p >= 'a' && *p <= 'z' ? (char)(*p - 32) : *p;
			if (buffer_append_c(out, c) < 0)
				return false;
		}
		if (buffer_append_c(out, ' ') < 0)
			return false;
	}
	/* a C string for the key */
	return n > 0 && buffer_append_c(out, '\0') == 0;
}

static bool key_equals(const struct imap_thread_cache_key *a,
		       const struct imap_thread_cache_key *b)
{
	return a->uidvalidity == b->uidvalidity &&
		a->highest_modseq == b->highest_modseq &&
		a->count == b->count && a->numbering == b->numbering &&
		a->alg == b->alg && a->uid == b->uid &&
		strcmp(a->mailbox, b->mailbox) == 0 &&
		strcmp(a->program, b->program) == 0;
}

struct imap_thread_answer *
imap_thread_cache_lookup(const struct imap_thread_cache_key *key)
{
	if (cache.answer == NULL || !key_equals(&cache.key, key))
		return NULL;
	cache.answer->refcount++;
	return cache.answer;
}

void imap_thread_cache_store(const struct imap_thread_cache_key *key,
			     const void *text, size_t len)
{
	if (len > cache.max_size)
		return;
	cache_clear();
	struct imap_thread_answer *answer = i_malloc(sizeof(*answer));
	answer->refcount = 1;
	buffer_init(&answer->text, len);
	if (buffer_append(&answer->text, text, len) < 0) {
		imap_thread_answer_unref(&answer);
		return;
	}
	cache.answer = answer;
	cache.key = *key;
	cache.key.mailbox = cache.mailbox = i_strdup(key->mailbox);
	cache.key.program = cache.program = i_strdup(key->program);
}

void imap_thread_answer_unref(struct imap_thread_answer **_answer)
{
	struct imap_thread_answer *answer = *_answer;

	*_answer = NULL;
	i_assert(answer->refcount > 0);
	if (--answer->refcount > 0)
		return;
	buffer_free(&answer->text);
	free(answer);
}
