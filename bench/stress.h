#ifndef STRESS_H
#define STRESS_H
/* imapload's "stress" workload: a checked random mix of SELECT/EXAMINE,
   FETCH, STORE, EXPUNGE, UID EXPUNGE, APPEND, COPY, MOVE, STATUS and NOOP
   by many clients of one or several users, several on the same mailboxes.
   A model per mailbox (stress-model.c) and per session (stress-session.c)
   is checked against every response; stress-ops.c picks and sends the
   operations and checks their tagged replies. The checks hold for any
   correct server, whatever the timing: a value a session may see is judged
   by when the commands that could have made it were sent and answered
   (bench_now_us(), the single event loop gives one order).

   How much a session may lag: a completed NOOP, SELECT or EXAMINE is the
   session's sync point. Everything another session got an OK for before
   the sync command was sent must be visible after it (RFC 9051 5.2, 6.1.2:
   flags and expunges, new messages); until then the session may show any
   state since its last sync point. Its own changes are visible at once.

   Who changes what: at most one flag-changing command (STORE, FETCH that
   sets \Seen, COPY/MOVE reading the flags) is in flight per message, so a
   message's flag history is a sequence, and every FETCH FLAGS can be
   checked against the states a session may see. */

#include "bench-client.h"

#ifndef MIN
#  define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

/* Flags the workload uses: the system flags and three keywords. */
#define STRESS_FLAG_COUNT 8
#define STRESS_FLAG_SEEN 0x01
#define STRESS_FLAG_DELETED 0x10
#define STRESS_FLAGS_ALL 0xff
/* Flag changes remembered per message; older ones are summed up in a
   base state (a session that lagged behind all of them is not checked). */
#define STRESS_HISTORY_MAX 8
/* Bounds of a mailbox's size the clients steer to. */
#define STRESS_BOX_LOW 8
#define STRESS_BOX_HIGH 80
/* Messages one STORE, COPY, MOVE or FETCH set names at most... */
#define STRESS_MAX_SET 8
/* ...and the messages of one command whose answers are checked (a
   FETCH 1:* of a big mailbox checks the first ones). */
#define STRESS_MAX_TRACK 256
/* Longest mailbox name ("Stress12"), user name: BENCH_MAX_NAME. */
#define STRESS_BOX_NAME_MAX 32
/* Errors printed with their transcript; later ones are only counted,
   by kind (a check's message), up to this many kinds. */
#define STRESS_ERRORS_DETAILED 12
#define STRESS_ERROR_KINDS 64
/* Parsed values of one response (FETCH of many items, ENVELOPE). */
#define STRESS_PARSE_MAX_NODES 2048
/* Largest message the workload writes. */
#define STRESS_MSG_MAX (24 * 1024)

extern const char *const stress_flag_names[STRESS_FLAG_COUNT];

/* ---- parsed response values (stress-parse.c) ---- */
enum stress_node_type {
	STRESS_NODE_ATOM,	/* also BODY[...]<n> item names */
	STRESS_NODE_STRING,	/* quoted (escapes kept) or literal */
	STRESS_NODE_NIL,
	STRESS_NODE_LIST,
};

struct stress_node {
	enum stress_node_type type;
	const char *data;	/* atom or string bytes */
	size_t len;
	bool quoted;		/* a quoted string: \ escapes inside */
	int first, next;	/* children, siblings: node index, -1 */
	unsigned int count;	/* children of a list */
};

struct stress_parse {
	struct stress_node nodes[STRESS_PARSE_MAX_NODES];
	unsigned int count;
	const char *error;
};

/* Parse one value at data[*pos]; returns its node or -1 (p->error). */
int stress_parse_value(struct stress_parse *p, const char *data, size_t len,
		       size_t *pos);
/* node's child number i, or NULL. */
const struct stress_node *stress_node_child(const struct stress_parse *p,
					    const struct stress_node *list,
					    unsigned int i);
bool stress_node_is(const struct stress_node *n, const char *atom);
/* A string node's value unescaped into buf (NUL-terminated, cut at
   size); returns its length. */
size_t stress_node_string(const struct stress_node *n, char *buf,
			  size_t size);
