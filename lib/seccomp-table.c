/* The system call allowlists of moat's processes; seccomp-filter.h.

   A profile is a list of groups; a call a group does not name kills the
   process. Each list starts from the calls the process's code makes
   (nm -D of its binary, read against the code) and was then checked by
   running the protocol suite under the filters: every kill leaves an
   audit record naming the call (dmesg), and strace -f of the failing
   test showed who made it. The additions that found are marked
   "measured". What each process must never do, and so is in no
   list: execve/execveat, fork/vfork and clone without CLONE_THREAD,
   ptrace, process_vm_*, kill/tgkill of another process, mount and the
   other namespace calls, bpf, perf_event_open, keyctl, setuid and its
   kin, chroot, module loading, reboot. Only auth-worker may create
   sockets of internet families (PAM modules: LDAP, RADIUS). */
#include "lib.h"
#include "seccomp-private.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <seccomp.h>

#define ANY(name) { SCMP_SYS(name), SECCOMP_RULE_ANY, 0 }
#define ARG0(name, v) { SCMP_SYS(name), SECCOMP_RULE_ARG0_EQ, (v) }
#define SELF(name) { SCMP_SYS(name), SECCOMP_RULE_ARG0_SELF, 0 }
#define GROUP(n, rules) { n, rules, N_ELEMENTS(rules) }

/* Every filtered process: memory, signals, time, I/O on descriptors it
   already holds, its own identity, exit. */
static const struct seccomp_rule base_rules[] = {
	ANY(read), ANY(write), ANY(readv), ANY(writev), ANY(close),
	ANY(lseek), ANY(fstat), ANY(newfstatat), ANY(fcntl),
	ANY(dup), ANY(dup2), ANY(dup3),
	ANY(brk), ANY(munmap), ANY(mremap), ANY(madvise),
	ANY(rt_sigaction), ANY(rt_sigprocmask), ANY(rt_sigreturn),
	ANY(epoll_create1), ANY(epoll_ctl), ANY(epoll_wait), ANY(epoll_pwait),
	ANY(poll), ANY(ppoll), ANY(signalfd4),
	ANY(timerfd_create), ANY(timerfd_settime), ANY(timerfd_gettime),
	ANY(clock_gettime), ANY(clock_getres), ANY(gettimeofday), ANY(time),
	ANY(nanosleep), ANY(clock_nanosleep),
	ANY(getpid), ANY(gettid), ANY(getppid), ANY(getuid), ANY(geteuid),
	ANY(getgid), ANY(getegid), ANY(getresuid), ANY(getresgid),
	ANY(getgroups), ANY(uname), ANY(sched_yield), ANY(getrandom),
	/* measured: glibc's qsort() sizes its buffer by the physical
	   memory */
	ANY(sysinfo),
	ANY(futex), ANY(restart_syscall), ANY(exit), ANY(exit_group),
	/* abort() and raise() signal the caller only */
	SELF(kill), SELF(tgkill),
	/* getrlimit() is prlimit64(0, ...) */
	ARG0(prlimit64, 0), ANY(getrlimit),
	/* on sockets it holds: master's, clients', auth's */
	ANY(sendmsg), ANY(recvmsg), ANY(sendto), ANY(recvfrom),
	ANY(shutdown), ANY(getsockopt), ANY(setsockopt),
	ANY(getsockname), ANY(getpeername),
};

/* Mapping memory, never executable: the chrooted processes load no code
   after the drop (OpenSSL's providers are loaded before it). */
static const struct seccomp_rule mem_noexec_rules[] = {
	{ SCMP_SYS(mmap), SECCOMP_RULE_ARG2_LACKS, PROT_EXEC },
	{ SCMP_SYS(mprotect), SECCOMP_RULE_ARG2_LACKS, PROT_EXEC },
};

/* Mapping code: iconv's gconv modules (imap), NSS and PAM modules
   (auth, auth-worker) are loaded on first use, after the drop. */
