/* moatadm's index check (mailbox-check.h). */
#include "lib.h"
#include "mailbox-private.h"
#include "mailbox-check.h"

int mailbox_index_check(struct mailbox *box, bool *rebuilt_r,
			const char **error_r)
{
	*rebuilt_r = mail_index_was_rebuilt(box->index);
	return mail_index_view_check(box->view, error_r) ? 0 : -1;
}