/* A number atom; false if it is not one. */
bool stress_node_uint(const struct stress_node *n, uint32_t *num_r);
/* "1:3,5" into ascending uids (at most max); returns the count or -1. */
int stress_parse_uidset(const char *text, size_t len, uint32_t *uids,
			unsigned int max);

/* ---- the model (stress-model.c) ---- */

/* One change of a message's flags (a STORE, a FETCH that sets \Seen, or
   the message's creation with the flags it got). */
struct stress_change {
	uint64_t sent_us, acked_us;	/* acked 0: in flight */
	unsigned int session;		/* client index */
	uint8_t value, known;		/* flags after it; bits known */
	bool failed;			/* answered NO: maybe applied */
};

struct stress_msg {
	uint32_t uid;
	uint32_t id;			/* content (stress_content()) */
	struct stress_change hist[STRESS_HISTORY_MAX];
	unsigned int hist_count;
	bool pruned;			/* older changes dropped */
	int reserved_by;		/* client index + 1, 0 = free */
	/* may have been expunged: \Deleted may have been set, or a MOVE
	   named it */
	bool deleted_ever, moved_ever;
	uint64_t gone_us;		/* an EXPUNGE response named it by then */
	unsigned int gone_session;	/* which session's response */
	uint64_t created_us;		/* its creator's OK came then (0: not yet) */
};

struct stress_box {
	unsigned int user;		/* index into stress_run.users */
	char name[STRESS_BOX_NAME_MAX];
	uint32_t uidvalidity;		/* 0 until a response told it */
	struct stress_msg *msgs;	/* ascending uid */
	unsigned int count, alloc;
	uint32_t max_acked_uid;		/* highest uid an OK gave out */
	uint32_t max_uidnext;		/* highest UIDNEXT seen */
	unsigned int creates_inflight;	/* APPEND/COPY/MOVE into it */
};

struct stress_user {
	char name[BENCH_MAX_NAME];
	unsigned int first_box;		/* index of its first mailbox */
	unsigned int owner;		/* the client that recreates them */
	bool ready;			/* its mailboxes are fresh */
};

struct stress_run {
	struct bench_run *run;
	struct stress_user *users;
	unsigned int user_count;
	struct stress_box *boxes;	/* users x mailboxes */
	unsigned int box_count;
	uint32_t next_id;
	unsigned int errors_printed;
	/* RFC 2180 answers accepted with --rfc2180-lenient */
	uint64_t expunge_issued;	/* NO [EXPUNGEISSUED] */
	uint64_t nil_answers;		/* NIL data (4.1.3) */
	uint64_t ghost_fetches;		/* FETCHes of messages others expunged */
	uint64_t flags_checked, flags_unchecked;
	uint64_t ops_by_kind[16];
	/* errors by kind: the format of the check that failed */
	struct {
		const char *fmt;
		uint64_t count;
	} error_kinds[STRESS_ERROR_KINDS];
	unsigned int prune_tick;
	bool quiet_go, final_go;	/* the two barriers at the end */
};

struct stress_session;

/* The message of box with uid, or NULL. */
struct stress_msg *stress_box_find(struct stress_box *box, uint32_t uid);
/* Add a message (the uid not known yet to the model). */
struct stress_msg *stress_box_add(struct stress_box *box, uint32_t uid,
				  uint32_t id);
/* Drop expunged messages no session can name any more. */
void stress_box_prune(struct stress_run *sr, struct stress_box *box);

/* The newest change of m (its current state once nothing is in flight). */
const struct stress_change *stress_msg_last(const struct stress_msg *m);
/* Record a change sent now; returns it (the caller fills in acked_us). */
struct stress_change *stress_msg_change(struct stress_msg *m,
					unsigned int session, uint8_t value,
					uint8_t known);
/* Whether flags (bits) may be what session sees of m at time now, given
   its sync point sync_us: 1 yes, 0 no (why says what it could be), -1
   not known (the session lags behind the changes remembered). */
int stress_msg_flags_ok(const struct stress_msg *m, unsigned int session,
			uint64_t sync_us, uint64_t now, uint8_t flags,
			char *why, size_t why_size);