static const struct seccomp_rule mem_exec_rules[] = {
	ANY(mmap), ANY(mprotect),
};

/* Accepting connections on inherited listeners. */
static const struct seccomp_rule accept_rules[] = {
	ANY(accept4), ANY(accept),
};

/* Reading files by name. */
static const struct seccomp_rule file_read_rules[] = {
	ANY(openat), ANY(open), ANY(getdents64), ANY(statx), ANY(stat),
	ANY(openat2),   /* lib/safe-open.c: no symlinks under a mail root */
	ANY(lstat), ANY(readlink), ANY(readlinkat), ANY(access),
	ANY(faccessat), ANY(faccessat2), ANY(fstatfs), ANY(statfs),
	ANY(pread64), ANY(fadvise64), ANY(getcwd), ANY(chdir), ANY(fchdir),
	ANY(preadv2),   /* index/mailbox-read-ahead.c: RWF_NOWAIT */
};

/* Changing files: the Maildir, its index, log and cache. */
static const struct seccomp_rule file_write_rules[] = {
	ANY(pwrite64), ANY(ftruncate), ANY(fsync), ANY(fdatasync),
	ANY(syncfs),   /* measured: one syncfs() for a batch of new files */
	ANY(fallocate), ANY(flock), ANY(mkdir), ANY(mkdirat), ANY(rename),
	ANY(renameat), ANY(renameat2), ANY(unlink), ANY(unlinkat),
	ANY(rmdir), ANY(link), ANY(linkat), ANY(utimensat), ANY(fchmod),
	ANY(umask), ANY(inotify_init1), ANY(inotify_add_watch),
	ANY(inotify_rm_watch),
};

/* imap-login: the pair a logged-in TLS session is relayed through. */
static const struct seccomp_rule socketpair_rules[] = {
	ARG0(socketpair, AF_UNIX),
};

/* auth: getpwnam() asks NSS daemons (nscd, systemd-userdbd) over unix
   sockets first. */
static const struct seccomp_rule unix_socket_rules[] = {
	ARG0(socket, AF_UNIX), ANY(connect),
};

/* lmtp: the message of a transaction lives in a sealed memfd. */
static const struct seccomp_rule memfd_rules[] = {
	ANY(memfd_create), ANY(ftruncate), ANY(pwrite64), ANY(pread64),
};

/* auth: libargon2 hashes with threads; imap: the group commit's sync
   thread (lib/fsync-thread.h), started after the filter is in place. */
static const struct seccomp_rule thread_rules[] = {
	{ SCMP_SYS(clone), SECCOMP_RULE_ARG0_HAS, CLONE_THREAD },
	{ SCMP_SYS(clone3), SECCOMP_RULE_ENOSYS, 0 },
	ANY(set_robust_list), ANY(rseq), ANY(sched_getaffinity),
};

/* imap: the sync thread wakes the loop through an eventfd. */
static const struct seccomp_rule eventfd_rules[] = {
	ANY(eventfd2),
};

/* auth-worker: PAM modules and NSS. pam_unix logs to syslog (a unix
   socket) and the audit subsystem (netlink); site modules may talk to
   LDAP or RADIUS servers. Still no exec: pam_exec cannot work (the
   worker runs as root, so pam_unix reads /etc/shadow itself and needs no
   unix_chkpwd). */
static const struct seccomp_rule pam_rules[] = {
	ARG0(socket, AF_UNIX), ARG0(socket, AF_NETLINK),
	ARG0(socket, AF_INET), ARG0(socket, AF_INET6),
	ANY(connect), ANY(bind), ANY(sendmmsg), ANY(recvmmsg),
	ANY(getpgrp), ANY(getsid), ANY(ioctl),
	/* measured: a login reads the capability sets (capget); libpam
	   waits out its failure delay with select() */
	ANY(capget), ANY(pselect6), ANY(select),
};

#ifdef MOAT_SECCOMP_SANITIZER
/* What the ASan/UBSan runtimes call while the process runs and while they
   write a report (an alternate signal stack, the dumpable flag, their own
   process's maps). Never execve or an open in a chrooted process: a
   report there stops at its first line (doc/security.md). */
