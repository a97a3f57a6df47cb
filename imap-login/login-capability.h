#ifndef LOGIN_CAPABILITY_H
#define LOGIN_CAPABILITY_H
/* SASL mechanisms offered before login and the CAPABILITY strings built
   from them. Pure functions (no I/O), unit-tested. */

#include "mempool.h"

/* auth_mechanisms lists a handful; 16 is far more than any site uses. */
#define LOGIN_MAX_MECHS 16
/* RFC 4422 3.1: a mechanism name is 1-20 characters [A-Z0-9-_]. */
#define LOGIN_MAX_MECH_NAME 20

struct login_mech {
	char name[LOGIN_MAX_MECH_NAME + 1];  /* upper case */
	/* The password crosses the wire in the clear (PLAIN, LOGIN): offered
	   only where plaintext authentication is allowed. */
	bool plaintext;
	/* SCRAM-*-PLUS: offered only where TLS channel binding data exists. */
	bool channel_binding;
	/* EXTERNAL: offered only where a verified client certificate
	   names the user. */
	bool client_cert;
};

struct login_mechs {
	struct login_mech mechs[LOGIN_MAX_MECHS];
	unsigned int count;
};

/* Parse a space or comma separated list ("plain login"). Names are
   upper-cased; duplicates are dropped. Returns 0, or -1 with *error_r on
   an invalid name or too many names. */
int login_mechs_parse(const char *setting, struct login_mechs *mechs_r,
		      const char **error_r);
/* Case-insensitive lookup; NULL if the mechanism is not offered. */
const struct login_mech *login_mechs_find(const struct login_mechs *mechs,
					  const char *name);

/* What a connection may do now; selects one capability list. */
enum login_cap_flags {
	/* LOGIN and PLAIN/LOGIN mechanisms (TLS, same host, or
	   disable_plaintext_auth = no) */
	LOGIN_CAP_PLAINTEXT_AUTH = 0x01,
	/* any authentication (not so before TLS with ssl = required) */
	LOGIN_CAP_AUTH = 0x02,
	/* TLS is available and not yet active */
	LOGIN_CAP_STARTTLS = 0x04,
	/* TLS channel binding (tls-exporter) is available: -PLUS mechanisms */
	LOGIN_CAP_CHANNEL_BINDING = 0x08,
	/* a verified TLS client certificate names the user: EXTERNAL */
	LOGIN_CAP_CLIENT_CERT = 0x10,
};
#define LOGIN_CAP_VARIANTS 32
/* Not a variant (the same for every connection of a process): advertise
   LITERAL- instead of LITERAL+ (imap_literal_minus). */
#define LOGIN_CAP_LITERAL_MINUS 0x100

/* The pre-auth capability list (without "* CAPABILITY "): the base
   capabilities, STARTTLS if offered, then AUTH=<mech> for each usable
   mechanism, and LOGINDISABLED when plaintext authentication is not
   allowed (plaintext mechanisms are then left out too, RFC 9051 6.2.3,
   RFC 2595 3.2). flags: enum login_cap_flags. */
const char *login_capability_build(pool_t pool, const struct login_mechs *mechs,
				   unsigned int flags);

#endif
