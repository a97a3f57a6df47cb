#ifndef MAIL_CRLF_H
#define MAIL_CRLF_H
/* Reading a message file as IMAP sends it: every bare LF becomes CRLF
   (Maildir files written by MTAs use LF). Files known to be CRLF already
   are read as they are. Reads use pread(), so the fd's offset does not
   matter. The reader does not own fd. */

/* Bytes read from the file per call when converting. */
#define MAIL_CRLF_CHUNK 8192

struct mail_crlf {
	int fd;
	bool convert;
	bool last_cr;       /* the previous file byte was CR */
	bool pending_lf;    /* a CR of an inserted CRLF was returned alone */
	uint64_t phys_pos;  /* next byte of the file */
};

void mail_crlf_init(struct mail_crlf *r, int fd, bool convert);
/* Up to size bytes of the CRLF form. Returns bytes, 0 at the end, -1 on
   error (errno). Never returns more than size. */
ssize_t mail_crlf_read(struct mail_crlf *r, unsigned char *buf, size_t size);
/* Skip count bytes of the CRLF form (for <partial> fetches). Returns 0,
   or -1 on error. Skipping past the end is not an error. */
int mail_crlf_skip(struct mail_crlf *r, uint64_t count);

#endif
