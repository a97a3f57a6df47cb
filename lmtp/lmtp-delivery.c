/* The pool of delivery sockets (lmtp-delivery.h). */
#include "lmtp-common.h"
#include "lmtp-delivery.h"

#include <poll.h>
#include <time.h>

/* lmtp's userdb keys: master's RCPT field limit (lmtp-client.c). */
#define LMTP_DELIVERY_KEY_MAX 256

struct lmtp_delivery {
	struct lmtp_delivery *next, *prev;   /* proc->delivery_pool */
	struct lmtp_process *proc;
	struct ipc_conn *ipc;
	char key[LMTP_DELIVERY_KEY_MAX + 1];
	char user[LMTP_DELIVERY_KEY_MAX + 1];
	lmtp_delivery_callback_t *callback;  /* NULL until attached */
	void *context;
	bool pooled;
	struct timeout *to_expire;           /* while pooled */
	/* master's lookup is this old then: no reuse from then on, however
	   often the socket was used meanwhile */
	uint64_t expires_msecs;
};

static uint64_t now_msecs(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pool_unlink(struct lmtp_delivery *d)
{
	struct lmtp_process *proc = d->proc;

	if (d->prev != NULL)
		d->prev->next = d->next;
	else
		proc->delivery_pool = d->next;
	if (d->next != NULL)
		d->next->prev = d->prev;
	d->next = d->prev = NULL;
	d->pooled = false;
	proc->delivery_pool_count--;
	timeout_remove(&d->to_expire);
}

static void delivery_free(struct lmtp_delivery *d)
{
	ipc_conn_destroy(&d->ipc);
	i_free(d);
}

static void delivery_input(void *context, const char *const *args, int fd)
{
	struct lmtp_delivery *d = context;

	if (d->callback != NULL) {
		d->callback(d->context, args, fd);
		return;
	}
	/* idle: the process went away (or said something unasked) */
	i_close_fd(&fd);
	if (args != NULL)
		i_error("user %s: unexpected record on an idle delivery "
			"socket", d->user);
	i_assert(d->pooled);
	pool_unlink(d);
	delivery_free(d);
}

struct lmtp_delivery *
lmtp_delivery_create(struct lmtp_process *proc, int fd, const char *key,
		     const char *user)
{
	struct lmtp_delivery *d = i_malloc(sizeof(*d));

	d->proc = proc;
	d->expires_msecs = now_msecs() + LMTP_DELIVERY_REUSE_MSECS;
	/* longer ones are never pooled (empty key) */
	if (strlen(key) <= LMTP_DELIVERY_KEY_MAX &&
	    strlen(user) <= LMTP_DELIVERY_KEY_MAX) {
		strcpy(d->key, key);
		strcpy(d->user, user);
	}
	d->ipc = ipc_conn_create(proc->ioloop, fd, "delivery", IPC_PROTO_DELIVER,
				 IPC_PROTO_MAJOR, IPC_PROTO_MINOR,
				 delivery_input, d);
	return d;
}

/* Nothing waits on an idle socket: readable means closed (or a record
   nobody asked for), so it must not be handed out. */
static bool delivery_idle_ok(struct lmtp_delivery *d)
{
	struct pollfd pfd = { .fd = ipc_conn_get_fd(d->ipc), .events = POLLIN };

	return poll(&pfd, 1, 0) == 0;
}

struct lmtp_delivery *
lmtp_delivery_take(struct lmtp_process *proc, const char *key)
{
	struct lmtp_delivery *d, *next;

	for (d = proc->delivery_pool; d != NULL; d = next) {
		next = d->next;
		if (strcmp(d->key, key) != 0)
			continue;
		pool_unlink(d);
		if (now_msecs() >= d->expires_msecs || !delivery_idle_ok(d)) {
			delivery_free(d);
			continue;
		}
		return d;
	}
	return NULL;
}

void lmtp_delivery_attach(struct lmtp_delivery *delivery,
			  lmtp_delivery_callback_t *callback, void *context)
{
	i_assert(!delivery->pooled);
	delivery->callback = callback;
	delivery->context = context;
}

const char *lmtp_delivery_get_user(const struct lmtp_delivery *delivery)
{
	return delivery->user;
}

int lmtp_delivery_send(struct lmtp_delivery *delivery, int fd, const char *id,
		       const char *mailbox, const char *return_path,
		       const char *delivered_to)
{
	return ipc_sendv(delivery->ipc, fd, "DELIVER", id, mailbox,
			 return_path, delivered_to, NULL);
}

static void delivery_expire(void *context)
{
	struct lmtp_delivery *d = context;

	d->to_expire = NULL;
	pool_unlink(d);
	delivery_free(d);
}

void lmtp_delivery_release(struct lmtp_delivery **_delivery, bool in_step)
{
	struct lmtp_delivery *d = *_delivery;
	struct lmtp_process *proc;

	if (d == NULL)
		return;
	*_delivery = NULL;
	proc = d->proc;
	d->callback = NULL;
	d->context = NULL;
	uint64_t now = now_msecs();
	if (!in_step || d->key[0] == '\0' || proc->shutting_down ||
	    now >= d->expires_msecs ||
	    proc->delivery_pool_count >= LMTP_DELIVERY_POOL_MAX) {
		delivery_free(d);
		return;
	}
	d->next = proc->delivery_pool;
	if (proc->delivery_pool != NULL)
		proc->delivery_pool->prev = d;
	proc->delivery_pool = d;
	d->pooled = true;
	proc->delivery_pool_count++;
	d->to_expire = timeout_add(proc->ioloop,
				   (unsigned int)(d->expires_msecs - now),
				   delivery_expire, d);
}

void lmtp_delivery_pool_deinit(struct lmtp_process *proc)
{
	while (proc->delivery_pool != NULL) {
		struct lmtp_delivery *d = proc->delivery_pool;
		pool_unlink(d);
		delivery_free(d);
	}
}
