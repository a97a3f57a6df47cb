/* Process-wide inotify watches of Maildir cur/ and new/ (maildir-watch.h). */
#include "lib.h"
#include "log.h"
#include "maildir-watch.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

/* Events read per read(): each is at most the header + NAME_MAX + 1. */
#define WATCH_READ_BUF (32 * (sizeof(struct inotify_event) + NAME_MAX + 1))
#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
		    IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#ifndef FUSE_SUPER_MAGIC
#  define FUSE_SUPER_MAGIC 0x65735546
#endif
#ifndef ZFS_SUPER_MAGIC
#  define ZFS_SUPER_MAGIC 0x2fc12fc1
#endif
#ifndef F2FS_SUPER_MAGIC
#  define F2FS_SUPER_MAGIC 0xF2F52010
#endif
#ifndef XFS_SUPER_MAGIC
#  define XFS_SUPER_MAGIC 0x58465342
#endif

struct maildir_watch_listener {
	struct maildir_watch_listener *next;
	struct maildir_watch *watch;
	maildir_watch_callback_t *cb;
	void *context;
};

struct watch_expected {
	enum maildir_watch_dir dir;
	char *name;
};

struct watch_rename {
	uint64_t gen;              /* the generation this rename moved to */
	char *name;                /* the new name in cur/ */
};

struct maildir_watch {
	struct maildir_watch *prev, *next;
	char *path;
	unsigned int refcount;
	int wd[2];                 /* cur, new; -1 once gone */
	uint64_t gen;
	struct maildir_watch_listener *listeners;
	uint64_t trusted_gen, trusted_modseq;
	uint32_t trusted_uidvalidity;
	bool trusted;
	bool dead;
	struct watch_expected expected[MAILDIR_WATCH_MAX_EXPECTED];
	unsigned int expected_count;
	bool expected_overflow;
	/* The generation after the last change that was not a recorded
	   rename: renames since a trust at or after it are all in renames[] */
	uint64_t unexplained_gen;
	/* a foreign MOVED_FROM in cur/ waiting for its MOVED_TO (the kernel
	   queues the two one after the other) */
	char *move_from;
	uint32_t move_cookie;
	struct watch_rename *renames;
	unsigned int rename_count, rename_alloc;
};

/* the root: folders made, removed, moved; a new folder: its cur/ and
   new/ */
#define ROOT_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
		   IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
#define NEWDIR_MASK (IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | \
		     IN_MOVE_SELF | IN_ONLYDIR)

struct root_newdir {
	int wd;
	char *dir;
	/* CREATED was told (it has cur/); COMPLETED is when new/ comes */
	bool await_new;
};

struct maildir_root_watch {
	char *path;
	int wd;                    /* -1 once the root is gone */
	maildir_root_callback_t *cb;
	void *context;
	struct root_newdir newdirs[MAILDIR_ROOT_NEWDIR_MAX];
	unsigned int newdir_count;
	/* a MOVED_FROM waiting for its MOVED_TO (the kernel queues the two
	   together); unmatched at the end of a read: moved out */
	uint32_t move_cookie;
	char *move_from;
};

static int watch_fd = -1;
static bool watch_unavailable;
static struct maildir_watch *watches;
/* one per process: an imap process serves one user */
static struct maildir_root_watch *root_watch;

static bool root_event(const struct inotify_event *ev);
static void root_flush_move(struct maildir_root_watch *rw);

/* File systems where every writer goes through this kernel, so inotify
   sees all changes. Elsewhere (NFS, CIFS, FUSE...) other hosts' changes
   would be invisible: mtimes it is. */
