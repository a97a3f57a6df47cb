/* COMPRESS (RFC 4978 3): DEFLATE is the only mechanism. The tagged OK
   goes out uncompressed; compression starts right after its CRLF, so the
   command waits until the OK (and whatever was queued before it) is on
   the socket, then has the connection's streams switched when it ends
   (client->compress_start, imap-compress.h). The client must not send
   anything before it has seen the OK, and whatever it did send after the
   command line is inflated as compressed input. */
#include "imap-common.h"
#include "imap-commands.h"

#include <strings.h>

bool cmd_compress(struct client_command *cmd)
{
	struct client *client = cmd->client;
	const char *name;

	/* cmd->context is set (to cmd) once the OK is queued */
	if (cmd->context != NULL) {
		if (o_stream_get_buffer_used(client->output) > 0) {
			cmd->wait = CLIENT_WAIT_OUTPUT;
			return false;
		}
		client->compress_start = true;
		return true;
	}
	if (!imap_arg_get_atom(&cmd->args[0], &name) ||
	    !imap_arg_is_eol(&cmd->args[1])) {
		client_send_command_error(cmd,
			"COMPRESS takes one mechanism name.");
		return true;
	}
	if (client->compress != NULL) {
		/* RFC 4978 3: BAD when COMPRESS is already active; the code
		   says why (Dovecot answers NO [COMPRESSIONACTIVE]) */
		client_send_command_error(cmd,
			"[COMPRESSIONACTIVE] DEFLATE is already active.");
		return true;
	}
	if (strcasecmp(name, "DEFLATE") != 0) {
		client_send_command_error(cmd,
			"Unknown compression mechanism.");
		return true;
	}
	client_send_tagline(cmd, "OK DEFLATE active.");
	cmd->context = cmd;
	cmd->wait = CLIENT_WAIT_OUTPUT;
	return false;
}
