"""seccomp-bpf allowlists (lib/seccomp-filter.h, doc/security.md): every
unprivileged child runs under its filter ("Seccomp: 2" in
/proc/PID/status), seccomp = no leaves them unfiltered, seccomp = log
filters without killing, and master names a child that dies of SIGSYS.

The filters themselves (a forbidden call kills, an allowed one does not)
are tested per profile by tests/unit/test-seccomp.c; here the whole
server must work under them, which the rest of the suite checks too
(seccomp = yes is the default)."""

import ctypes
import os
import signal

import pytest

from moatserver import proc_status, root_only, wait_for
from test_auth_worker import SHADOW_DBS, PASSWORD, system_user  # noqa: F401
from test_lmtp import MSG, Lmtp, data, fetch_all, start

SECCOMP_FILTER = "2"
SECCOMP_NONE = "0"
SYS_LANDLOCK_CREATE_RULESET = 444   # x86_64 and aarch64 alike
LANDLOCK_CREATE_RULESET_VERSION = 1


def landlock_abi():
    """The kernel's Landlock ABI version, or 0 without Landlock."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None,
                       ctypes.c_size_t(0),
                       ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(abi, 0)


def status_field(pid, field):
    try:
        return proc_status(pid).get(field)
    except (FileNotFoundError, ProcessLookupError):
        return None


def wait_seccomp(server, comm, want):
    """The Seccomp field of each comm child once each has finished its
    privilege drop (a child between exec and the drop still shows
    master's state: no_new_privs is set just before the filter, so wait
    for the filter itself, up to 30 s); the state found is returned, and
    the test fails on it."""
    def fields():
        return {pid: status_field(pid, "Seccomp")
                for pid in server.child_pids(comm)}

    def settled():
        found = fields()
        done = found and all(v == want for v in found.values())
        return found if done else None
    return wait_for(settled, 30) or fields()


def exercise_lmtp(server):
    """One delivery through lmtp and the recipient's imap process."""
    c = Lmtp(server)
    assert [r[0] for r in start(c, ["testuser1"])] == [250]
    assert [r[0] for r in data(c, MSG, 1)] == [250]
    assert c.cmd("QUIT")[0] == 221
    assert len(fetch_all(server, "testuser1")) == 1


@root_only
@pytest.mark.moat_settings(lmtp=True)
def test_every_child_filtered(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    exercise_lmtp(moat_server)
    for comm in ("imap-login", "auth", "imap", "lmtp"):
        fields = wait_seccomp(moat_server, comm, SECCOMP_FILTER)
        assert set(fields.values()) == {SECCOMP_FILTER}, (comm, fields)
    # master itself is not filtered (it must fork and exec its children)
    assert status_field(moat_server.pid, "Seccomp") == SECCOMP_NONE
    assert c.command("NOOP").ok
    # imap confined itself with Landlock where the kernel can (ABI 2);
    # else it said so in one line (tests/unit/test-landlock.c checks
    # what the confinement allows)
    without = "landlock: " in moat_server.logs()
    assert without == (landlock_abi() < 2), moat_server.logs()[-2000:]


def task_statuses(pid):
    """/proc/PID/task/TID/status of each thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        st = proc_status(f"{pid}/task/{tid}")
        if st is not None:
            out[int(tid)] = st
    return out


@root_only
def test_imap_helper_threads_confined(moat_server):
    # the read-ahead thread (from the start) and the group commit's sync
    # threads (from the first commit) are filtered and unprivileged like
    # the process: the filter and the credentials are per thread
    c = moat_server.login("testuser1")
    assert c.append("INBOX", b"Subject: t\r\n\r\nbody\r\n").ok
    assert c.command("SELECT INBOX").ok
    [pid] = moat_server.wait_children("imap", 1)
    tasks = task_statuses(pid)
    # the loop, the read-ahead thread, the sync thread (and its helpers)
    assert len(tasks) >= 3, tasks.keys()
    main = tasks[pid]
    assert main["Uid"].split()[0] != "0", main["Uid"]
    for tid, st in tasks.items():
        assert st["Seccomp"] == SECCOMP_FILTER, (tid, st["Seccomp"])
        assert st["NoNewPrivs"] == "1", (tid, st["NoNewPrivs"])
        assert st["Uid"] == main["Uid"] and st["Gid"] == main["Gid"], tid
        for cap in ("CapEff", "CapPrm", "CapBnd"):
            assert int(st[cap], 16) == 0, (tid, cap, st[cap])
    assert c.command("NOOP").ok


@root_only
@pytest.mark.moat_settings(extra_dbs=SHADOW_DBS)
def test_auth_worker_filtered(system_user, moat_server):  # noqa: F811
    # a shadow login runs getspnam() and crypt() under the filter
    c = moat_server.login(system_user, PASSWORD)
    assert c.command("SELECT INBOX").ok
    fields = wait_seccomp(moat_server, "auth-worker", SECCOMP_FILTER)
    assert set(fields.values()) == {SECCOMP_FILTER}, fields


@root_only
@pytest.mark.moat_settings(lmtp=True, seccomp="no")
def test_seccomp_no(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    exercise_lmtp(moat_server)
    for comm in ("imap-login", "auth", "imap", "lmtp"):
        fields = wait_seccomp(moat_server, comm, SECCOMP_NONE)
        assert set(fields.values()) == {SECCOMP_NONE}, (comm, fields)


@root_only
@pytest.mark.moat_settings(lmtp=True, seccomp="log")
def test_seccomp_log(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    exercise_lmtp(moat_server)
    for comm in ("imap-login", "auth", "imap", "lmtp"):
        fields = wait_seccomp(moat_server, comm, SECCOMP_FILTER)
        assert set(fields.values()) == {SECCOMP_FILTER}, (comm, fields)
    wait_for(lambda: "seccomp = log: calls outside the imap allowlist"
             in moat_server.logs(), 30)
    assert "seccomp = log: calls outside the imap allowlist" in moat_server.logs()


def test_sigsys_death_logged(moat_server):
    """A child that dies of SIGSYS (the signal a seccomp kill delivers) is
    logged by master with its service, pid and user, and how to find the
    call; the service goes on (imap: the next login gets a new process)."""
    c = moat_server.login("testuser1")
    assert c.command("NOOP").ok
    pid = moat_server.wait_children("imap", 1)[0]
    os.kill(pid, signal.SIGSYS)
    want = (f"service(imap): child {pid} of user testuser1 killed with "
            f"signal {int(signal.SIGSYS)} (SIGSYS: a system call outside "
            "its seccomp allowlist")
    assert wait_for(lambda: want in moat_server.logs(), 30), \
        moat_server.logs()[-2000:]
    moat_server.wait_children("imap", 0, timeout=30)
    assert moat_server.login("testuser1").command("NOOP").ok