static bool fs_is_local(const char *path)
{
	struct statfs st;

	if (statfs(path, &st) < 0)
		return false;
	switch ((unsigned long)st.f_type) {
	case EXT4_SUPER_MAGIC:  /* also ext2/ext3 */
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case F2FS_SUPER_MAGIC:
	case ZFS_SUPER_MAGIC:
	case OVERLAYFS_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

static bool watch_init(void)
{
	if (watch_fd != -1)
		return true;
	if (watch_unavailable)
		return false;
	watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (watch_fd == -1) {
		/* EMFILE: max_user_instances used up by this mail uid. */
		i_warning("inotify_init1() failed, Maildir changes are found by "
			  "directory mtimes: %m");
		watch_unavailable = true;
		return false;
	}
	return true;
}

/* Something changed in the folder: listeners hear of every change, also
   this process's own (another session's APPEND must wake an IDLE). */
static void watch_notify(struct maildir_watch *w)
{
	for (struct maildir_watch_listener *l = w->listeners; l != NULL;
	     l = l->next)
		l->cb(l->context);
}

static void watch_renames_clear(struct maildir_watch *w)
{
	for (unsigned int i = 0; i < w->rename_count; i++)
		i_free(w->renames[i].name);
	w->rename_count = 0;
}

/* Something not announced happened: move the generation, tell listeners.
   What it was is not known: no rename list can stand for it. */
static void watch_changed(struct maildir_watch *w)
{
	w->gen++;
	w->unexplained_gen = w->gen;
	watch_renames_clear(w);
	watch_notify(w);
}

/* The bytes of a Maildir name before ':' (maildir-filename.h). */
static size_t name_base_len(const char *name)
{
	return strcspn(name, ":");
}

/* A foreign rename within cur/ that kept the base name: a flag change by
   another Maildir tool. It moves the generation like any foreign change,
   and is kept so that a sync can apply it without reading cur/. */
static void watch_renamed(struct maildir_watch *w, const char *from,
			  const char *to)
{
	size_t len = name_base_len(from);

	if (len == 0 || len != name_base_len(to) ||
	    memcmp(from, to, len) != 0 ||
	    w->rename_count == MAILDIR_WATCH_MAX_RENAMES) {
		watch_changed(w);
		return;
	}
	if (w->rename_count == w->rename_alloc) {
		w->rename_alloc = w->rename_alloc == 0 ? 64 :
			MIN(w->rename_alloc * 2, MAILDIR_WATCH_MAX_RENAMES);
		w->renames = i_realloc(w->renames,
			i_mul_size(w->rename_alloc, sizeof(*w->renames)));
	}
	w->gen++;
	w->renames[w->rename_count].gen = w->gen;
	w->renames[w->rename_count].name = i_strdup(to);
	w->rename_count++;
	watch_notify(w);
}

/* A MOVED_FROM not followed by its MOVED_TO: moved out of cur/. */
static void watch_flush_move(struct maildir_watch *w)
{
	if (w->move_from == NULL)
		return;
	i_free(w->move_from);
	watch_changed(w);
}

static void watches_flush_moves(void)
{
	for (struct maildir_watch *w = watches; w != NULL; w = w->next)
		watch_flush_move(w);
}

static void watch_remove_dirs(struct maildir_watch *w)
{
	for (unsigned int i = 0; i < 2; i++) {
		if (w->wd[i] != -1 &&
		    (i == 0 || w->wd[1] != w->wd[0]))
			(void)inotify_rm_watch(watch_fd, w->wd[i]);
		w->wd[i] = -1;
	}
}

static struct maildir_watch *watch_find_wd(int wd, unsigned int *idx_r)
{
	for (struct maildir_watch *w = watches; w != NULL; w = w->next) {
		for (unsigned int i = 0; i < 2; i++) {
			if (w->wd[i] == wd) {
				*idx_r = i;
				return w;
			}
		}
	}
	return NULL;
}

static bool watch_take_expected(struct maildir_watch *w,
				enum maildir_watch_dir dir, const char *name)
{
	for (unsigned int i = 0; i < w->expected_count; i++) {
		struct watch_expected *e = &w->expected[i];

		if (e->dir == dir && strcmp(e->name, name) == 0) {
			i_free(e->name);
			*e = w->expected[--w->expected_count];
			return true;
		}
	}
	return false;
}

/* Events were lost: the root's listener hears first (it may set up
   watches, which then hear too), then nobody can be trusted any more. */
static void watch_lost_events(void)
{
	struct maildir_root_watch *rw = root_watch;

	if (rw != NULL) {
		root_flush_move(rw);
		rw->cb(rw->context, MAILDIR_ROOT_OVERFLOW, NULL, NULL);
	}
	for (struct maildir_watch *w = watches; w != NULL; w = w->next)
		watch_changed(w);
}

static void watch_event(const struct inotify_event *ev)
{
	unsigned int idx;

	if ((ev->mask & IN_Q_OVERFLOW) != 0) {
		i_warning("inotify event queue overflowed "
			  "(fs.inotify.max_queued_events): every watched "
			  "folder counts as changed");
		watch_lost_events();
		return;
	}
	if (root_event(ev))
		return;
	struct maildir_watch *w = watch_find_wd(ev->wd, &idx);
	if (w == NULL)
		return;   /* a watch removed after the event was queued */
	if ((ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) != 0) {
		/* The directory went away or moved (the watch would follow
		   it): this watch is dead, its holders rescan on every
		   check, and the next maildir_watch_ref() makes a new one. */
		if (!w->dead)
			watch_remove_dirs(w);
		w->dead = true;
		watch_changed(w);
		return;
	}
	if (ev->len > 0 && !w->expected_overflow &&
	    watch_take_expected(w, (enum maildir_watch_dir)idx, ev->name)) {
		watch_flush_move(w);
		watch_notify(w);
		return;
	}
	if (w->move_from != NULL && (ev->mask & IN_MOVED_TO) != 0 &&
	    ev->cookie == w->move_cookie && idx == MAILDIR_WATCH_CUR &&
	    ev->len > 0) {
		char *from = w->move_from;
		w->move_from = NULL;
		watch_renamed(w, from, ev->name);
		i_free(from);
		return;
	}
	watch_flush_move(w);
	if ((ev->mask & IN_MOVED_FROM) != 0 && idx == MAILDIR_WATCH_CUR &&
	    ev->len > 0 && (ev->mask & IN_ISDIR) == 0) {
		w->move_from = i_strdup(ev->name);
		w->move_cookie = ev->cookie;
		return;
	}
	watch_changed(w);
}

static void watch_read_events(void)
{
	union {
		struct inotify_event align;
		char buf[WATCH_READ_BUF];
	} u;

	for (;;) {
		ssize_t ret = read(watch_fd, u.buf, sizeof(u.buf));
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0) {
			/* the root's callback may change errno */
			bool failed = ret < 0 && errno != EAGAIN;
			if (failed)
				i_error("read(inotify) failed: %m");
			if (root_watch != NULL)
				root_flush_move(root_watch);
			watches_flush_moves();
			if (failed) {
				/* events may be lost: trust nothing */
				watch_lost_events();
			}
			return;
		}
		for (ssize_t pos = 0; pos < ret; ) {
			const struct inotify_event *ev = (const void *)(u.buf + pos);
			watch_event(ev);
			pos += (ssize_t)(sizeof(*ev) + ev->len);
		}
	}
}

/* The kernel gives a directory one wd per instance: another watch that
   holds wd watches the same directory under the path it had before a
   rename (a watch follows the inode). It is dead; its wds are ours now,
   and freeing it must not remove them. */
static void watch_take_wd(int wd)
{
	for (struct maildir_watch *w = watches; w != NULL; w = w->next) {
		if (w->wd[0] != wd && w->wd[1] != wd)
			continue;
		w->wd[0] = w->wd[1] = -1;
		w->dead = true;
		watch_changed(w);
		return;
	}
}

static bool watch_add_dirs(struct maildir_watch *w)
{
	static const char *const subdirs[2] = { "cur", "new" };
	char dir[PATH_MAX];

	for (unsigned int i = 0; i < 2; i++) {
		if (snprintf(dir, sizeof(dir), "%s/%s", w->path, subdirs[i]) >=
		    (int)sizeof(dir))
			return false;
		w->wd[i] = inotify_add_watch(watch_fd, dir, WATCH_MASK);
		if (w->wd[i] == -1) {
			if (errno == ENOSPC)
				i_warning("inotify_add_watch(%s): max_user_watches "
					  "reached, using mtimes", dir);
			return false;
		}
		watch_take_wd(w->wd[i]);
	}
	/* One directory watched twice would share a wd: not a Maildir. */
	return w->wd[0] != w->wd[1];
}

static void watch_unlink(struct maildir_watch *w)
{
	if (w->prev != NULL)
		w->prev->next = w->next;
	else
		watches = w->next;
	if (w->next != NULL)
		w->next->prev = w->prev;
	w->prev = w->next = NULL;
}

static void watch_link_head(struct maildir_watch *w)
{
	w->next = watches;
	if (watches != NULL)
		watches->prev = w;
	watches = w;
}

struct maildir_watch *maildir_watch_ref(const char *path)
{
	struct maildir_watch *w;

	for (w = watches; w != NULL; w = w->next) {
		if (!w->dead && strcmp(w->path, path) == 0) {
			w->refcount++;
			watch_unlink(w);
			watch_link_head(w);
			return w;
		}
	}
	if (!fs_is_local(path) || !watch_init())
		return NULL;
	w = i_malloc(sizeof(*w));
	w->path = i_strdup(path);
	w->refcount = 1;
	if (!watch_add_dirs(w)) {
		watch_remove_dirs(w);
		i_free(w->path);
		i_free(w);
		return NULL;
	}
	watch_link_head(w);
	return w;
}

static void watch_expected_clear(struct maildir_watch *w)
{
	for (unsigned int i = 0; i < w->expected_count; i++)
		i_free(w->expected[i].name);
	w->expected_count = 0;
	w->expected_overflow = false;
}

static void watch_free(struct maildir_watch *w)
{
	if (!w->dead)
		watch_remove_dirs(w);
	watch_expected_clear(w);
	watch_renames_clear(w);
	i_free(w->renames);
	i_free(w->move_from);
	watch_unlink(w);
	i_free(w->path);
	i_free(w);
}

/* Free unreferenced watches beyond MAILDIR_WATCH_MAX_UNUSED (the list is
   most recently used first) and dead ones. */
static void watch_trim_unused(void)
{
	unsigned int unused = 0;
	struct maildir_watch *w, *next;

	for (w = watches; w != NULL; w = next) {
		next = w->next;
		if (w->refcount > 0)
			continue;
		if (w->dead || ++unused > MAILDIR_WATCH_MAX_UNUSED)
			watch_free(w);
	}
}

void maildir_watch_unref(struct maildir_watch **_w)
{
	struct maildir_watch *w = *_w;

	if (w == NULL)
		return;
	*_w = NULL;
	i_assert(w->refcount > 0);
	if (--w->refcount > 0)
		return;
	/* kept with its trust for the next open of this folder */
	watch_expected_clear(w);
	watch_unlink(w);
	watch_link_head(w);
	watch_trim_unused();
}

uint64_t maildir_watch_get_gen(struct maildir_watch *w)
{
	watch_read_events();
	if (w->dead)
		w->gen++;
	return w->gen;
}

uint64_t maildir_watch_peek_gen(const struct maildir_watch *w)
{
	return w->gen;
}

/* Drop the renames the index has as of generation gen. */
static void watch_renames_drop_upto(struct maildir_watch *w, uint64_t gen)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < w->rename_count; i++) {
		if (w->renames[i].gen <= gen)
			i_free(w->renames[i].name);
		else
			w->renames[n++] = w->renames[i];
	}
	w->rename_count = n;
}