static const struct seccomp_rule sanitizer_rules[] = {
	ANY(sigaltstack), ANY(prctl), ANY(sched_getaffinity), ANY(getrlimit),
	ANY(prlimit64), ANY(readlink), ANY(readlinkat), ANY(mincore),
};
#  define SANITIZER_GROUP &sanitizer_group,
static const struct seccomp_group sanitizer_group =
	GROUP("sanitizer", sanitizer_rules);
#else
#  define SANITIZER_GROUP
#endif

static const struct seccomp_group base_group = GROUP("base", base_rules);
static const struct seccomp_group mem_noexec_group =
	GROUP("mem-noexec", mem_noexec_rules);
static const struct seccomp_group mem_exec_group =
	GROUP("mem-exec", mem_exec_rules);
static const struct seccomp_group accept_group = GROUP("accept", accept_rules);
static const struct seccomp_group file_read_group =
	GROUP("file-read", file_read_rules);
static const struct seccomp_group file_write_group =
	GROUP("file-write", file_write_rules);
static const struct seccomp_group socketpair_group =
	GROUP("socketpair", socketpair_rules);
static const struct seccomp_group unix_socket_group =
	GROUP("unix-socket", unix_socket_rules);
static const struct seccomp_group memfd_group = GROUP("memfd", memfd_rules);
static const struct seccomp_group thread_group = GROUP("thread", thread_rules);
static const struct seccomp_group eventfd_group =
	GROUP("eventfd", eventfd_rules);
static const struct seccomp_group pam_group = GROUP("pam", pam_rules);

const struct seccomp_profile_def seccomp_profiles[MOAT_SECCOMP_PROFILE_COUNT] = {
	[MOAT_SECCOMP_PROFILE_NONE] = { "none", { NULL } },
	/* chrooted, opens nothing: clients, master, auth, its TLS relays */
	[MOAT_SECCOMP_PROFILE_IMAP_LOGIN] = { "imap-login", {
		&base_group, &mem_noexec_group, &accept_group,
		&socketpair_group, SANITIZER_GROUP NULL } },
	/* reads passwd-files and NSS; hashes with threads */
	[MOAT_SECCOMP_PROFILE_AUTH] = { "auth", {
		&base_group, &mem_exec_group, &file_read_group,
		&unix_socket_group, &thread_group, SANITIZER_GROUP NULL } },
	[MOAT_SECCOMP_PROFILE_AUTH_WORKER] = { "auth-worker", {
		&base_group, &mem_exec_group, &file_read_group, &pam_group,
		SANITIZER_GROUP NULL } },
	/* the user's mail files; sockets only as master hands them over;
	   the group commit's sync thread and its two helpers */
	[MOAT_SECCOMP_PROFILE_IMAP] = { "imap", {
		&base_group, &mem_exec_group, &file_read_group,
		&file_write_group, &thread_group, &eventfd_group,
		SANITIZER_GROUP NULL } },
	/* chrooted, opens nothing: MTA connections, memfds, master, imap */
	[MOAT_SECCOMP_PROFILE_LMTP] = { "lmtp", {
		&base_group, &mem_noexec_group, &accept_group, &memfd_group,
		SANITIZER_GROUP NULL } },
	/* chrooted, opens nothing, accepts nothing: signs over the sockets
	   master hands it (no socketpair, no memfd) */
	[MOAT_SECCOMP_PROFILE_KEY_SIGNER] = { "key-signer", {
		&base_group, &mem_noexec_group, SANITIZER_GROUP NULL } },
	/* moat-lda after its set-up (user, settings, mail root): stdin,
	   stderr and the user's Maildir; no socket, no code loaded, no
	   thread */
	[MOAT_SECCOMP_PROFILE_LDA] = { "lda", {
		&base_group, &mem_noexec_group, &file_read_group,
		&file_write_group, SANITIZER_GROUP NULL } },
};
