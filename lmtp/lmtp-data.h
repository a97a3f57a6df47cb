#ifndef LMTP_DATA_H
#define LMTP_DATA_H
/* The message of one transaction, written to a memfd as it arrives: DATA
   with its dot-stuffing undone and its end line found (RFC 5321 4.5.2),
   or BDAT chunks taken as they are (RFC 3030). The memfd holds no file in
   any file system, so lmtp needs none, and it is passed to each
   recipient's imap process sealed: nobody can change it after the end. */

#include "lib.h"

/* Bytes collected before each write(2) to the memfd. */
#define LMTP_DATA_BUFFER_SIZE (64 * 1024)

struct lmtp_data;

/* limit: bytes the message may have (0 = none); more makes it too big,
   and the rest is read and dropped so the reply comes after the end.
   NULL with errno if memfd_create() failed. */
struct lmtp_data *lmtp_data_create(uint64_t limit);
void lmtp_data_destroy(struct lmtp_data **data);

/* DATA bytes: returns how many were consumed; fewer than size only when
   the end line was found (lmtp_data_is_done() then), the rest being the
   next commands (pipelining). */
size_t lmtp_data_feed_dotted(struct lmtp_data *data, const void *bytes,
			     size_t size);
/* BDAT bytes, all of them message. */
void lmtp_data_feed_raw(struct lmtp_data *data, const void *bytes,
			size_t size);
bool lmtp_data_is_done(const struct lmtp_data *data);

/* Flush, seal and return the memfd (still owned by data) for sending.
   -1 if writing failed (errno kept from the failure); the message is then
   not to be delivered (a temporary failure). */
int lmtp_data_finish(struct lmtp_data *data);
bool lmtp_data_too_big(const struct lmtp_data *data);
/* Bytes of the message (as stored, dot-stuffing removed), counted past
   the limit too. */
uint64_t lmtp_data_size(const struct lmtp_data *data);

#endif
