/* Penalty table and per-address queues: see auth-penalty.h. Lookups are
   a linear search over a fixed array: a few thousand short string
   compares per authentication are cheap next to the password hash that
   follows. Entries with waiting slots are also on a list, so admitting
   walks only the addresses that wait. */
#include "lib.h"
#include "auth-penalty.h"

#include <arpa/inet.h>

struct auth_penalty_entry {
	char key[AUTH_PENALTY_MAX_IP_LEN + 1];  /* "" = free */
	unsigned int failures;
	uint64_t decay_msecs;       /* last failure, or last decay step */
	uint64_t next_msecs;        /* earliest start of the next check */
	uint64_t used_msecs;        /* last activity, for eviction */
	unsigned int active, waiting;
	struct auth_penalty_slot *queue_head, *queue_tail;
	/* in the list of entries with waiting slots */
	struct auth_penalty_entry *wait_prev, *wait_next;
	bool on_wait_list;
};

struct auth_penalty {
	unsigned int base_delay_msecs, max_delay_msecs;
	unsigned int max_ips;
	struct auth_penalty_entry *entries;
	struct auth_penalty_entry *wait_list;
	auth_penalty_change_callback_t *change_callback;
	void *change_context;
};

struct auth_penalty *auth_penalty_create(unsigned int base_delay_msecs,
					 unsigned int max_ips)
{
	struct auth_penalty *penalty = i_malloc(sizeof(*penalty));

	i_assert(max_ips > 0 && base_delay_msecs > 0);
	penalty->base_delay_msecs = base_delay_msecs;
	penalty->max_delay_msecs = MAX(base_delay_msecs,
				       AUTH_PENALTY_MAX_DELAY_MSECS);
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

void auth_penalty_set_change_callback(struct auth_penalty *penalty,
				      auth_penalty_change_callback_t *callback,
				      void *context)
{
	penalty->change_callback = callback;
	penalty->change_context = context;
}

static void entry_changed(struct auth_penalty *penalty,
			  const struct auth_penalty_entry *entry, uint64_t now)
{
	struct auth_penalty_state state;

	if (penalty->change_callback == NULL || entry->failures == 0)
		return;
	state.key = entry->key;
	state.failures = entry->failures;
	state.decay_age_msecs = now > entry->decay_msecs ?
		now - entry->decay_msecs : 0;
	state.next_in_msecs = entry->next_msecs > now ?
		entry->next_msecs - now : 0;
	penalty->change_callback(&state, penalty->change_context);
}

void auth_penalty_key(const char *ip, char key_r[AUTH_PENALTY_MAX_IP_LEN + 1])
{
	unsigned char addr[16];

	if (inet_pton(AF_INET6, ip, addr) == 1) {
		static const unsigned char v4mapped[12] = {
			0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		char text[INET6_ADDRSTRLEN];

		if (memcmp(addr, v4mapped, sizeof(v4mapped)) == 0) {
			(void)inet_ntop(AF_INET, addr + 12, key_r,
					AUTH_PENALTY_MAX_IP_LEN + 1);
			return;
		}
		/* One IPv6 client holds at least a /64. */
		memset(addr + 8, 0, 8);
		(void)inet_ntop(AF_INET6, addr, text, sizeof(text));
		snprintf(key_r, AUTH_PENALTY_MAX_IP_LEN + 1, "%s/64", text);
		return;
	}
	snprintf(key_r, AUTH_PENALTY_MAX_IP_LEN + 1, "%s",
		 ip[0] == '\0' ? "unknown" : ip);
}

static unsigned int penalty_delay(const struct auth_penalty *penalty,
				  unsigned int failures)
{
	uint64_t delay = penalty->base_delay_msecs;

	if (failures == 0)
		return 0;
	for (unsigned int i = 1; i < failures &&
	     delay < penalty->max_delay_msecs; i++)
		delay *= 2;
	return (unsigned int)MIN(delay, penalty->max_delay_msecs);
}

/* Forget one failure per AUTH_PENALTY_DECAY_MSECS since the last one. */
static void entry_decay(struct auth_penalty_entry *entry, uint64_t now)
{
	uint64_t steps;

	if (entry->failures == 0 || now <= entry->decay_msecs)
		return;
	steps = (now - entry->decay_msecs) / AUTH_PENALTY_DECAY_MSECS;
	if (steps >= entry->failures) {
		entry->failures = 0;
		return;
	}
	entry->failures -= (unsigned int)steps;
	entry->decay_msecs += steps * AUTH_PENALTY_DECAY_MSECS;
}

static bool entry_in_use(const struct auth_penalty_entry *entry)
{
	return entry->active > 0 || entry->waiting > 0;
}

static struct auth_penalty_entry *
penalty_find(struct auth_penalty *penalty, const char *key)
{
	for (unsigned int i = 0; i < penalty->max_ips; i++) {
		struct auth_penalty_entry *entry = &penalty->entries[i];

		if (entry->key[0] != '\0' && strcmp(entry->key, key) == 0)
			return entry;
	}
	return NULL;
}

/* A free entry, else the least recently used one that nobody waits on
   or runs in; NULL if every address is busy. An evicted address loses
   its failures: an attacker rotating addresses gains nothing he would
   not gain from having that many addresses anyway. */
static struct auth_penalty_entry *
penalty_new(struct auth_penalty *penalty, const char *key)
{
	struct auth_penalty_entry *lru = NULL;

	for (unsigned int i = 0; i < penalty->max_ips; i++) {
		struct auth_penalty_entry *entry = &penalty->entries[i];

		if (entry->key[0] == '\0') {
			lru = entry;
			break;
		}
		if (!entry_in_use(entry) &&
		    (lru == NULL || entry->used_msecs < lru->used_msecs))
			lru = entry;
	}
	if (lru == NULL)
		return NULL;
	memset(lru, 0, sizeof(*lru));
	memcpy(lru->key, key, sizeof(lru->key));
	return lru;
}

static bool entry_may_start(const struct auth_penalty_entry *entry,
			    uint64_t now)
{
	if (entry->failures == 0)
		return entry->active < AUTH_PENALTY_CLEAN_ACTIVE;
	return entry->active == 0 && now >= entry->next_msecs;
}

static void entry_start(struct auth_penalty *penalty,
			struct auth_penalty_entry *entry,
			struct auth_penalty_slot *slot, uint64_t now)
{
	(void)penalty;
	entry->active++;
	entry->used_msecs = now;
	slot->state = AUTH_PENALTY_SLOT_ACTIVE;
}

static void wait_list_add(struct auth_penalty *penalty,
			  struct auth_penalty_entry *entry)
{
	if (entry->on_wait_list)
		return;
	entry->wait_prev = NULL;
	entry->wait_next = penalty->wait_list;
	if (penalty->wait_list != NULL)
		penalty->wait_list->wait_prev = entry;
	penalty->wait_list = entry;
	entry->on_wait_list = true;
}

static void wait_list_remove(struct auth_penalty *penalty,
			     struct auth_penalty_entry *entry)
{
	if (!entry->on_wait_list)
		return;
	if (entry->wait_prev != NULL)
		entry->wait_prev->wait_next = entry->wait_next;
	else
		penalty->wait_list = entry->wait_next;
	if (entry->wait_next != NULL)
		entry->wait_next->wait_prev = entry->wait_prev;
	entry->wait_prev = entry->wait_next = NULL;
	entry->on_wait_list = false;
}

int auth_penalty_begin(struct auth_penalty *penalty,
		       struct auth_penalty_slot *slot, const char *ip,
		       void *context, uint64_t now_msecs)
{
	char key[AUTH_PENALTY_MAX_IP_LEN + 1];
	struct auth_penalty_entry *entry;

	i_assert(slot->state == AUTH_PENALTY_SLOT_NONE);
	auth_penalty_key(ip, key);
	entry = penalty_find(penalty, key);
	if (entry == NULL)
		entry = penalty_new(penalty, key);
	if (entry == NULL)
		return -1;
	entry_decay(entry, now_msecs);
	slot->entry = entry;
	slot->context = context;
	slot->next = NULL;
	if (entry->waiting == 0 && entry_may_start(entry, now_msecs)) {
		entry_start(penalty, entry, slot, now_msecs);
		return 1;
	}
	if (entry->waiting >= AUTH_PENALTY_MAX_WAITING) {
		slot->entry = NULL;
		return -1;
	}
	if (entry->queue_tail != NULL)
		entry->queue_tail->next = slot;
	else
		entry->queue_head = slot;
	entry->queue_tail = slot;
	entry->waiting++;
	entry->used_msecs = now_msecs;
	slot->state = AUTH_PENALTY_SLOT_WAITING;
	wait_list_add(penalty, entry);
	return 0;
}

unsigned int auth_penalty_failure(struct auth_penalty *penalty,
				  struct auth_penalty_slot *slot,
				  uint64_t now_msecs)
{
	struct auth_penalty_entry *entry = slot->entry;
	unsigned int delay;
	uint64_t next;

	i_assert(slot->state == AUTH_PENALTY_SLOT_ACTIVE);
	entry_decay(entry, now_msecs);
	if (entry->failures < AUTH_PENALTY_MAX_FAILURES)
		entry->failures++;
	entry->decay_msecs = now_msecs;
	entry->used_msecs = now_msecs;
	delay = penalty_delay(penalty, entry->failures);
	/* The answer is due after one delay and the next check one more
	   delay later; set here too, so that ending early (the client hung
	   up) does not shorten it. */
	next = now_msecs + 2 * (uint64_t)delay;
	if (next > entry->next_msecs)
		entry->next_msecs = next;
	entry_changed(penalty, entry, now_msecs);
	return delay;
}

static void queue_remove(struct auth_penalty_entry *entry,
			 struct auth_penalty_slot *slot)
{
	struct auth_penalty_slot **p = &entry->queue_head, *prev = NULL;

	while (*p != slot) {
		i_assert(*p != NULL);
		prev = *p;
		p = &(*p)->next;
	}
	*p = slot->next;
	if (entry->queue_tail == slot)
		entry->queue_tail = prev;
	slot->next = NULL;
	entry->waiting--;
}

void auth_penalty_end(struct auth_penalty *penalty,
		      struct auth_penalty_slot *slot, uint64_t now_msecs)
{
	struct auth_penalty_entry *entry = slot->entry;
	uint64_t next;

	switch (slot->state) {
	case AUTH_PENALTY_SLOT_NONE:
		return;
	case AUTH_PENALTY_SLOT_ACTIVE:
		i_assert(entry->active > 0);
		entry->active--;
		entry->used_msecs = now_msecs;
		/* Right or wrong: the address's next check waits a delay
		   after this answer. */
		entry_decay(entry, now_msecs);
		next = now_msecs + penalty_delay(penalty, entry->failures);
		if (entry->failures > 0 && next > entry->next_msecs) {
			entry->next_msecs = next;
			entry_changed(penalty, entry, now_msecs);
		}
		break;
	case AUTH_PENALTY_SLOT_WAITING:
		queue_remove(entry, slot);
		if (entry->waiting == 0)
			wait_list_remove(penalty, entry);
		break;
	}
	slot->state = AUTH_PENALTY_SLOT_NONE;
	slot->entry = NULL;
}

struct auth_penalty_slot *
auth_penalty_next_ready(struct auth_penalty *penalty, uint64_t now_msecs)
{
	for (struct auth_penalty_entry *entry = penalty->wait_list;
	     entry != NULL; entry = entry->wait_next) {
		struct auth_penalty_slot *slot = entry->queue_head;

		entry_decay(entry, now_msecs);
		if (!entry_may_start(entry, now_msecs))
			continue;
		entry->queue_head = slot->next;
		if (entry->queue_tail == slot)
			entry->queue_tail = NULL;
		slot->next = NULL;
		entry->waiting--;
		if (entry->waiting == 0)
			wait_list_remove(penalty, entry);
		entry_start(penalty, entry, slot, now_msecs);
		return slot;
	}
	return NULL;
}

uint64_t auth_penalty_next_wakeup(struct auth_penalty *penalty)
{
	uint64_t wakeup = UINT64_MAX;

	/* A penalised address with nothing running waits for its time;
	   anything else waits for an auth_penalty_end(). */
	for (const struct auth_penalty_entry *entry = penalty->wait_list;
	     entry != NULL; entry = entry->wait_next) {
		if (entry->failures > 0 && entry->active == 0 &&
		    entry->next_msecs < wakeup)
			wakeup = entry->next_msecs;
	}
	return wakeup;
}

void auth_penalty_restore(struct auth_penalty *penalty,
			  const struct auth_penalty_state *state,
			  uint64_t now_msecs)
{
	char key[AUTH_PENALTY_MAX_IP_LEN + 1];
	struct auth_penalty_entry *entry, loaded;
	uint64_t next_in;

	i_assert(state->failures > 0 &&
		 state->failures <= AUTH_PENALTY_MAX_FAILURES);
	/* Decay it as if it had been here all along. */
	memset(&loaded, 0, sizeof(loaded));
	loaded.failures = state->failures;
	loaded.decay_msecs = now_msecs - MIN(state->decay_age_msecs, now_msecs);
	entry_decay(&loaded, now_msecs);
	if (loaded.failures == 0)
		return;
	snprintf(key, sizeof(key), "%s", state->key);
	entry = penalty_find(penalty, key);
	if (entry == NULL) {
		entry = penalty_new(penalty, key);
		if (entry == NULL)
			return;
		entry->used_msecs = loaded.decay_msecs;
	} else {
		entry_decay(entry, now_msecs);
	}
	if (loaded.failures > entry->failures) {
		entry->failures = loaded.failures;
		entry->decay_msecs = loaded.decay_msecs;
	}
	/* No wait longer than a failure's two delays: master is trusted,
	   but a bad number must not lock an address out. */
	next_in = MIN(state->next_in_msecs, 2 * (uint64_t)penalty->max_delay_msecs);
	if (now_msecs + next_in > entry->next_msecs)
		entry->next_msecs = now_msecs + next_in;
}

unsigned int auth_penalty_get_failures(struct auth_penalty *penalty,
				       const char *ip, uint64_t now_msecs)
{
	char key[AUTH_PENALTY_MAX_IP_LEN + 1];
	struct auth_penalty_entry *entry;

	auth_penalty_key(ip, key);
	entry = penalty_find(penalty, key);
	if (entry == NULL)
		return 0;
	entry_decay(entry, now_msecs);
	return entry->failures;
}