void maildir_watch_trust(struct maildir_watch *w, uint64_t gen,
			 uint32_t uidvalidity, uint64_t modseq)
{
	watch_renames_drop_upto(w, gen);
	w->trusted = true;
	w->trusted_gen = gen;
	w->trusted_uidvalidity = uidvalidity;
	w->trusted_modseq = modseq;
}

bool maildir_watch_is_trusted(struct maildir_watch *w, uint32_t uidvalidity,
			      uint64_t modseq)
{
	return w->trusted && maildir_watch_get_gen(w) == w->trusted_gen &&
		uidvalidity == w->trusted_uidvalidity &&
		modseq >= w->trusted_modseq;
}

unsigned int maildir_watch_get_renames(struct maildir_watch *w,
				       uint32_t uidvalidity, uint64_t modseq,
				       const char *names_r[],
				       uint64_t *gen_r)
{
	uint64_t gen = maildir_watch_get_gen(w);

	/* every change since the trust must be one of the renames kept:
	   each moved the generation by one, so their count tells */
	if (!w->trusted || w->dead || gen == w->trusted_gen ||
	    w->unexplained_gen > w->trusted_gen ||
	    uidvalidity != w->trusted_uidvalidity ||
	    modseq < w->trusted_modseq || w->rename_count == 0 ||
	    w->renames[0].gen != w->trusted_gen + 1 ||
	    w->renames[w->rename_count - 1].gen != gen ||
	    gen - w->trusted_gen != w->rename_count)
		return 0;
	for (unsigned int i = 0; i < w->rename_count; i++)
		names_r[i] = w->renames[i].name;
	*gen_r = gen;
	return w->rename_count;
}

