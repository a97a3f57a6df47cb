/* Turns a profile of seccomp-table.c into a libseccomp filter and loads
   it; seccomp-filter.h. */
#include "lib.h"
#include "seccomp-private.h"

#include <seccomp.h>

/* Syscall numbers counted by moat_seccomp_profile_size(): above every
   native number of the architectures moat builds on (x86_64 < 512,
   aarch64 < 512). */
#define SECCOMP_MAX_SYSCALL_NR 1024
/* An error text: a step, a group and a syscall name, strerror(). */
#define SECCOMP_ERROR_MAX 256

static char seccomp_error[SECCOMP_ERROR_MAX];

#ifdef MOAT_SECCOMP_SANITIZER
/* LeakSanitizer's interface; weak: UBSan alone has none. */
void __lsan_do_leak_check(void) __attribute__((weak));
#endif

const char *moat_seccomp_profile_name(enum moat_seccomp_profile profile)
{
	i_assert(profile < MOAT_SECCOMP_PROFILE_COUNT);
	return seccomp_profiles[profile].name;
}

unsigned int moat_seccomp_profile_size(enum moat_seccomp_profile profile)
{
	unsigned char seen[SECCOMP_MAX_SYSCALL_NR / 8] = { 0 };
	unsigned int count = 0;

	i_assert(profile < MOAT_SECCOMP_PROFILE_COUNT);
	const struct seccomp_profile_def *def = &seccomp_profiles[profile];
	for (unsigned int g = 0; def->groups[g] != NULL; g++) {
		const struct seccomp_group *group = def->groups[g];
		for (unsigned int i = 0; i < group->count; i++) {
			int nr = group->rules[i].syscall;
			/* <0: not on this architecture */
			if (nr < 0 || group->rules[i].kind == SECCOMP_RULE_ENOSYS)
				continue;
			i_assert(nr < SECCOMP_MAX_SYSCALL_NR);
			if ((seen[nr / 8] & (1U << (nr % 8))) == 0)
				count++;
			seen[nr / 8] |= 1U << (nr % 8);
		}
	}
	return count;
}

static int rule_add(scmp_filter_ctx ctx, const struct seccomp_rule *rule,
		    pid_t self)
{
	struct scmp_arg_cmp arg;
	uint32_t action = SCMP_ACT_ALLOW;
	unsigned int argc = 1;

	switch (rule->kind) {
	case SECCOMP_RULE_ANY:
		argc = 0;
		break;
	case SECCOMP_RULE_ARG0_EQ:
		arg = SCMP_A0(SCMP_CMP_EQ, rule->value);
		break;
	case SECCOMP_RULE_ARG0_SELF:
		arg = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)self);
		break;
	case SECCOMP_RULE_ARG0_HAS:
		arg = SCMP_A0(SCMP_CMP_MASKED_EQ, rule->value, rule->value);
		break;
	case SECCOMP_RULE_ARG2_LACKS:
		arg = SCMP_A2(SCMP_CMP_MASKED_EQ, rule->value, 0);
		break;
	case SECCOMP_RULE_ENOSYS:
		action = SCMP_ACT_ERRNO(ENOSYS);
		argc = 0;
		break;
	default:
		i_unreached();
	}
	return seccomp_rule_add_array(ctx, action, rule->syscall, argc,
				      argc == 0 ? NULL : &arg);
}

static int profile_add(scmp_filter_ctx ctx,
		       const struct seccomp_profile_def *def, const char **error_r)
{
	pid_t self = getpid();

	for (unsigned int g = 0; def->groups[g] != NULL; g++) {
		const struct seccomp_group *group = def->groups[g];
		for (unsigned int i = 0; i < group->count; i++) {
			if (group->rules[i].syscall < 0)
				continue;   /* not on this architecture */
			int ret = rule_add(ctx, &group->rules[i], self);
			if (ret < 0) {
				(void)snprintf(seccomp_error, sizeof(seccomp_error),
					"seccomp_rule_add(%s, syscall %d) failed: %s",
					group->name, group->rules[i].syscall,
					strerror(-ret));
				*error_r = seccomp_error;
				return -1;
			}
		}
	}
	return 0;
}

int moat_seccomp_install(enum moat_seccomp_profile profile,
			 enum moat_seccomp_mode mode, const char **error_r)
{
	i_assert(profile < MOAT_SECCOMP_PROFILE_COUNT);
	if (mode == MOAT_SECCOMP_NO || profile == MOAT_SECCOMP_PROFILE_NONE)
		return 0;

	/* LOG: the kernel writes an audit record for each call outside the
	   list and lets it run; nothing else differs from YES. */
#ifdef MOAT_SECCOMP_SANITIZER
	/* LeakSanitizer's check at exit stops the process with clone() and
	   ptrace(), which no list allows (it would die of SIGSYS): check
	   now, once, instead; the check at exit is then skipped. A no-op
	   with detect_leaks=0. */
	if (__lsan_do_leak_check != NULL)
		__lsan_do_leak_check();
#endif
	uint32_t deny = mode == MOAT_SECCOMP_LOG ? SCMP_ACT_LOG :
		SCMP_ACT_KILL_PROCESS;
	scmp_filter_ctx ctx = seccomp_init(deny);
	if (ctx == NULL) {
		*error_r = "seccomp_init() failed";
		return -1;
	}
	int ret = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, deny);
	if (ret < 0) {
		(void)snprintf(seccomp_error, sizeof(seccomp_error),
			       "seccomp_attr_set(BADARCH) failed: %s", strerror(-ret));
		*error_r = seccomp_error;
	} else if (profile_add(ctx, &seccomp_profiles[profile], error_r) < 0) {
		ret = -1;
	} else if ((ret = seccomp_load(ctx)) < 0) {
		(void)snprintf(seccomp_error, sizeof(seccomp_error),
			       "seccomp_load() failed: %s", strerror(-ret));
		*error_r = seccomp_error;
	}
	seccomp_release(ctx);
	return ret < 0 ? -1 : 0;
}
