#ifndef MAILDIR_WATCH_H
#define MAILDIR_WATCH_H
/* Knowing, without a readdir, that nobody outside this process changed a
   Maildir's cur/ and new/ since our last scan.

   Directory mtimes cannot tell: they are coarse (a change in the same
   clock tick leaves them equal), so a directory changed in the last two
   seconds must be rescanned, and under load that is every command - a
   readdir of the whole of cur/ per STORE. An inotify watch set up before a
   scan sees every later entry change in order, with its name. This
   process's own renames, links and unlinks are announced beforehand
   (maildir_watch_expect()) and cancel out against their events; every
   other event, a queue overflow or the directory going away makes the
   watch's generation move, and a handle whose remembered generation
   differs rescans. Our own changes reach the process's other handles
   through the index log, so they need no rescan.

   One inotify instance per process serves every mailbox (the kernel
   limits instances per uid, and many users may share one mail uid). Where
   inotify is unavailable or cannot see every writer (network and FUSE
   file systems), maildir_watch_ref() returns NULL and callers keep using
   mtimes. */

#include <stdbool.h>
#include <stdint.h>

/* Announced names per settle; more make the settle count as foreign (one
   rescan after a big STORE or EXPUNGE instead of unbounded memory). */
#define MAILDIR_WATCH_MAX_EXPECTED 256
/* Watches nobody references are kept (with what they know) for the next
   open of the same folder, up to this many, least recently used first
   out: a client switching folders must not rescan them each time. */
#define MAILDIR_WATCH_MAX_UNUSED 16

enum maildir_watch_dir {
	MAILDIR_WATCH_CUR,
	MAILDIR_WATCH_NEW,
};

struct maildir_watch;

/* The process's watch of path/cur and path/new (shared, counted). NULL if
   the directories cannot be watched. A watch kept for a path whose
   folder was renamed since follows the directories to the new name: it
   dies when the new path is watched (the kernel shares the wds). */
struct maildir_watch *maildir_watch_ref(const char *path);
void maildir_watch_unref(struct maildir_watch **watch);

/* Read what is pending, then return the generation: it changes whenever
   something not announced happened in cur/ or new/. */
uint64_t maildir_watch_get_gen(struct maildir_watch *watch);

/* The generation as the events read so far left it (reads nothing: for
   listener callbacks, to tell a foreign change from an announced one). */
uint64_t maildir_watch_peek_gen(const struct maildir_watch *watch);

/* The index reflects cur/ and new/ as they were at generation gen (a clean
   scan that started at gen was committed). Every handle of the process
   may then skip scanning while the generation stays: all later changes
   were this process's own, and they are in the index. The trust names
   the index (uidvalidity, highest modseq then): an index deleted, reset
   or rebuilt since (another uidvalidity, or a lower modseq) is not the
   one that was trusted. */
void maildir_watch_trust(struct maildir_watch *watch, uint64_t gen,
			 uint32_t uidvalidity, uint64_t modseq);
/* Whether the last trust still holds for this index (reads pending events
   first). */
bool maildir_watch_is_trusted(struct maildir_watch *watch,
			      uint32_t uidvalidity, uint64_t modseq);
/* Foreign renames within cur/ that kept the base name (another Maildir
   tool changing flags) are kept, in order, up to
   MAILDIR_WATCH_MAX_RENAMES since the trust (more, or any other foreign
   change, and there are none to apply: the folder is scanned). */
#define MAILDIR_WATCH_MAX_RENAMES 2048
/* When the trust for this index failed only because of such renames:
   their new names in cur/ (oldest first; a base may come more than once,
   the last is its current name) into names_r (MAILDIR_WATCH_MAX_RENAMES
   entries, valid until the next call on the watch), the generation they
   bring the folder to in gen_r, and their number. 0 otherwise. Once the
   index has them, maildir_watch_trust(gen) drops them. */
unsigned int maildir_watch_get_renames(struct maildir_watch *watch,
				       uint32_t uidvalidity, uint64_t modseq,
				       const char *names_r[],
				       uint64_t *gen_r);
/* The renames could not be applied: the next sync scans. */
void maildir_watch_distrust(struct maildir_watch *watch);
/* Whether the watch was trusted once and has seen a foreign change since:
   then the directories did change, whatever their mtimes say. */
bool maildir_watch_saw_change(struct maildir_watch *watch);

/* (A NULL watch is accepted by these two and does nothing.)
   Announce one entry name this process is about to create or remove in
   dir (a rename announces both names). */
void maildir_watch_expect(struct maildir_watch *watch,
			  enum maildir_watch_dir dir, const char *name);
/* After the announced changes: read their events and cancel them against
   the announcements. Anything else, and an announcement left without its
   event (a rename that failed), moves the generation. */
void maildir_watch_settle(struct maildir_watch *watch);

/* Waiting for changes (IDLE): cb runs for every change in cur/ or new/,
   announced ones too (another session of the process appended), from
   inside whatever call read the events (a sync, a settle,
   maildir_watch_read()), so it must only schedule work. A listener keeps
   the watch referenced. */
typedef void maildir_watch_callback_t(void *context);
struct maildir_watch_listener;
struct maildir_watch_listener *
maildir_watch_listen(struct maildir_watch *watch, maildir_watch_callback_t *cb,
		     void *context);
void maildir_watch_unlisten(struct maildir_watch_listener **listener);
/* The process's inotify fd, -1 if none: when it is readable, call
   maildir_watch_read(). */
int maildir_watch_fd(void);
void maildir_watch_read(void);

/* ---- folders of a Maildir++ root (NOTIFY's MailboxName of other
   writers) ----
   One watch of the root directory sees every folder of the user come,
   go or move (Maildir++ keeps them all side by side in the root). A
   folder made without cur/ yet (mkdir .Foo, then .Foo/cur) is watched
   until cur/ comes, and CREATED then; one that has cur/ but no new/ yet
   is CREATED and stays watched until new/ comes: COMPLETED (a folder's
   message watch needs both). At most MAILDIR_ROOT_NEWDIR_MAX are
   watched so at once; past that a folder is CREATED at once (as
   \Noselect without cur/, and no COMPLETED). A rename within the root is
   one MOVED_FROM/MOVED_TO pair: RENAMED; a move out of or into the root
   is DELETED or CREATED. Events are reported for this process's own
   changes too (the caller tells them apart). Lost events (a queue
   overflow, a failed read) are OVERFLOW, before every folder watch's
   generation moves: what changed in the root is not known then. */
#define MAILDIR_ROOT_NEWDIR_MAX 16

enum maildir_root_event {
	MAILDIR_ROOT_CREATED,
	MAILDIR_ROOT_COMPLETED,
	MAILDIR_ROOT_DELETED,
	MAILDIR_ROOT_RENAMED,
	MAILDIR_ROOT_OVERFLOW,
};
/* dir and olddir (RENAMED only, else NULL; both NULL for OVERFLOW) are
   root entry names (".Foo.Bar"), only entries that begin with '.'.
   Called from inside
   whatever read the events: it must only record and schedule. */
typedef void maildir_root_callback_t(void *context,
				     enum maildir_root_event event,
				     const char *dir, const char *olddir);
struct maildir_root_watch;
/* Watch root (one per process); NULL (logged) if it cannot be. */
struct maildir_root_watch *
maildir_root_watch_add(const char *root, maildir_root_callback_t *cb,
		       void *context);
void maildir_root_watch_remove(struct maildir_root_watch **watch);

/* Tests: close the process's inotify instance and forget every watch
   (none may be referenced). */
void maildir_watch_deinit(void);

#endif