void maildir_watch_distrust(struct maildir_watch *w)
{
	watch_changed(w);
}

bool maildir_watch_saw_change(struct maildir_watch *w)
{
	return w->trusted && maildir_watch_get_gen(w) != w->trusted_gen;
}

void maildir_watch_expect(struct maildir_watch *w, enum maildir_watch_dir dir,
			  const char *name)
{
	if (w == NULL)
		return;
	if (w->expected_count == MAILDIR_WATCH_MAX_EXPECTED) {
		w->expected_overflow = true;
		return;
	}
	w->expected[w->expected_count].dir = dir;
	w->expected[w->expected_count].name = i_strdup(name);
	w->expected_count++;
}

void maildir_watch_settle(struct maildir_watch *w)
{
	if (w == NULL)
		return;
	watch_read_events();
	/* Beyond the bound we cannot tell ours from theirs. An announcement
	   without its event means our change did not happen as planned -
	   perhaps because someone else's did (they unlinked the file we
	   meant to rename, and their event cancelled our announcement). */
	if (w->expected_overflow || w->expected_count > 0)
		watch_changed(w);
	watch_expected_clear(w);
}

struct maildir_watch_listener *
maildir_watch_listen(struct maildir_watch *w, maildir_watch_callback_t *cb,
		     void *context)
{
	struct maildir_watch_listener *l = i_malloc(sizeof(*l));

	l->watch = w;
	l->cb = cb;
	l->context = context;
	l->next = w->listeners;
	w->listeners = l;
	w->refcount++;
	return l;
}

