#ifndef AUTH_TOKEN_H
#define AUTH_TOKEN_H
/* One-time login tokens. auth issues one to an imap-login process when a
   client's credentials check out; master redeems it to learn who logged
   in. A token is AUTH_TOKEN_BYTES random bytes sent as hex, bound to the
   pid of the imap-login it was issued to, usable once, and expires after
   AUTH_TOKEN_TTL_MSECS. Its first two bytes are the number of its slot
   in the table and the next six the table's random issuer id (neither
   secret), the rest random: a lookup compares that one slot, in constant
   time. */

#include "master-service.h"   /* AUTH_TOKEN_BYTES */
#include "auth-db.h"

#define AUTH_TOKEN_HEX_LEN (AUTH_TOKEN_BYTES * 2)
/* A handoff takes milliseconds; 30 s covers a loaded master. */
#define AUTH_TOKEN_TTL_MSECS (30 * 1000)
/* Tokens alive at once: logins in the last 30 s that master did not
   redeem yet. When full, the oldest is dropped (its login then fails). */
#define AUTH_TOKEN_MAX 4096

struct auth_token_table;

/* max_tokens: 1 .. 65536 (the slot number's two bytes). */
struct auth_token_table *auth_token_table_create(unsigned int max_tokens);
void auth_token_table_destroy(struct auth_token_table **table);

/* Store a new token for user and login_pid; writes its hex form (NUL-
   terminated) to token_r. */
void auth_token_issue(struct auth_token_table *table,
		      const struct auth_user_info *user, pid_t login_pid,
		      uint64_t now_msecs, char token_r[AUTH_TOKEN_HEX_LEN + 1]);
/* Returns 1 and the user (copied into pool) if token_hex is a live token
   issued to login_pid; -1 if another table issued it (the auth process
   before a restart: the login may authenticate again with this one);
   else 0. Either way a token that matched is removed: a second attempt
   fails. */
int auth_token_redeem(struct auth_token_table *table, const char *token_hex,
		      pid_t login_pid, uint64_t now_msecs, pool_t pool,
		      struct auth_user_info *user_r);
/* Live tokens (for tests and limits). Expired ones are dropped here. */
unsigned int auth_token_count(struct auth_token_table *table,
			      uint64_t now_msecs);

#endif
