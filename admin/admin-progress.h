#ifndef ADMIN_PROGRESS_H
#define ADMIN_PROGRESS_H
/* Progress of moatadm's long work on stderr: a bar with the rate and an
   estimate of the time left on a terminal, redrawn in place; otherwise
   (a log, a pipe, the tests) a plain line now and then and one at the
   end; nothing with --quiet. */

#include "admin-common.h"

/* Plain lines come at most this often: a log of a run over many
   thousand users stays readable. */
#define ADMIN_PROGRESS_PLAIN_MSECS 5000
/* The bar is redrawn at most this often. */
#define ADMIN_PROGRESS_BAR_MSECS 200
/* Width of the bar in characters. */
#define ADMIN_PROGRESS_BAR_WIDTH 30

struct admin_progress;

/* what: the unit counted ("users"), a static string; total: how many
   are expected (0: unknown). NULL with --quiet (the others accept it). */
struct admin_progress *admin_progress_begin(struct admin_ctx *ctx,
					    const char *what, uint64_t total);
/* count more are done. */
void admin_progress_add(struct admin_progress *progress, uint64_t count);
/* The final line (plain) or the finished bar and a newline. */
void admin_progress_end(struct admin_progress **progress);

#endif
