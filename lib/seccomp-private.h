#ifndef SECCOMP_PRIVATE_H
#define SECCOMP_PRIVATE_H
/* The allowlists as data, shared by seccomp-table.c (the lists) and
   seccomp-install.c (which turns them into a libseccomp filter). */

#include "seccomp-filter.h"

#include <stdint.h>

/* A sanitizer build: the lists gain what the runtimes need. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#  define MOAT_SECCOMP_SANITIZER 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#    define MOAT_SECCOMP_SANITIZER 1
#  endif
#endif

enum seccomp_rule_kind {
	SECCOMP_RULE_ANY = 0,     /* allowed with any arguments */
	SECCOMP_RULE_ARG0_EQ,     /* only when argument 0 == value */
	SECCOMP_RULE_ARG0_SELF,   /* only when argument 0 == our own pid */
	SECCOMP_RULE_ARG0_HAS,    /* only when argument 0 has every bit of
				     value (clone: CLONE_THREAD) */
	SECCOMP_RULE_ARG2_LACKS,  /* only when argument 2 has none of the bits
				     of value (mmap, mprotect: PROT_EXEC) */
	SECCOMP_RULE_ENOSYS,      /* not allowed, fails with ENOSYS instead of
				     killing (clone3: glibc then uses clone,
				     whose flags a filter can read) */
};

struct seccomp_rule {
	int syscall;              /* SCMP_SYS(name) */
	enum seccomp_rule_kind kind;
	uint64_t value;
};

struct seccomp_group {
	const char *name;
	const struct seccomp_rule *rules;
	unsigned int count;
};

/* A profile's groups, NULL-terminated. */
#define SECCOMP_PROFILE_MAX_GROUPS 12
struct seccomp_profile_def {
	const char *name;
	const struct seccomp_group *groups[SECCOMP_PROFILE_MAX_GROUPS];
};

/* Indexed by enum moat_seccomp_profile. */
extern const struct seccomp_profile_def
seccomp_profiles[MOAT_SECCOMP_PROFILE_COUNT];

#endif
