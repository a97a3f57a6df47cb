/* STARTTLS and implicit TLS for a pre-auth client: the handshake runs on
   the event loop like any other I/O, so a slow, broken or vanished TLS
   peer costs only its own slot. */
#include "imap-login-common.h"
#include "login-client.h"
#include "login-ssl.h"
#include "strfuncs.h"

static void client_tls_step(struct login_client *client);

static void client_tls_io(void *context)
{
	struct login_client *client = context;

	login_client_ref(client);
	client_tls_step(client);
	login_client_unref(&client);
}

static void client_tls_timeout(void *context)
{
	struct login_client *client = context;

	client->to_handshake = NULL;
	login_client_ref(client);
	login_client_destroy(client, "TLS handshake timed out");
	login_client_unref(&client);
}

static void client_tls_done(struct login_client *client)
{
	io_remove(&client->io_tls);
	if (client->to_handshake != NULL)
		timeout_remove(&client->to_handshake);
	unsigned char cbind[LOGIN_SSL_CBIND_SIZE];
	client->secured = true;
	if (login_ssl_get_channel_binding(client->ssl, cbind) == 0)
		client->cbind_b64 = p_base64_encode(client->pool, cbind, sizeof(cbind));
	safe_memset(cbind, 0, sizeof(cbind));
	/* Without ssl_verify_client_cert no certificate is asked for. */
	if (client->lp->set->ssl_verify_client_cert) {
		client->cert_user = login_ssl_get_cert_user(client->ssl,
			client->pool, client->lp->set->ssl_cert_username_field);
	}
	login_client_update_auth_flags(client);
	login_client_streams_create(client);
	client->state = LOGIN_CLIENT_STATE_CMD;
	if (client->implicit_tls)
		login_client_send_greeting(client);
	/* Arms the reader (and reads what OpenSSL already decrypted). */
	login_client_input_resume(client);
}

static void client_tls_step(struct login_client *client)
{
	enum io_condition cond;
	const char *error;
	int ret = login_ssl_handshake(client->ssl, &cond, &error);

	if (ret > 0) {
		client->lp->stats.tls_ok++;
		client_tls_done(client);
		return;
	}
	if (ret < 0) {
		client->lp->stats.tls_failed++;
		pool_t pool = pool_create("tls error", 512);
		login_client_destroy(client, p_strdup_printf(pool,
			"TLS handshake failed: %s", error));
		pool_unref(&pool);
		return;
	}
	io_remove(&client->io_tls);
	client->io_tls = io_add(client->lp->ioloop, client->fd, cond,
				client_tls_io, client);
}

void login_client_tls_start(struct login_client *client)
{
	struct login_process *lp = client->lp;

	i_assert(client->state == LOGIN_CLIENT_STATE_TLS && client->ssl == NULL);
	if (client->to_handshake != NULL)
		timeout_remove(&client->to_handshake);
	/* The plaintext streams are done with (their buffers are empty). */
	io_remove(&client->io);
	i_stream_destroy(&client->input);
	o_stream_destroy(&client->output);
	client->ssl = login_ssl_create(lp->ssl_ctx, client->fd);
	if (client->ssl == NULL) {
		login_client_destroy(client, "TLS initialization failed");
		return;
	}
	client->to_handshake = timeout_add(lp->ioloop,
		LOGIN_TLS_HANDSHAKE_SECS * 1000, client_tls_timeout, client);
	client_tls_step(client);
}

static void client_tls_start_deferred(void *context)
{
	struct login_client *client = context;

	client->to_handshake = NULL;
	login_client_ref(client);
	login_client_tls_start(client);
	login_client_unref(&client);
}

void login_client_starttls(struct login_client *client)
{
	size_t size;

	/* Whatever followed STARTTLS in cleartext may come from a
	   man-in-the-middle; it must not run as if sent over TLS. */
	(void)i_stream_get_data(client->input, &size);
	i_stream_skip(client->input, size);
	io_remove(&client->io);
	client->state = LOGIN_CLIENT_STATE_TLS;
	/* Not from inside the command: the input loop still uses the
	   streams. With output pending, client_output_flushed() starts it. */
	if (o_stream_get_buffer_used(client->output) == 0) {
		client->to_handshake = io_loop_defer(client->lp->ioloop,
			client_tls_start_deferred, client);
	}
}

void login_client_tls_free(struct login_client *client)
{
	io_remove(&client->io_tls);
	if (client->to_handshake != NULL)
		timeout_remove(&client->to_handshake);
	if (client->ssl == NULL)
		return;
	/* After a kTLS handoff a close_notify from us would end the imap
	   process's session: the socket is still open there. */
	if (client->secured && !client->ktls_handoff)
		login_ssl_shutdown(client->ssl);
	login_ssl_destroy(&client->ssl);
}
