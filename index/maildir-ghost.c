/* Kept files of expunged messages (maildir-ghost.h). */
#include "lib.h"
#include "log.h"
#include "maildir-ghost.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

struct ghost {
	uint32_t uid;
	int fd;
	uint64_t size;           /* st_size, for MAILDIR_GHOST_MAX_BYTES */
	time_t created;
	struct mailbox **holders;
	unsigned int holder_count;
};

struct maildir_ghosts {
	struct maildir_ghosts *prev, *next;
	char *path;
	unsigned int refcount;
	struct mailbox **handles;
	unsigned int handle_count, handle_alloc;
	struct ghost *ghosts;    /* ascending uid */
	unsigned int count, alloc;
};

/* The process's folders with handles; a handful at a time. */
static struct maildir_ghosts *ghost_folders;
static unsigned int ghost_total;
static uint64_t ghost_bytes;
static unsigned int ghost_max_files;

static unsigned int ghost_files_cap(void)
{
	struct rlimit rl;

	if (ghost_max_files != 0)
		return ghost_max_files;
	ghost_max_files = MAILDIR_GHOST_MAX_FILES;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < ghost_max_files)
		ghost_max_files = (unsigned int)(rl.rlim_cur / 4);
	return ghost_max_files;
}

struct maildir_ghosts *maildir_ghosts_ref(const char *path)
{
	struct maildir_ghosts *g;

	for (g = ghost_folders; g != NULL; g = g->next) {
		if (strcmp(g->path, path) == 0) {
			g->refcount++;
			return g;
		}
	}
	g = i_malloc(sizeof(*g));
	g->path = i_strdup(path);
	g->refcount = 1;
	g->next = ghost_folders;
	if (ghost_folders != NULL)
		ghost_folders->prev = g;
	ghost_folders = g;
	return g;
}

static void ghost_drop(struct maildir_ghosts *g, unsigned int idx)
{
	struct ghost *gh = &g->ghosts[idx];

	i_close_fd(&gh->fd);
	i_free(gh->holders);
	ghost_total--;
	ghost_bytes -= gh->size;
	memmove(gh, gh + 1, (g->count - idx - 1) * sizeof(*gh));
	g->count--;
}

void maildir_ghosts_unref(struct maildir_ghosts **_g)
{
	struct maildir_ghosts *g = *_g;

	if (g == NULL)
		return;
	*_g = NULL;
	i_assert(g->refcount > 0);
	if (--g->refcount > 0)
		return;
	/* every holder was registered, and unregistering released it */
	i_assert(g->handle_count == 0);
	while (g->count > 0)
		ghost_drop(g, g->count - 1);
	if (g->prev != NULL)
		g->prev->next = g->next;
	else
		ghost_folders = g->next;
	if (g->next != NULL)
		g->next->prev = g->prev;
	i_free(g->ghosts);
	i_free(g->handles);
	i_free(g->path);
	i_free(g);
}

void maildir_ghosts_register(struct maildir_ghosts *g, struct mailbox *box)
{
	if (g->handle_count == g->handle_alloc) {
		g->handle_alloc = g->handle_alloc == 0 ? 8 : g->handle_alloc * 2;
		g->handles = i_realloc(g->handles,
			i_mul_size(g->handle_alloc, sizeof(*g->handles)));
	}
	g->handles[g->handle_count++] = box;
}

/* Remove box from gh's holders; true if it was one. */
static bool ghost_remove_holder(struct ghost *gh, struct mailbox *box)
{
	for (unsigned int i = 0; i < gh->holder_count; i++) {
		if (gh->holders[i] == box) {
			gh->holders[i] = gh->holders[--gh->holder_count];
			return true;
		}
	}
	return false;
}

void maildir_ghosts_unregister(struct maildir_ghosts *g, struct mailbox *box)
{
	for (unsigned int i = g->count; i > 0; i--) {
		if (ghost_remove_holder(&g->ghosts[i - 1], box) &&
		    g->ghosts[i - 1].holder_count == 0)
			ghost_drop(g, i - 1);
	}
	for (unsigned int i = 0; i < g->handle_count; i++) {
		if (g->handles[i] == box) {
			g->handles[i] = g->handles[--g->handle_count];
			return;
		}
	}
	i_unreached();
}

struct mailbox *const *
maildir_ghosts_get_handles(struct maildir_ghosts *g, unsigned int *count_r)
{
	*count_r = g->handle_count;
	return g->handles;
}

