/* The PROXY protocol header of a haproxy = yes listener's connection
   (lib/haproxy-header.h): only from haproxy_trusted_networks, within
   haproxy_timeout, at most HAPROXY_HEADER_MAX_SIZE bytes. The header is
   read without taking a byte past it (peek, then read exactly what is
   header), so a TLS hello that follows at once stays in the socket for
   the handshake. */
#include "imap-login-common.h"
#include "login-client.h"
#include "haproxy-header.h"

#include <sys/socket.h>

static void haproxy_refuse(struct login_client *client, const char *why)
{
	pool_t pool = pool_create("haproxy refuse", 256);

	/* why is ours or the parser's static text, never client bytes */
	login_client_destroy(client, p_strdup_printf(pool,
		"PROXY header refused: %s", why));
	pool_unref(&pool);
}

static void haproxy_apply(struct login_client *client,
			  const struct haproxy_header *hdr)
{
	login_client_haproxy_free(client);
	if (hdr->have_addresses) {
		/* Both fit: HAPROXY_IP_STR_MAX == LOGIN_IP_STR_MAX */
		memcpy(client->remote_ip, hdr->src_ip, sizeof(client->remote_ip));
		memcpy(client->local_ip, hdr->dst_ip, sizeof(client->local_ip));
		client->remote_port = hdr->src_port;
		client->local_port = hdr->dst_port;
	}
	client->haproxy_ssl = hdr->client_ssl;
	i_debug("PROXY v%u header: rip=%s, rport=%u, lip=%s, lport=%u%s",
		hdr->version, client->remote_ip, client->remote_port,
		client->local_ip, client->local_port,
		hdr->client_ssl ? ", ssl" : "");
	login_client_admit(client);
}

/* Returns 1 when the header is complete (hdr_r filled), 0 to wait for
   more, -1 when the client was destroyed. */
static int haproxy_read(struct login_client *client,
			struct haproxy_header *hdr_r)
{
	size_t have = client->haproxy_size;
	const char *error = NULL;

	ssize_t n = recv(client->fd, client->haproxy_buf + have,
			 HAPROXY_HEADER_MAX_SIZE - have, MSG_PEEK);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n <= 0) {
		haproxy_refuse(client, n == 0 ? "connection closed before it" :
			       strerror(errno));
		return -1;
	}
	enum haproxy_parse_result res =
		haproxy_header_parse(client->haproxy_buf, have + (size_t)n,
				     hdr_r, &error);
	if (res == HAPROXY_PARSE_ERROR) {
		haproxy_refuse(client, error);
		return -1;
	}
	/* MORE: every byte seen is header. DONE: take it, not a byte more. */
	size_t take = res == HAPROXY_PARSE_DONE ? hdr_r->size - have :
		(size_t)n;
	ssize_t r = read(client->fd, client->haproxy_buf + have, take);
	if (r <= 0) {
		haproxy_refuse(client, r == 0 ? "connection closed" :
			       strerror(errno));
		return -1;
	}
	client->haproxy_size += (size_t)r;
	return res == HAPROXY_PARSE_DONE && client->haproxy_size == hdr_r->size ?
		1 : 0;
}

static void haproxy_input(void *context)
{
	struct login_client *client = context;
	struct haproxy_header hdr;

	login_client_ref(client);
	if (haproxy_read(client, &hdr) > 0)
		haproxy_apply(client, &hdr);
	login_client_unref(&client);
}

static void haproxy_timeout(void *context)
{
	struct login_client *client = context;

	client->to_haproxy = NULL;
	login_client_ref(client);
	haproxy_refuse(client, "not received within haproxy_timeout");
	login_client_unref(&client);
}

void login_client_haproxy_start(struct login_client *client)
{
	struct login_process *lp = client->lp;
	const struct moat_settings *set = lp->set;

	/* Anyone else could claim any address: never a plain client. */
	if (!moat_settings_net_match(set->haproxy_trusted_networks,
				     client->remote_ip)) {
		haproxy_refuse(client, "connection not from "
			       "haproxy_trusted_networks");
		return;
	}
	client->state = LOGIN_CLIENT_STATE_PROXY;
	client->haproxy_buf = i_malloc(HAPROXY_HEADER_MAX_SIZE);
	client->io = io_add(lp->ioloop, client->fd, IO_READ, haproxy_input,
			    client);
	client->to_haproxy = timeout_add(lp->ioloop,
		set->haproxy_timeout * 1000U, haproxy_timeout, client);
}

void login_client_haproxy_free(struct login_client *client)
{
	if (client->to_haproxy != NULL)
		timeout_remove(&client->to_haproxy);
	if (client->haproxy_buf != NULL) {
		io_remove(&client->io);
		i_free(client->haproxy_buf);
	}
}
