"""Master's process supervision: restarts, reload and shutdown."""

import os
import signal

from moatserver import proc_alive, wait_for


def test_killed_login_process_is_restarted(moat_server):
    old = moat_server.wait_children("imap-login", 1)
    os.kill(old[0], signal.SIGKILL)
    new = wait_for(lambda: [p for p in moat_server.child_pids("imap-login")
                            if p not in old], 30)
    assert new, "no new imap-login within 30 s\n" + moat_server.logs()
    c = moat_server.login("testuser1")
    assert c.command("NOOP").ok
    assert proc_alive(moat_server.pid)


def test_killed_imap_process_does_not_affect_others(moat_server):
    c1 = moat_server.login("testuser1")
    [victim] = moat_server.wait_children("imap", 1)
    c2 = moat_server.login("testuser2")
    moat_server.wait_children("imap", 2)
    os.kill(victim, signal.SIGKILL)
    c1.wait_closed(30)
    # The other user's session goes on; the killed user can log in again.
    assert c2.command("NOOP").ok
    assert moat_server.login("testuser1").command("NOOP").ok
    assert proc_alive(moat_server.pid)


def test_sighup_keeps_sessions(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    pre = moat_server.connect()
    master = moat_server.pid
    old_logins = moat_server.child_pids("imap-login")
    old_auth = moat_server.child_pids("auth")
    os.kill(master, signal.SIGHUP)
    # The reload is done when a new imap-login and a new auth run.
    assert wait_for(lambda: "SIGHUP: reloading" in moat_server.logs() and
                    [p for p in moat_server.child_pids("imap-login")
                     if p not in old_logins] and
                    [p for p in moat_server.child_pids("auth")
                     if p not in old_auth], 30), moat_server.logs()
    assert proc_alive(master)
    # The logged-in session and a pre-auth one both survive the reload.
    assert c.command("NOOP").ok
    assert pre.command("NOOP").ok
    # auth restarts with the new settings (login_after_reload)
    moat_server.login_after_reload("testuser2", client=pre)
    assert pre.command("NOOP").ok
    # New connections log in.
    c2 = moat_server.login("testuser1")
    assert c2.command("NOOP").ok
    assert c.command("NOOP").ok


def test_sigterm_leaves_nothing_behind(moat_server):
    c = moat_server.login("testuser1")
    moat_server.connect()
    moat_server.wait_children("imap", 1)
    tree = moat_server.descendants()
    assert len(tree) >= 3, tree
    os.kill(moat_server.pid, signal.SIGTERM)
    rc = moat_server.proc.wait(10)
    assert rc == 0, moat_server.logs()
    left = wait_for(lambda: not [p for p, st in tree.items() if proc_alive(p, st)], 30)
    assert left, [p for p, st in tree.items() if proc_alive(p, st)]
    # Clients see the connection closed.
    c.wait_closed(30)
