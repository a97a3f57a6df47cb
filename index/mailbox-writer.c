/* A second writer process for the concurrency protocol test
   (tests/protocol/test_concurrent_writers.py): it changes one mailbox
   through the mailbox API while the imap process changes it too.

   usage: mailbox-writer <root> <mailbox> <ops> <seed> <tag>
   It appends messages "Message-ID: <tag-N@writer>", toggles \Flagged
   (and only that flag) on any message, and expunges its own messages,
   in random order. Each acknowledged change is printed on stdout:
     A <uid> <message-id>     appended
     F <uid> <0|1>            \Flagged is now off/on
     X <uid>                  expunged
   Not installed; built by make check. */
#include "lib.h"
#include "mailbox.h"

#include <stdio.h>
#include <stdlib.h>

/* Own messages remembered for expunge; more are simply not expunged. */
#define WRITER_OWN_MAX 1024
/* A flag change that keeps racing another writer gives up after this. */
#define WRITER_RETRIES 5

struct writer {
	struct mailbox *box;
	const char *tag;
	uint32_t own[WRITER_OWN_MAX];
	unsigned int own_count, appended;
};

static int writer_append(struct writer *w, const char **error_r)
{
	struct mailbox_append_ctx *ctx;
	char msg[256];
	uint32_t uid;
	int len = snprintf(msg, sizeof(msg),
			   "Message-ID: <%s-%u@writer>\r\nSubject: w\r\n\r\n"
			   "body\r\n", w->tag, w->appended);

	if (mailbox_append_begin(w->box, 0, (time_t)-1, &ctx, error_r) < 0)
		return -1;
	if (mailbox_append_write(ctx, msg, (size_t)len, error_r) < 0) {
		mailbox_append_abort(&ctx);
		return -1;
	}
	if (mailbox_append_finish(&ctx, &uid, error_r) < 0)
		return -1;
	printf("A %u <%s-%u@writer>\n", uid, w->tag, w->appended++);
	if (w->own_count < WRITER_OWN_MAX)
		w->own[w->own_count++] = uid;
	return 0;
}

/* The seq of uid after a sync, or 0 if it is gone. */
static uint32_t writer_find(struct writer *w, uint32_t uid,
			    const char **error_r)
{
	if (mailbox_sync(w->box, true, NULL, NULL, error_r) < 0)
		return 0;
	uint32_t seq = mailbox_uid_to_seq_ge(w->box, uid);
	if (seq == 0 || mailbox_msg_uid(w->box, seq) != uid ||
	    mailbox_msg_is_expunged(w->box, seq))
		return 0;
	return seq;
}

static void writer_flag(struct writer *w, const char **error_r)
{
	if (mailbox_sync(w->box, true, NULL, NULL, error_r) < 0 ||
	    mailbox_get_count(w->box) == 0)
		return;
	uint32_t seq = 1 + (uint32_t)random() % mailbox_get_count(w->box);
	uint32_t uid = mailbox_msg_uid(w->box, seq);
	for (unsigned int i = 0; i < WRITER_RETRIES; i++) {
		if ((seq = writer_find(w, uid, error_r)) == 0)
			return;
		/* Toggle only \Flagged: the other flags belong to the other
		   writers, and ADD/REMOVE keep whatever they set meanwhile. */
		bool set = (mailbox_msg_flags(w->box, seq) & MAIL_FLAGGED) == 0;
		if (mailbox_msg_change_flags(w->box, seq,
				set ? MAILBOX_FLAGS_ADD : MAILBOX_FLAGS_REMOVE,
				MAIL_FLAGGED, 0, error_r) == 0) {
			printf("F %u %d\n", uid, set);
			return;
		}
	}
}

static void writer_expunge(struct writer *w, const char **error_r)
{
	if (w->own_count == 0)
		return;
	unsigned int i = (unsigned int)random() % w->own_count;
	uint32_t uid = w->own[i], seq = writer_find(w, uid, error_r);
	w->own[i] = w->own[--w->own_count];
	if (seq != 0 && mailbox_msg_expunge(w->box, seq, error_r) == 0)
		printf("X %u\n", uid);
}

int main(int argc, char *argv[])
{
	struct writer w = { .tag = NULL };
	const char *error;

	if (argc != 6) {
		fprintf(stderr, "usage: %s root mailbox ops seed tag\n", argv[0]);
		return 2;
	}
	unsigned int ops = (unsigned int)strtoul(argv[3], NULL, 10);
	srandom((unsigned int)strtoul(argv[4], NULL, 10));
	w.tag = argv[5];
	if (mailbox_open(argv[1], argv[2], 0, &w.box, &error) <= 0) {
		fprintf(stderr, "open failed\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (unsigned int i = 0; i < ops; i++) {
		error = NULL;
		unsigned int r = (unsigned int)random() % 10;
		if (r < 5 && writer_append(&w, &error) < 0)
			fprintf(stderr, "append: %s\n", error);
		else if (r >= 5 && r < 8)
			writer_flag(&w, &error);
		else if (r >= 8)
			writer_expunge(&w, &error);
	}
	mailbox_close(&w.box);
	return 0;
}
