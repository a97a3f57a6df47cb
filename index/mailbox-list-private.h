#ifndef MAILBOX_LIST_PRIVATE_H
#define MAILBOX_LIST_PRIVATE_H
/* Shared by mailbox-list.c, mailbox-list-ops.c and
   mailbox-subscriptions.c only. */

#include "mailbox-list.h"

#define MAILBOX_LIST_ERROR_MAX 512

/* Format an error into a static buffer (valid until the next call). */
const char *mailbox_list_set_error(const char *fmt, ...) ATTR_FORMAT(1, 2);

/* Read the subscriptions file: normalized names (invalid lines are
   skipped), each and the array i_malloc'd. A missing file is empty.
   Returns 0 or -1 (logged). */
int mailbox_subscriptions_read(const char *root, char ***names_r,
			       unsigned int *count_r);

#endif
