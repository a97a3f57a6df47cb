#ifndef MAIL_FLAGS_H
#define MAIL_FLAGS_H
/* The IMAP system flags as bits. \Recent is not stored on disk: it belongs
   to the view of one session (mailbox.h). */

enum mail_flags {
	MAIL_ANSWERED = 0x01,
	MAIL_FLAGGED = 0x02,
	MAIL_DELETED = 0x04,
	MAIL_SEEN = 0x08,
	MAIL_DRAFT = 0x10,
	MAIL_RECENT = 0x20,
};

/* The flags a client may set and that survive a reopen. */
#define MAIL_FLAGS_PERMANENT \
	(MAIL_ANSWERED | MAIL_FLAGGED | MAIL_DELETED | MAIL_SEEN | MAIL_DRAFT)

#endif
