"""Socket activation (sd_listen_fds(3), master/master-activation.c): moat
started by a service manager that bound the listening sockets
(systemd-socket-activate here, moat.socket under systemd) serves on them
instead of binding its own, for IMAP and LMTP (TCP and a unix socket);
the configuration still decides what each socket is; a socket no
listener names is closed with a warning; a reload keeps them; master
never unlinks a unix socket that the manager made."""

import shutil
import signal

import pytest

from moatserver import free_port, wait_for
from test_lmtp import Lmtp, start, data, fetch_all

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-socket-activate") is None,
    reason="systemd-socket-activate (package systemd) is not installed")


def log_has(server, text):
    return text in server.logs()


@pytest.mark.moat_settings(socket_activation=[], lmtp=True)
def test_imap_and_lmtp_on_activated_sockets(moat_server):
    # moat could not have bound these itself: the launcher holds them
    assert wait_for(lambda: log_has(
        moat_server, "socket activation: 3 listeners from the service manager"),
        10), moat_server.logs()
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    messages = [b"Subject: activated %d\r\n\r\nover the manager's socket\r\n"
                % i for i in (1, 2)]
    for lmtp, message in zip((Lmtp(moat_server),
                              Lmtp(path=moat_server.lmtp_socket)), messages):
        replies = start(lmtp, ["testuser1"])
        assert replies[0][0] == 250, replies
        assert data(lmtp, message, 1)[0][0] == 250
        lmtp.cmd("QUIT")
    got = fetch_all(moat_server, "testuser1")
    assert len(got) == 2 and all(m.endswith(want)
                                 for m, want in zip(got, messages)), got
    # a reload keeps every socket (the listener keys are unchanged)
    moat_server.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: "SIGHUP: reloading" in moat_server.logs(), 10)
    c2 = moat_server.login_after_reload("testuser1")
    assert c2.command("NOOP").ok
    lmtp = Lmtp(path=moat_server.lmtp_socket)
    assert lmtp.cmd("LHLO x")[0] == 250
    lmtp.cmd("QUIT")
    assert "reload failed" not in moat_server.logs()
    assert "error: reload" not in moat_server.logs()


def test_unused_activated_socket_is_closed(request):
    """A socket the configuration does not name: a warning, and closed in
    master (connections to it are not accepted by any moat process)."""
    from moatserver import MoatServer
    spare = free_port()
    server = MoatServer({"socket_activation": [f"127.0.0.1:{spare}"]})
    request.addfinalizer(lambda: (server.kill_everything(), server.cleanup()))
    server.prepare()
    server.start()
    assert wait_for(lambda: log_has(
        server, f"no listener is configured for 127.0.0.1:{spare}; closing it"),
        10), server.logs()
    assert log_has(server, "socket activation: 1 listeners")
    # master holds no socket bound to the spare port
    inodes = set()
    import os
    for fd in os.listdir(f"/proc/{server.pid}/fd"):
        try:
            target = os.readlink(f"/proc/{server.pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    spare_hex = ":%04X" % spare
    with open("/proc/net/tcp") as f:
        bound = [line.split()[9] for line in f.readlines()[1:]
                 if line.split()[1].endswith(spare_hex) and
                 line.split()[3] == "0A"]
    assert not set(bound) & inodes
    assert server.login("testuser1").command("NOOP").ok
    rc, leftovers = server.stop()
    assert rc == 0 and not leftovers


@pytest.mark.moat_settings(socket_activation=[], lmtp=True)
def test_activated_unix_socket_is_not_unlinked(moat_server):
    """The manager made the socket file: it stays after master stops (so
    the manager can start moat again on the next connection)."""
    path = moat_server.lmtp_socket
    assert path.is_socket()
    rc, leftovers = moat_server.stop()
    assert rc == 0 and not leftovers
    assert path.is_socket()
