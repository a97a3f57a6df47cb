/* Token table: see auth-token.h. A fixed array; a token's first
   AUTH_TOKEN_SLOT_BYTES name its slot, so a redeem compares one slot
   (comparing all 4096 in constant time was most of auth's CPU time per
   login). The slot number is no secret: it tells which slot to look at,
   and the time of the constant-time compare of that slot does not depend
   on the rest of the token. */
#include "lib.h"
#include "strfuncs.h"
#include "mempool.h"
#include "auth-token.h"

/* The slot number at the token's start, big-endian: 16 bits cover
   AUTH_TOKEN_MAX. Then the table's issuer id, random per table (per auth
   process): a token that a reload's previous auth issued is told from a
   wrong one. The other 24 bytes (192 bits) are random. */
#define AUTH_TOKEN_SLOT_BYTES 2
#define AUTH_TOKEN_ISSUER_BYTES 6

struct auth_token {
	bool used;
	unsigned char token[AUTH_TOKEN_BYTES];
	pid_t login_pid;
	uint64_t created_msecs;
	struct auth_user_info user;   /* strings malloc'd, freed on removal */
};

struct auth_token_table {
	struct auth_token *tokens;
	unsigned int max_tokens;
	unsigned char issuer[AUTH_TOKEN_ISSUER_BYTES];
};

struct auth_token_table *auth_token_table_create(unsigned int max_tokens)
{
	struct auth_token_table *table = i_malloc(sizeof(*table));

	i_assert(max_tokens > 0 && max_tokens <= 1U << (8 * AUTH_TOKEN_SLOT_BYTES));
	table->max_tokens = max_tokens;
	random_fill(table->issuer, sizeof(table->issuer));
	table->tokens = i_malloc(i_mul_size(max_tokens, sizeof(*table->tokens)));
	return table;
}

static void auth_token_clear(struct auth_token *token)
{
	free((char *)token->user.user);
	free((char *)token->user.home);
	free((char *)token->user.mail);
	safe_memset(token, 0, sizeof(*token));
}

void auth_token_table_destroy(struct auth_token_table **_table)
{
	struct auth_token_table *table = *_table;

	*_table = NULL;
	for (unsigned int i = 0; i < table->max_tokens; i++)
		auth_token_clear(&table->tokens[i]);
	free(table->tokens);
	free(table);
}

static bool auth_token_expired(const struct auth_token *token, uint64_t now)
{
	return now - token->created_msecs >= AUTH_TOKEN_TTL_MSECS ||
		now < token->created_msecs;
}

/* A free slot, else an expired one, else the oldest. */
static struct auth_token *auth_token_slot(struct auth_token_table *table,
					  uint64_t now)
{
	struct auth_token *oldest = &table->tokens[0];

	for (unsigned int i = 0; i < table->max_tokens; i++) {
		struct auth_token *token = &table->tokens[i];

		if (!token->used || auth_token_expired(token, now))
			return token;
		if (token->created_msecs < oldest->created_msecs)
			oldest = token;
	}
	return oldest;
}

static void hex_encode(const unsigned char *data, size_t size, char *dest)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < size; i++) {
		dest[i * 2] = hex[data[i] >> 4];
		dest[i * 2 + 1] = hex[data[i] & 0x0f];
	}
	dest[size * 2] = '\0';
}


static int hex_decode_token(const char *hex, unsigned char dest[AUTH_TOKEN_BYTES])
{
	if (strlen(hex) != AUTH_TOKEN_HEX_LEN)
		return -1;
	for (unsigned int i = 0; i < AUTH_TOKEN_BYTES; i++) {
		int hi = hex_digit_value(hex[i * 2]), lo = hex_digit_value(hex[i * 2 + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		dest[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

void auth_token_issue(struct auth_token_table *table,
		      const struct auth_user_info *user, pid_t login_pid,
		      uint64_t now_msecs, char token_r[AUTH_TOKEN_HEX_LEN + 1])
{
	struct auth_token *token = auth_token_slot(table, now_msecs);
	unsigned int slot = (unsigned int)(token - table->tokens);

	auth_token_clear(token);
	token->used = true;
	random_fill(token->token, sizeof(token->token));
	token->token[0] = (unsigned char)(slot >> 8);
	token->token[1] = (unsigned char)(slot & 0xff);
	memcpy(token->token + AUTH_TOKEN_SLOT_BYTES, table->issuer,
	       sizeof(table->issuer));
	token->login_pid = login_pid;
	token->created_msecs = now_msecs;
	token->user.user = i_strdup(user->user);
	token->user.uid = user->uid;
	token->user.gid = user->gid;
	token->user.home = i_strdup(user->home);
	token->user.mail = i_strdup(user->mail);
	token->user.quota_storage_set = user->quota_storage_set;
	token->user.quota_storage = user->quota_storage;
	token->user.quota_messages_set = user->quota_messages_set;
	token->user.quota_messages = user->quota_messages;
	hex_encode(token->token, sizeof(token->token), token_r);
}

static void auth_token_copy_user(pool_t pool, const struct auth_user_info *src,
				 struct auth_user_info *dest)
{
	dest->user = p_strdup(pool, src->user);
	dest->uid = src->uid;
	dest->gid = src->gid;
	dest->home = p_strdup(pool, src->home);
	dest->mail = p_strdup(pool, src->mail);
	dest->quota_storage_set = src->quota_storage_set;
	dest->quota_storage = src->quota_storage;
	dest->quota_messages_set = src->quota_messages_set;
	dest->quota_messages = src->quota_messages;
}

int auth_token_redeem(struct auth_token_table *table, const char *token_hex,
		      pid_t login_pid, uint64_t now_msecs, pool_t pool,
		      struct auth_user_info *user_r)
{
	unsigned char wanted[AUTH_TOKEN_BYTES];
	struct auth_token *match = NULL, *token;
	unsigned int slot;
	int ret = 0;

	if (hex_decode_token(token_hex, wanted) < 0)
		return 0;
	if (memcmp(wanted + AUTH_TOKEN_SLOT_BYTES, table->issuer,
		   sizeof(table->issuer)) != 0) {
		safe_memset(wanted, 0, sizeof(wanted));
		return -1;
	}
	slot = (unsigned int)wanted[0] << 8 | wanted[1];
	if (slot < table->max_tokens) {
		token = &table->tokens[slot];
		if (mem_equals_timing_safe(token->token, wanted,
					   sizeof(wanted)) && token->used)
			match = token;
	}
	safe_memset(wanted, 0, sizeof(wanted));
	if (match == NULL)
		return 0;
	if (match->login_pid == login_pid &&
	    !auth_token_expired(match, now_msecs)) {
		auth_token_copy_user(pool, &match->user, user_r);
		ret = 1;
	}
	auth_token_clear(match);
	return ret;
}

unsigned int auth_token_count(struct auth_token_table *table,
			      uint64_t now_msecs)
{
	unsigned int count = 0;

	for (unsigned int i = 0; i < table->max_tokens; i++) {
		struct auth_token *token = &table->tokens[i];

		if (token->used && auth_token_expired(token, now_msecs))
			auth_token_clear(token);
		else if (token->used)
			count++;
	}
	return count;
}