/* The state a session sees of m as far as it is certain, for a copy:
   *value_r with *known_r the bits all possible states agree on. */
void stress_msg_visible(const struct stress_msg *m, unsigned int session,
			uint64_t sync_us, uint64_t now, uint8_t *value_r,
			uint8_t *known_r);
bool stress_msg_may_be_gone(const struct stress_msg *m);
/* "(\Seen $Stress1)" for flags. */
void stress_flags_str(uint8_t flags, char *buf, size_t size);
/* Flag bits of a FLAGS list; false (with *bad_r) for a flag the workload
   never sets (\Recent is skipped). */
bool stress_flags_parse(const struct stress_parse *p,
			const struct stress_node *list, uint8_t *flags_r,
			const char **bad_r);

/* The message with content id: deterministic, written to msg (data is
   the caller's, at most STRESS_MSG_MAX). */
void stress_content(uint32_t id, unsigned int seed, struct bench_message *msg);
/* Parse the id of an X-Stress-Id header field block; 0 if none. */
uint32_t stress_content_id(const char *data, size_t len);

/* An error: counted, the first ones printed with the client's
   transcript (c may be NULL). */
void stress_error(struct stress_run *sr, struct bench_client *c,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The history of m, for an error's context. */
void stress_msg_dump(const struct stress_run *sr, const struct stress_msg *m,
		     FILE *out);

/* ---- sessions (stress-session.c) ---- */
enum stress_phase {
	STRESS_PHASE_SETUP,	/* the owner recreates the user's boxes */
	STRESS_PHASE_WAIT_SETUP,
	STRESS_PHASE_RUN,
	STRESS_PHASE_FINAL_QUIET,	/* until nobody changes anything */
	STRESS_PHASE_FINAL_SYNC,	/* NOOP (and learning the uids) */
	STRESS_PHASE_FINAL_WAIT,	/* everyone synced */
	STRESS_PHASE_FINAL_SELECT,	/* fresh SELECT + FETCH 1:* */
	STRESS_PHASE_FINAL_CHECK,
	STRESS_PHASE_DONE,
};

enum stress_op {
	STRESS_OP_NONE,
	STRESS_OP_SETUP,	/* DELETE / CREATE of the user's boxes */
	STRESS_OP_SELECT,
	STRESS_OP_NOOP,
	STRESS_OP_LEARN,	/* FETCH n:* (UID FLAGS) after EXISTS */
	STRESS_OP_FETCH,
	STRESS_OP_STORE,
	STRESS_OP_EXPUNGE,
	STRESS_OP_APPEND,
	STRESS_OP_COPY,
	STRESS_OP_MOVE,
	STRESS_OP_STATUS,
	STRESS_OP_FINAL_FETCH,
	STRESS_OP_LOGOUT,
	STRESS_OP_COUNT
};

extern const char *const stress_op_names[STRESS_OP_COUNT];

/* What a FETCH asked for (checks of its responses). */
enum stress_fetch_items {
	STRESS_FI_UID = 0x01,
	STRESS_FI_FLAGS = 0x02,
	STRESS_FI_SIZE = 0x04,
	STRESS_FI_ENVELOPE = 0x08,
	STRESS_FI_IDHDR = 0x10,	/* BODY.PEEK[HEADER.FIELDS (X-Stress-Id)] */
	STRESS_FI_TEXT = 0x20,	/* BODY.PEEK[TEXT]<start.count> */
	STRESS_FI_FULL = 0x40,	/* BODY[] or BODY.PEEK[] */
	STRESS_FI_STRUCTURE = 0x80,
	STRESS_FI_DATE = 0x100,
};

struct stress_cmd {
	enum stress_op op;
	bool uid;		/* a UID command */
	bool silent;		/* STORE .SILENT */
	bool sets_seen;		/* FETCH BODY[] in a read-write session */
	uint64_t sent_us;
	unsigned int fetch_items;
	uint32_t text_start, text_count;
	/* the messages named, by uid (0 = seq not known), and for seq
	   commands their sequence numbers at sending */
	uint32_t uids[STRESS_MAX_TRACK];
	uint32_t seqs[STRESS_MAX_TRACK];
	bool answered[STRESS_MAX_TRACK];	/* a FETCH came for it */
	uint8_t answer_flags[STRESS_MAX_TRACK];
	unsigned int count;
	uint32_t first_seq;	/* LEARN: FETCH first_seq:* */
	struct stress_box *target;	/* APPEND, COPY, MOVE, STATUS, SELECT */
	uint8_t store_value[STRESS_MAX_SET], store_known[STRESS_MAX_SET];
	/* STORE: it cannot change the message's flags (then a server may
	   leave out its FETCH: RFC 9051 6.4.6 says "normally") */
	bool store_noop[STRESS_MAX_SET];
	/* the "[COPYUID ...]" of a MOVE's untagged OK */
	char copyuid[512];
	uint32_t append_id;
	uint8_t append_flags;
	uint32_t uidnext_floor;	/* target's max UIDNEXT seen at sending */
	uint32_t maxuid_floor;	/* target's highest acked uid at sending */
	bool copyuid_seen;
	unsigned int expunges;	/* EXPUNGE responses during it */
	/* EXPUNGE: uids certainly \Deleted at sending */
	uint32_t must_go[STRESS_MAX_TRACK];
	unsigned int must_go_count;
	struct bench_message append_msg;
	uint32_t status_messages, status_uidnext, status_uidvalidity;
	bool status_seen;
	uint32_t select_uidvalidity, select_uidnext;
	bool select_readonly;
};

struct stress_session {
	struct stress_run *sr;
	struct bench_client *c;
	unsigned int idx, user;
	enum stress_phase phase;
	struct stress_box *box;		/* selected, or NULL */
	bool readonly;
	uint32_t *uids;			/* seq - 1 -> uid, 0 = not known */
	unsigned int count, alloc;
	uint64_t sync_us;		/* send time of the last sync point */
	bool need_learn;
	unsigned int setup_step;
	struct stress_cmd cmd;
	char *msg_buf;			/* APPEND's message */
	/* the final check: the uids the session numbered */
	uint32_t *final_uids;
	unsigned int final_count;
};

struct stress_session *stress_session(struct bench_client *c);
/* An untagged response of c. */
void stress_session_response(struct bench_client *c, const char *data,
			     size_t len);
/* Append seqs for uid to the map after EXISTS etc. */
void stress_session_reset(struct stress_session *s, struct stress_box *box,
			  bool readonly);
/* seq of uid in the session's map, 0 if none. */
uint32_t stress_session_seq(const struct stress_session *s, uint32_t uid);
/* Checks after a sync point completed (NOOP, SELECT or their LEARN):
   nothing expunged before it is still numbered, nothing that exists
   for sure is missing. */
void stress_session_check_synced(struct stress_session *s);

/* ---- sending (stress-send.c) ---- */
struct stress_box *stress_user_box(struct stress_run *sr, unsigned int user,
				   unsigned int i);
struct stress_box *stress_random_box(struct stress_session *s);
/* A new command in s->cmd, sent now (stress_cmd_send()). */
void stress_cmd_begin(struct stress_session *s, enum stress_op op);
void stress_cmd_send(struct stress_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Free the messages the command held (reserved). */
void stress_release_all(struct stress_session *s);
void stress_send_select(struct stress_session *s, struct stress_box *box,
			bool examine);
void stress_send_noop(struct stress_session *s);
/* FETCH n:* (UID FLAGS) for the sequences EXISTS added. */
void stress_send_learn(struct stress_session *s);
/* One random operation (the mailbox's size steers). */
void stress_send_random(struct stress_session *s);

/* ---- tagged replies (stress-reply.c) ---- */
void stress_tagged(struct bench_client *c, const char *status,
		   const char *text);

/* ---- phases and the run (stress-run.c) ---- */
bool stress_send_op(struct bench_client *c);
/* The owner of user recreated its mailboxes: the others start. */
void stress_wake_user(struct stress_run *sr, unsigned int user);
void stress_finished(struct bench_client *c);
void stress_run_init(struct bench_run *run);
void stress_run_report(struct bench_run *run);
void stress_run_deinit(struct bench_run *run);

#endif