void maildir_watch_unlisten(struct maildir_watch_listener **_l)
{
	struct maildir_watch_listener *l = *_l, **p;

	if (l == NULL)
		return;
	*_l = NULL;
	for (p = &l->watch->listeners; *p != l; p = &(*p)->next)
		i_assert(*p != NULL);
	*p = l->next;
	struct maildir_watch *w = l->watch;
	i_free(l);
	maildir_watch_unref(&w);
}

int maildir_watch_fd(void)
{
	return watch_fd;
}

void maildir_watch_read(void)
{
	if (watch_fd != -1)
		watch_read_events();
}

void maildir_watch_deinit(void)
{
	while (watches != NULL) {
		i_assert(watches->refcount == 0);
		watch_free(watches);
	}
	if (watch_fd != -1)
		i_close_fd(&watch_fd);
	watch_unavailable = false;
}

/* ---- the folders of a Maildir++ root ---- */

static bool root_has_sub(const struct maildir_root_watch *rw, const char *dir,
			 const char *sub)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s/%s", rw->path, dir, sub) >=
	    (int)sizeof(path))
		return false;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void root_newdir_drop(struct maildir_root_watch *rw, unsigned int i,
			     bool rm_watch)
{
	if (rm_watch)
		(void)inotify_rm_watch(watch_fd, rw->newdirs[i].wd);
	i_free(rw->newdirs[i].dir);
	rw->newdirs[i] = rw->newdirs[--rw->newdir_count];
}

static void root_newdir_forget(struct maildir_root_watch *rw, const char *dir)
{
	for (unsigned int i = 0; i < rw->newdir_count; i++) {
		if (strcmp(rw->newdirs[i].dir, dir) == 0) {
			root_newdir_drop(rw, i, true);
			return;
		}
	}
}

/* A folder directory appeared: CREATED now if it has cur/, else when
   cur/ comes; if new/ is not there yet either, the folder stays watched
   and COMPLETED is told when it comes (a folder watch needs both). */
static void root_created(struct maildir_root_watch *rw, const char *dir)
{
	char path[PATH_MAX];

	if (!(root_has_sub(rw, dir, "cur") && root_has_sub(rw, dir, "new")) &&
	    rw->newdir_count < MAILDIR_ROOT_NEWDIR_MAX &&
	    snprintf(path, sizeof(path), "%s/%s", rw->path, dir) <
	    (int)sizeof(path)) {
		int wd = inotify_add_watch(watch_fd, path, NEWDIR_MASK);
		/* they may have come between the check and the watch */
		bool cur = root_has_sub(rw, dir, "cur");
		if (wd != -1 && (!cur || !root_has_sub(rw, dir, "new"))) {
			struct root_newdir *nd = &rw->newdirs[rw->newdir_count++];
			nd->wd = wd;
			nd->dir = i_strdup(dir);
			nd->await_new = cur;
			if (cur)
				rw->cb(rw->context, MAILDIR_ROOT_CREATED, dir,
				       NULL);
			return;
		}
		if (wd != -1)
			(void)inotify_rm_watch(watch_fd, wd);
	}
	rw->cb(rw->context, MAILDIR_ROOT_CREATED, dir, NULL);
}

/* An entry made in a watched new folder: cur/ (CREATED) or new/
   (COMPLETED) when the folder waited for it. */
