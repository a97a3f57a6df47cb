/* Privilege drop in one fixed sequence; see restrict.h. */
#include "lib.h"
#include "restrict.h"
#include "log.h"
#include "landlock.h"

#include <grp.h>
#include <pwd.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__)
#  define MOAT_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define MOAT_ASAN 1
#  endif
#endif

static void set_rlimit(int resource, const char *name, uint64_t value)
{
	struct rlimit rl = { .rlim_cur = value, .rlim_max = value };
	struct rlimit old;
	if (getrlimit(resource, &old) == 0 && old.rlim_max != RLIM_INFINITY &&
	    old.rlim_max < value)
		rl.rlim_cur = rl.rlim_max = old.rlim_max; /* can only lower */
	if (setrlimit(resource, &rl) < 0)
		i_fatal("setrlimit(%s, %llu) failed: %s", name,
			(unsigned long long)value, strerror(errno));
}

static void restrict_rlimits(const struct restrict_settings *set)
{
	if (set->vsz_limit != 0) {
#ifdef MOAT_ASAN
		/* AddressSanitizer maps terabytes of shadow memory; an address
		   space limit would kill every sanitizer build. */
		i_debug("vsz_limit not applied in a sanitizer build");
#else
		set_rlimit(RLIMIT_AS, "RLIMIT_AS", set->vsz_limit);
#endif
	}
	if (set->fd_limit != 0)
		set_rlimit(RLIMIT_NOFILE, "RLIMIT_NOFILE", set->fd_limit);
	if (set->no_fork && set->uid != 0 && set->uid != (uid_t)-1)
		set_rlimit(RLIMIT_NPROC, "RLIMIT_NPROC", 0);
}

static void drop_bounding_set(void)
{
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) <= 0)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			i_fatal("prctl(PR_CAPBSET_DROP, %d) failed: %s", cap, strerror(errno));
	}
}

static void clear_capabilities(void)
{
	cap_t caps = cap_init();   /* all sets empty */
	if (caps == NULL || cap_set_proc(caps) < 0)
		i_fatal("cap_set_proc(empty) failed: %s", strerror(errno));
	cap_free(caps);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		i_fatal("prctl(PR_CAP_AMBIENT_CLEAR_ALL) failed: %s", strerror(errno));
}

static void verify_dropped(const struct restrict_settings *set)
{
	if (set->uid != 0 && set->uid != (uid_t)-1) {
		if (setuid(0) == 0 || seteuid(0) == 0)
			i_fatal("privilege drop failed: could regain root");
		uid_t r, e, s;
		if (getresuid(&r, &e, &s) < 0 || r != set->uid || e != set->uid || s != set->uid)
			i_fatal("privilege drop failed: uids are not %u", (unsigned)set->uid);
	}
	cap_t caps = cap_get_proc();
	cap_t empty = cap_init();
	if (caps == NULL || empty == NULL || cap_compare(caps, empty) != 0)
		i_fatal("privilege drop failed: capabilities remain");
	cap_free(caps);
	cap_free(empty);
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		i_fatal("privilege drop failed: no_new_privs is not set");
}

void restrict_process(const struct restrict_settings *set)
{
	bool root = geteuid() == 0;

	/* Read the time zone now: the zone file is outside a chroot, and the
	   seccomp filters of imap-login and lmtp allow no open. glibc keeps
	   it while TZ stays as it is. */
	tzset();
	restrict_rlimits(set);
	if (set->chroot_dir != NULL && set->chroot_dir[0] != '\0') {
		if (set->chroot_dir[0] != '/')
			i_fatal("chroot directory %s is not absolute", set->chroot_dir);
		if (!root) {
			i_info("not running as root: no chroot to %s (development mode)",
			       set->chroot_dir);
		} else if (chroot(set->chroot_dir) < 0 || chdir("/") < 0) {
			i_fatal("chroot(%s) failed: %s", set->chroot_dir, strerror(errno));
		}
	}
	if (root) {
		/* Needs CAP_SETPCAP, which goes with the uid change below. */
		drop_bounding_set();
		if (set->gid != (gid_t)-1) {
			if (setgroups(1, &set->gid) < 0)
				i_fatal("setgroups(%u) failed: %s", (unsigned)set->gid, strerror(errno));
			if (setresgid(set->gid, set->gid, set->gid) < 0)
				i_fatal("setresgid(%u) failed: %s", (unsigned)set->gid, strerror(errno));
		}
		if (set->uid != (uid_t)-1 && setresuid(set->uid, set->uid, set->uid) < 0)
			i_fatal("setresuid(%u) failed: %s", (unsigned)set->uid, strerror(errno));
	}
	clear_capabilities();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		i_fatal("prctl(PR_SET_NO_NEW_PRIVS) failed: %s", strerror(errno));
	/* The uid change left the process non-dumpable; keep it so: a core
	   of imap-login or auth may hold other users' passwords. */
	verify_dropped(set);
	const char *error;
	if (set->landlock_ro_paths != NULL || set->landlock_rw_paths != NULL) {
		static const char *const none[] = { NULL };
		int ret = landlock_confine(set->landlock_ro_paths != NULL ?
					   set->landlock_ro_paths : none,
					   set->landlock_rw_paths != NULL ?
					   set->landlock_rw_paths : none, &error);
		if (ret < 0)
			i_fatal("landlock: %s", error);
		if (ret == 0)
			i_info("landlock: %s: running without it", error);
	}
	/* Last: the checks above make calls (setuid, Landlock's) no filter
	   allows. */
	if (moat_seccomp_install(set->seccomp_profile, set->seccomp_mode,
				 &error) < 0)
		i_fatal("seccomp filter %s: %s",
			moat_seccomp_profile_name(set->seccomp_profile), error);
}

void restrict_master_capabilities(const char *const *keep)
{
	if (geteuid() != 0)
		return;
	cap_value_t values[CAP_LAST_CAP + 1];
	int count = 0;
	for (unsigned int i = 0; keep[i] != NULL; i++) {
		if (cap_from_name(keep[i], &values[count]) < 0)
			i_fatal("unknown capability %s", keep[i]);
		count++;
	}
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++) {
		bool wanted = false;
		for (int i = 0; i < count; i++)
			wanted = wanted || values[i] == cap;
		if (!wanted && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) > 0 &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			i_fatal("prctl(PR_CAPBSET_DROP, %d) failed: %s", cap, strerror(errno));
	}
	cap_t caps = cap_init();
	if (caps == NULL ||
	    cap_set_flag(caps, CAP_PERMITTED, count, values, CAP_SET) < 0 ||
	    cap_set_flag(caps, CAP_EFFECTIVE, count, values, CAP_SET) < 0 ||
	    cap_set_proc(caps) < 0)
		i_fatal("cap_set_proc() failed: %s", strerror(errno));
	cap_free(caps);
}

int restrict_lookup_user(const char *name, uid_t *uid_r, gid_t *gid_r)
{
	struct passwd pw, *result;
	char buf[4096];
	if (getpwnam_r(name, &pw, buf, sizeof(buf), &result) != 0 || result == NULL)
		return -1;
	*uid_r = pw.pw_uid;
	*gid_r = pw.pw_gid;
	return 0;
}