/* The index of uid's ghost, or of where it would go (*found_r false). */
static unsigned int ghost_find(const struct maildir_ghosts *g, uint32_t uid,
			       bool *found_r)
{
	unsigned int lo = 0, hi = g->count;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		if (g->ghosts[mid].uid < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found_r = lo < g->count && g->ghosts[lo].uid == uid;
	return lo;
}

/* Drop the process's oldest ghost; false if there is none. */
static bool ghost_drop_oldest(void)
{
	struct maildir_ghosts *best_g = NULL;
	unsigned int best_i = 0;

	for (struct maildir_ghosts *g = ghost_folders; g != NULL; g = g->next) {
		for (unsigned int i = 0; i < g->count; i++) {
			if (best_g == NULL || g->ghosts[i].created <
			    best_g->ghosts[best_i].created) {
				best_g = g;
				best_i = i;
			}
		}
	}
	if (best_g == NULL)
		return false;
	i_debug("%s: dropping the kept file of expunged uid %u (limits of "
		"kept files reached)", best_g->path, best_g->ghosts[best_i].uid);
	ghost_drop(best_g, best_i);
	return true;
}

/* Drop ghosts older than MAILDIR_GHOST_MAX_SECS. */
static void ghosts_expire(time_t now)
{
	for (struct maildir_ghosts *g = ghost_folders; g != NULL; g = g->next) {
		for (unsigned int i = g->count; i > 0; i--) {
			if (g->ghosts[i - 1].created + MAILDIR_GHOST_MAX_SECS >= now)
				continue;
			i_debug("%s: dropping the kept file of expunged uid %u: "
				"kept for %d s", g->path, g->ghosts[i - 1].uid,
				MAILDIR_GHOST_MAX_SECS);
			ghost_drop(g, i - 1);
		}
	}
}

void maildir_ghosts_keep(struct maildir_ghosts *g, uint32_t uid, int fd,
			 struct mailbox *const *holders, unsigned int count)
{
	struct stat st;
	bool found;
	time_t now = time(NULL);

	ghosts_expire(now);
	unsigned int idx = ghost_find(g, uid, &found);
	if (count == 0 || found || fstat(fd, &st) < 0 ||
	    (uint64_t)st.st_size > MAILDIR_GHOST_MAX_BYTES) {
		i_close_fd(&fd);
		return;
	}
	while (ghost_total >= ghost_files_cap() ||
	       ghost_bytes + (uint64_t)st.st_size > MAILDIR_GHOST_MAX_BYTES) {
		if (!ghost_drop_oldest())
			break;
	}
	/* the drops may have moved our slot */
	idx = ghost_find(g, uid, &found);
	if (g->count == g->alloc) {
		g->alloc = g->alloc == 0 ? 8 : g->alloc * 2;
		g->ghosts = i_realloc(g->ghosts,
				      i_mul_size(g->alloc, sizeof(*g->ghosts)));
	}
	memmove(&g->ghosts[idx + 1], &g->ghosts[idx],
		(g->count - idx) * sizeof(*g->ghosts));
	struct ghost *gh = &g->ghosts[idx];
	gh->uid = uid;
	gh->fd = fd;
	gh->size = (uint64_t)st.st_size;
	gh->created = now;
	gh->holders = i_malloc(i_mul_size(count, sizeof(*gh->holders)));
	memcpy(gh->holders, holders, count * sizeof(*holders));
	gh->holder_count = count;
	g->count++;
	ghost_total++;
	ghost_bytes += gh->size;
}

void maildir_ghosts_release(struct maildir_ghosts *g, uint32_t uid,
			    struct mailbox *box)
{
	bool found;
	unsigned int idx = ghost_find(g, uid, &found);

	if (found && ghost_remove_holder(&g->ghosts[idx], box) &&
	    g->ghosts[idx].holder_count == 0)
		ghost_drop(g, idx);
}

/* uid's ghost if box holds it, else NULL. */
static const struct ghost *ghost_held(struct maildir_ghosts *g, uint32_t uid,
				      struct mailbox *box)
{
	bool found;

	if (g->count == 0)
		return NULL;
	ghosts_expire(time(NULL));
	unsigned int idx = ghost_find(g, uid, &found);
	if (!found)
		return NULL;
	const struct ghost *gh = &g->ghosts[idx];
	for (unsigned int i = 0; i < gh->holder_count; i++) {
		if (gh->holders[i] == box)
			return gh;
	}
	return NULL;
}

bool maildir_ghosts_holds(struct maildir_ghosts *g, uint32_t uid,
			  struct mailbox *box)
{
	return ghost_held(g, uid, box) != NULL;
}

int maildir_ghosts_open(struct maildir_ghosts *g, uint32_t uid,
			struct mailbox *box)
{
	const struct ghost *gh = ghost_held(g, uid, box);

	if (gh != NULL)
		return fcntl(gh->fd, F_DUPFD_CLOEXEC, 0);
	errno = ENOENT;
	return -1;
}

unsigned int maildir_ghosts_count(void)
{
	return ghost_total;
}
