"""Process model and privilege separation (doc/architecture.md): one
imap process per user, and what each process may do, read from
/proc/PID/status."""

import os
import pwd

import pytest

from moatserver import IS_ROOT, proc_comm, proc_status, root_only, status_uid, wait_for

CAP_SYS_ADMIN = 21


def caps(status, field):
    return int(status[field], 16)


def assert_dropped(status, uid, what):
    """Every uid is uid, no capabilities are left, no_new_privs is set."""
    assert [int(x) for x in status["Uid"].split()] == [uid] * 4, (what, status["Uid"])
    assert all(int(x) != 0 for x in status["Gid"].split()), (what, status["Gid"])
    assert "0" not in status.get("Groups", "").split(), (what, status["Groups"])
    assert caps(status, "CapEff") == 0, (what, status["CapEff"])
    assert caps(status, "CapPrm") == 0, (what, status["CapPrm"])
    assert status["NoNewPrivs"] == "1", (what, status["NoNewPrivs"])


def settled_status(pid):
    """pid's /proc status once its privilege drop has finished. A child
    between exec and restrict_process() still shows master's root state
    (on a busy host for a while); the filter is the drop's last step
    (seccomp = yes is the default, and these tests keep it), so wait for
    Seccomp 2, up to 30 s, and return what is found either way: the
    test's assertions then fail on the real state."""
    wait_for(lambda: (proc_status(pid) or {}).get("Seccomp") == "2", 30)
    return proc_status(pid)


def test_process_names(moat_server):
    moat_server.login("testuser1")
    assert proc_comm(moat_server.pid) == "moat"
    names = {comm for _, comm in moat_server.children()}
    assert {"imap-login", "auth"} <= names, names
    moat_server.wait_children("imap", 1)
    names = {comm for _, comm in moat_server.children()}
    assert names <= {"imap-login", "auth", "imap"}, names


def test_one_imap_process_per_user(moat_server):
    c1 = moat_server.login("testuser1")
    c2 = moat_server.login("testuser1")
    pids = moat_server.wait_children("imap", 1)
    status = proc_status(pids[0])
    assert int(status["Uid"].split()[0]) == moat_server.users["testuser1"]["uid"]
    # Both connections are served (by that one process).
    assert c1.command("NOOP").ok
    assert c2.command("NOOP").ok
    c3 = moat_server.login("testuser1")
    assert c3.command("NOOP").ok
    assert moat_server.child_pids("imap") == pids


def test_two_users_two_processes(moat_server):
    c1 = moat_server.login("testuser1")
    c2 = moat_server.login("testuser2")
    pids = moat_server.wait_children("imap", 2)
    assert c1.command("NOOP").ok and c2.command("NOOP").ok
    if IS_ROOT:
        uids = sorted(status_uid(proc_status(p)) for p in pids)
        want = sorted(u["uid"] for u in moat_server.users.values())
        assert uids == want


@pytest.mark.moat_settings(imap_process_linger=10)
def test_imap_process_reused_while_lingering(moat_server):
    c = moat_server.login("testuser1")
    pids = moat_server.wait_children("imap", 1)
    c.command("LOGOUT")
    c2 = moat_server.login("testuser1")
    assert c2.command("NOOP").ok
    assert moat_server.child_pids("imap") == pids


@pytest.mark.moat_settings(imap_process_linger=1)
def test_imap_process_exits_after_linger(moat_server):
    c = moat_server.login("testuser1")
    moat_server.wait_children("imap", 1)
    c.command("LOGOUT")
    moat_server.wait_children("imap", 0, timeout=8)
    # A new login gets a new process.
    assert moat_server.login("testuser1").command("NOOP").ok
    moat_server.wait_children("imap", 1)


