/* Penalty table: see auth-penalty.h. Linear search over a fixed array:
   a few thousand short string compares per failed login is cheap next
   to the password hash that caused it. */
#include "lib.h"
#include "auth-penalty.h"

struct auth_penalty_entry {
	char ip[AUTH_PENALTY_MAX_IP_LEN + 1];   /* "" = free slot */
	unsigned int failures;
	uint64_t last_msecs;
};

struct auth_penalty {
	unsigned int base_delay_msecs;
	unsigned int max_ips;
	struct auth_penalty_entry *entries;
};

struct auth_penalty *auth_penalty_create(unsigned int base_delay_msecs,
					 unsigned int max_ips)
{
	struct auth_penalty *penalty = i_malloc(sizeof(*penalty));

	i_assert(max_ips > 0);
	penalty->base_delay_msecs = base_delay_msecs;
	penalty->max_ips = max_ips;
	penalty->entries = i_malloc(i_mul_size(max_ips,
					       sizeof(*penalty->entries)));
	return penalty;
}

void auth_penalty_destroy(struct auth_penalty **_penalty)
{
	struct auth_penalty *penalty = *_penalty;

	*_penalty = NULL;
	free(penalty->entries);
	free(penalty);
}

static bool entry_expired(const struct auth_penalty_entry *entry, uint64_t now)
{
	return now < entry->last_msecs ||
		now - entry->last_msecs >= AUTH_PENALTY_EXPIRE_MSECS;
}

/* Keys longer than the bound are cut: addresses are never that long,
   and a cut key still groups the same sender. */
static struct auth_penalty_entry *
auth_penalty_find(struct auth_penalty *penalty, const char *ip)
{
	for (unsigned int i = 0; i < penalty->max_ips; i++) {
		struct auth_penalty_entry *entry = &penalty->entries[i];

		if (entry->ip[0] != '\0' &&
		    strncmp(entry->ip, ip, AUTH_PENALTY_MAX_IP_LEN) == 0)
			return entry;
	}
	return NULL;
}

/* A free slot, else the least recently used one. */
static struct auth_penalty_entry *
auth_penalty_new(struct auth_penalty *penalty, const char *ip)
{
	struct auth_penalty_entry *lru = &penalty->entries[0];

	for (unsigned int i = 0; i < penalty->max_ips; i++) {
		struct auth_penalty_entry *entry = &penalty->entries[i];

		if (entry->ip[0] == '\0') {
			lru = entry;
			break;
		}
		if (entry->last_msecs < lru->last_msecs)
			lru = entry;
	}
	memset(lru, 0, sizeof(*lru));
	snprintf(lru->ip, sizeof(lru->ip), "%s", ip);
	return lru;
}

static unsigned int auth_penalty_delay(const struct auth_penalty *penalty,
				       unsigned int failures)
{
	uint64_t delay = penalty->base_delay_msecs;

	for (unsigned int i = 1; i < failures &&
	     delay < AUTH_PENALTY_MAX_DELAY_MSECS; i++)
		delay *= 2;
	return (unsigned int)MIN(delay, AUTH_PENALTY_MAX_DELAY_MSECS);
}

unsigned int auth_penalty_failure(struct auth_penalty *penalty, const char *ip,
				  uint64_t now_msecs)
{
	struct auth_penalty_entry *entry;

	if (ip[0] == '\0')
		ip = "unknown";
	entry = auth_penalty_find(penalty, ip);
	if (entry == NULL)
		entry = auth_penalty_new(penalty, ip);
	else if (entry_expired(entry, now_msecs))
		entry->failures = 0;
	if (entry->failures < UINT_MAX)
		entry->failures++;
	entry->last_msecs = now_msecs;
	return auth_penalty_delay(penalty, entry->failures);
}

void auth_penalty_success(struct auth_penalty *penalty, const char *ip)
{
	struct auth_penalty_entry *entry;

	if (ip[0] == '\0')
		ip = "unknown";
	entry = auth_penalty_find(penalty, ip);
	if (entry != NULL)
		memset(entry, 0, sizeof(*entry));
}

unsigned int auth_penalty_get_failures(struct auth_penalty *penalty,
				       const char *ip, uint64_t now_msecs)
{
	struct auth_penalty_entry *entry = auth_penalty_find(penalty, ip);

	if (entry == NULL || entry_expired(entry, now_msecs))
		return 0;
	return entry->failures;
}
