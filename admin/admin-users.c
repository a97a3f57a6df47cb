/* moatadm -A: a command for every user of the passwd-file userdbs, a few
   users at once (admin-mail.h). Each worker is a fork of this moatadm
   with its own master connections and IMAP sessions; it hands its rows
   to the parent through a pipe (admin_output_forward()), and the parent
   prints them as one document, so memory stays one row per worker. */
#include "admin-common.h"
#include "admin-conn.h"
#include "admin-imap.h"
#include "admin-mail.h"
#include "admin-output.h"
#include "admin-progress.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>

/* Users worked on at once. Each holds an admin connection to master
   (which takes ADMIN_CONNS_MAX, 16) and keeps one imap process busy: a
   few use the spare cores without crowding out the users' own
   sessions or other moatadm runs. */
#define ADMIN_USERS_PARALLEL 4

struct admin_users {
	char **names;
	unsigned int count, alloc;
};

static void admin_users_row(void *context, const char *const *kv)
{
	struct admin_users *users = context;

	if (kv[0] == NULL || kv[1] == NULL || strcmp(kv[0], "user") != 0)
		return;
	if (users->count == users->alloc) {
		users->alloc = users->alloc == 0 ? 64 : users->alloc * 2;
		users->names = i_realloc(users->names,
					 i_mul_size(users->alloc, sizeof(char *)));
	}
	users->names[users->count++] = i_strdup(kv[1]);
}

static void admin_users_free(struct admin_users *users)
{
	for (unsigned int i = 0; i < users->count; i++)
		free(users->names[i]);
	free(users->names);
}

static int admin_user_worst(int worst, int ret)
{
	return ret != 0 && ret != ADMIN_EXIT_NOTFOUND ? ret : worst;
}

/* The worker's users (every workers-th from first); never returns. */
static void ATTR_NORETURN
admin_users_worker(struct admin_ctx *ctx, struct admin_output *out,
		   admin_user_func_t *func, void *context,
		   const struct admin_users *users, unsigned int first,
		   unsigned int workers, int fd)
{
	admin_output_forward(out, fd);
	for (unsigned int i = first; i < users->count; i += workers) {
		admin_output_set_prefix(out, "user", users->names[i]);
		int ret = func(ctx, users->names[i], out, context);
		fflush(stderr);
		if (admin_output_forward_done(fd, ret) < 0)
			break;
	}
	fflush(stderr);
	_exit(0);
}

struct admin_worker {
	pid_t pid;
	int fd;
	unsigned int users, done;
};

/* Read one frame of worker w; false when its pipe is finished. */
static bool admin_users_relay(struct admin_ctx *ctx, struct admin_output *out,
			      struct admin_worker *w, struct admin_progress *progress,
			      int *worst)
{
	int code = 0;
	int ret = admin_output_relay(out, w->fd, ctx->set->imap_max_append_size +
				     ADMIN_IMAP_RESPONSE_SLACK, &code);
	if (ret == 2) {
		w->done++;
		*worst = admin_user_worst(*worst, code);
		admin_progress_add(progress, 1);
	}
	if (ret > 0)
		return true;
	if (ret < 0)
		i_error("worker %d sent a broken frame", (int)w->pid);
	close(w->fd);
	w->fd = -1;
	int status;
	while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) ;
	if (w->done < w->users) {
		i_error("a worker ended (status %d) with %u of its users undone",
			status, w->users - w->done);
		*worst = ADMIN_EXIT_SOFTWARE;
	}
	return false;
}

static int admin_users_parallel(struct admin_ctx *ctx, struct admin_output *out,
				admin_user_func_t *func, void *context,
				const struct admin_users *users,
				struct admin_progress *progress)
{
	struct admin_worker workers[ADMIN_USERS_PARALLEL];
	struct pollfd pfd[ADMIN_USERS_PARALLEL];
	unsigned int count = MIN(users->count, ADMIN_USERS_PARALLEL);
	unsigned int running = 0;
	int worst = 0;

	fflush(stdout);
	fflush(stderr);
	for (unsigned int w = 0; w < count; w++) {
		int fds[2];
		if (pipe2(fds, O_CLOEXEC) < 0)
			i_fatal("pipe() failed: %m");
		pid_t pid = fork();
		if (pid < 0)
			i_fatal("fork() failed: %m");
		if (pid == 0) {
			close(fds[0]);
			for (unsigned int i = 0; i < w; i++)
				close(workers[i].fd);
			admin_users_worker(ctx, out, func, context, users, w,
					   count, fds[1]);
		}
		close(fds[1]);
		workers[w].pid = pid;
		workers[w].fd = fds[0];
		workers[w].done = 0;
		workers[w].users = (users->count - w + count - 1) / count;
		running++;
	}
	while (running > 0) {
		for (unsigned int w = 0; w < count; w++) {
			pfd[w].fd = workers[w].fd;
			pfd[w].events = POLLIN;
			pfd[w].revents = 0;
		}
		if (poll(pfd, count, -1) < 0) {
			if (errno == EINTR)
				continue;
			i_fatal("poll() failed: %m");
		}
		for (unsigned int w = 0; w < count; w++) {
			if (workers[w].fd >= 0 && pfd[w].revents != 0 &&
			    !admin_users_relay(ctx, out, &workers[w], progress,
					       &worst))
				running--;
		}
	}
	return worst;
}

int admin_for_users(struct admin_ctx *ctx, struct admin_output *out,
		    admin_user_func_t *func, void *context)
{
	const char *args[] = { "USERS", NULL };
	struct admin_users users = { .count = 0 };
	const char *code, *text;
	int worst = 0;

	int ret = admin_conn_request(ctx, args, admin_users_row, &users, NULL,
				     &code, &text);
	ctx->errors_to_stderr = true;
	if (ret != 0) {
		admin_users_free(&users);
		return admin_fail(ctx, ret, code, "%s", text);
	}
	struct admin_progress *progress =
		admin_progress_begin(ctx, "users", users.count);
	if (users.count > 1) {
		worst = admin_users_parallel(ctx, out, func, context, &users,
					     progress);
	} else {
		for (unsigned int i = 0; i < users.count; i++) {
			admin_output_set_prefix(out, "user", users.names[i]);
			ret = func(ctx, users.names[i], out, context);
			worst = admin_user_worst(worst, ret);
			admin_progress_add(progress, 1);
		}
		admin_output_set_prefix(out, NULL, NULL);
	}
	admin_progress_end(&progress);
	admin_users_free(&users);
	return worst;
}
