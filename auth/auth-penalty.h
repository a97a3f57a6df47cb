#ifndef AUTH_PENALTY_H
#define AUTH_PENALTY_H
/* Delaying failed logins per remote IP address. The first failure from
   an address is answered after the base delay (auth_failure_delay), each
   consecutive one after twice the previous delay, up to
   AUTH_PENALTY_MAX_DELAY_MSECS. A success resets the address; a record
   idle for AUTH_PENALTY_EXPIRE_MSECS is forgotten. The table holds at
   most max_ips addresses; when full the least recently used one is
   dropped (an attacker rotating addresses gains nothing he would not
   gain from having that many addresses anyway). */

#include "lib.h"

#define AUTH_PENALTY_MAX_DELAY_MSECS (15 * 1000)
#define AUTH_PENALTY_EXPIRE_MSECS (60 * 60 * 1000)
/* Remote addresses tracked: ~100 bytes each. */
#define AUTH_PENALTY_MAX_IPS 4096
/* Longest address key: an IPv6 address with a zone fits in 64. */
#define AUTH_PENALTY_MAX_IP_LEN 64

struct auth_penalty;

struct auth_penalty *auth_penalty_create(unsigned int base_delay_msecs,
					 unsigned int max_ips);
void auth_penalty_destroy(struct auth_penalty **penalty);

/* Record a failure from ip and return how long to delay its answer. */
unsigned int auth_penalty_failure(struct auth_penalty *penalty, const char *ip,
				  uint64_t now_msecs);
/* A successful login from ip: forget its failures. */
void auth_penalty_success(struct auth_penalty *penalty, const char *ip);
/* Consecutive failures recorded for ip (tests). */
unsigned int auth_penalty_get_failures(struct auth_penalty *penalty,
				       const char *ip, uint64_t now_msecs);

#endif