static void root_newdir_entry(struct maildir_root_watch *rw, unsigned int i,
			      const char *name)
{
	struct root_newdir *nd = &rw->newdirs[i];
	enum maildir_root_event event;

	if (!nd->await_new && strcmp(name, "cur") == 0) {
		event = MAILDIR_ROOT_CREATED;
		if (!root_has_sub(rw, nd->dir, "new")) {
			/* new/ comes later: its event is still seen */
			nd->await_new = true;
			rw->cb(rw->context, event, nd->dir, NULL);
			return;
		}
	} else if (nd->await_new && strcmp(name, "new") == 0) {
		event = MAILDIR_ROOT_COMPLETED;
	} else {
		return;
	}
	char *dir = nd->dir;
	nd->dir = NULL;
	root_newdir_drop(rw, i, true);
	rw->cb(rw->context, event, dir, NULL);
	i_free(dir);
}

static void root_flush_move(struct maildir_root_watch *rw)
{
	if (rw->move_from == NULL)
		return;
	char *dir = rw->move_from;
	rw->move_from = NULL;
	rw->cb(rw->context, MAILDIR_ROOT_DELETED, dir, NULL);
	i_free(dir);
}

static void root_entry_event(struct maildir_root_watch *rw,
			     const struct inotify_event *ev)
{
	if ((ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) != 0) {
		if ((ev->mask & IN_IGNORED) == 0)
			(void)inotify_rm_watch(watch_fd, rw->wd);
		rw->wd = -1;
		return;
	}
	if (ev->len == 0 || (ev->mask & IN_ISDIR) == 0 || ev->name[0] != '.')
		return;
	if ((ev->mask & IN_MOVED_TO) != 0 && rw->move_from != NULL &&
	    rw->move_cookie == ev->cookie) {
		char *old = rw->move_from;
		rw->move_from = NULL;
		root_newdir_forget(rw, old);
		rw->cb(rw->context, MAILDIR_ROOT_RENAMED, ev->name, old);
		i_free(old);
		return;
	}
	root_flush_move(rw);
	if ((ev->mask & IN_MOVED_FROM) != 0) {
		rw->move_from = i_strdup(ev->name);
		rw->move_cookie = ev->cookie;
	} else if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) != 0) {
		root_created(rw, ev->name);
	} else if ((ev->mask & IN_DELETE) != 0) {
		root_newdir_forget(rw, ev->name);
		rw->cb(rw->context, MAILDIR_ROOT_DELETED, ev->name, NULL);
	}
}

/* Whether ev is one of the root watch's (and then handle it). */
static bool root_event(const struct inotify_event *ev)
{
	struct maildir_root_watch *rw = root_watch;

	if (rw == NULL)
		return false;
	if (ev->wd == rw->wd) {
		root_entry_event(rw, ev);
		return true;
	}
	for (unsigned int i = 0; i < rw->newdir_count; i++) {
		struct root_newdir *nd = &rw->newdirs[i];
		if (nd->wd != ev->wd)
			continue;
		if ((ev->mask & (IN_IGNORED | IN_DELETE_SELF |
				 IN_MOVE_SELF)) != 0) {
			/* gone or moved: the root's event reports it */
			root_newdir_drop(rw, i, (ev->mask & IN_IGNORED) == 0);
		} else if (ev->len > 0 && (ev->mask & IN_ISDIR) != 0) {
			root_newdir_entry(rw, i, ev->name);
		}
		return true;
	}
	return false;
}

struct maildir_root_watch *
maildir_root_watch_add(const char *root, maildir_root_callback_t *cb,
		       void *context)
{
	i_assert(root_watch == NULL);
	if (!fs_is_local(root) || !watch_init())
		return NULL;
	int wd = inotify_add_watch(watch_fd, root, ROOT_MASK);
	if (wd == -1) {
		if (errno == ENOSPC)
			i_warning("inotify_add_watch(%s): max_user_watches "
				  "reached: folders made by other programs "
				  "are not reported", root);
		else
			i_error("inotify_add_watch(%s) failed: %m", root);
		return NULL;
	}
	struct maildir_root_watch *rw = i_malloc(sizeof(*rw));
	rw->path = i_strdup(root);
	rw->wd = wd;
	rw->cb = cb;
	rw->context = context;
	root_watch = rw;
	return rw;
}

void maildir_root_watch_remove(struct maildir_root_watch **_rw)
{
	struct maildir_root_watch *rw = *_rw;

	if (rw == NULL)
		return;
	*_rw = NULL;
	i_assert(rw == root_watch);
	while (rw->newdir_count > 0)
		root_newdir_drop(rw, 0, true);
	if (rw->wd != -1)
		(void)inotify_rm_watch(watch_fd, rw->wd);
	i_free(rw->move_from);
	i_free(rw->path);
	i_free(rw);
	root_watch = NULL;
}