def test_login_survives_imap_process_dying_before_reading_it(moat_server):
    """A process that dies with a CONN still unread in its socket takes
    the fd along: master keeps its copy until CONN-DONE and gives the
    connection to a new process (master/handoff.c), so the LOGIN still
    gets its tagged OK."""
    import signal
    first = moat_server.login("testuser1")
    pid = moat_server.wait_children("imap", 1)[0]
    os.kill(pid, signal.SIGSTOP)
    try:
        c = moat_server.connect()
        c.send(b"a1 LOGIN testuser1 %s\r\n"
               % moat_server.users["testuser1"]["password"].encode())
        # master has routed it to the stopped process
        routed = "master: info: login: user=<testuser1>"
        assert wait_for(lambda: moat_server.log_path.read_text(
            errors="replace").count(routed) >= 2, 20), moat_server.logs()
    finally:
        os.kill(pid, signal.SIGKILL)
    r = c.read_tagged("a1")
    assert r.ok, f"{r}\n" + moat_server.logs()
    assert c.command("NOOP").ok
    assert pid not in moat_server.child_pids("imap")
    assert "routing it again" in moat_server.logs()
    first.close()


@root_only
def test_master_privileges(moat_server):
    status = proc_status(moat_server.pid)
    assert status["Uid"].split()[0] == "0"
    eff = caps(status, "CapEff")
    assert eff != 0
    assert not eff & (1 << CAP_SYS_ADMIN), status["CapEff"]
    assert not caps(status, "CapBnd") & (1 << CAP_SYS_ADMIN), status["CapBnd"]


@root_only
def test_imap_login_privileges(moat_server):
    moat_server.connect()
    login_uid = pwd.getpwnam("moat-login").pw_uid
    pids = moat_server.child_pids("imap-login")
    assert pids
    empty = os.path.realpath(moat_server.base_dir / "empty")
    for pid in pids:
        status = settled_status(pid)
        assert_dropped(status, login_uid, "imap-login")
        assert caps(status, "CapBnd") == 0, status["CapBnd"]
        assert os.readlink(f"/proc/{pid}/root") == empty
    # The chroot is empty and not writable by the login user.
    st = os.stat(empty)
    assert st.st_uid == 0 and not st.st_mode & 0o022
    assert os.listdir(empty) == []


@root_only
def test_auth_privileges(moat_server):
    auth_uid = pwd.getpwnam("moat-auth").pw_uid
    pids = moat_server.child_pids("auth")
    assert len(pids) == 1, moat_server.children()
    # The server is ready when imap-login greets; auth may still be between
    # exec and its privilege drop for a moment.
    assert_dropped(settled_status(pids[0]), auth_uid, "auth")


@root_only
def test_imap_privileges(moat_server):
    moat_server.login("testuser1")
    moat_server.login("testuser2")
    pids = moat_server.wait_children("imap", 2)
    by_uid = {int(proc_status(p)["Uid"].split()[0]): p for p in pids}
    for name, user in moat_server.users.items():
        assert user["uid"] in by_uid, (name, by_uid)
        status = settled_status(by_uid[user["uid"]])
        assert_dropped(status, user["uid"], f"imap of {name}")
        assert [int(x) for x in status["Gid"].split()] == [user["gid"]] * 4


@root_only
@pytest.mark.moat_settings(lmtp=True)
def test_lmtp_privileges(moat_server):
    """lmtp runs as its own user (not imap-login's or auth's), chrooted to
    the empty directory, with nothing to gain: no capabilities, no files."""
    lmtp_uid = pwd.getpwnam("moat-lmtp").pw_uid
    assert lmtp_uid not in (pwd.getpwnam("moat-login").pw_uid,
                            pwd.getpwnam("moat-auth").pw_uid)
    pids = moat_server.wait_children("lmtp", 1)
    empty = os.path.realpath(moat_server.base_dir / "empty")
    for pid in pids:
        status = settled_status(pid)
        assert_dropped(status, lmtp_uid, "lmtp")
        assert caps(status, "CapBnd") == 0, status["CapBnd"]
        assert os.readlink(f"/proc/{pid}/root") == empty
        # what it holds open: its sockets, the settings memfd, /dev/null
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            assert (target.startswith(("socket:", "pipe:", "anon_inode:")) or
                    target in ("/dev/null",) or "memfd:" in target), target


def test_lmtp_off_by_default(moat_server):
    moat_server.connect()
    assert moat_server.child_pids("lmtp") == []
    assert not moat_server.lmtp_socket.exists()
