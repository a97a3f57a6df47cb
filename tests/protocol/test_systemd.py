"""Master under systemd: the sd_notify protocol on $NOTIFY_SOCKET, syslog
priorities on the journal stream, and SIGUSR1 reopening log_path.

This machine's PID 1 need not be systemd, so the manager's side is played
here: a unix datagram socket that records what master sends, with the
sender's credentials as systemd checks them (NotifyAccess=main)."""

import os
import re
import signal
import socket
import struct
import time

import pytest

from moatserver import MoatServer, STOP_TIMEOUT, wait_for

# A reply for each state change; the server is slow only on a busy machine.
NOTIFY_TIMEOUT = 30.0


class NotifyListener:
    """The manager's end: one datagram per notification, with its sender."""

    def __init__(self, name, path):
        self.name = name
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(path)

    def receive(self, timeout=NOTIFY_TIMEOUT):
        """(fields dict, sender pid) of the next datagram."""
        self.sock.settimeout(timeout)
        creds_len = struct.calcsize("3i")
        data, anc, _flags, _addr = self.sock.recvmsg(4096, socket.CMSG_SPACE(creds_len))
        pid = None
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid, _uid, _gid = struct.unpack("3i", payload[:creds_len])
        text = data.decode()
        fields = dict(line.split("=", 1) for line in text.split("\n") if line)
        return fields, pid

    def close(self):
        self.sock.close()


@pytest.fixture(params=["abstract", "path"])
def notify(request, monkeypatch, tmp_path):
    """$NOTIFY_SOCKET for the server the test starts next: an abstract name
    ("@...", as systemd uses) or a path."""
    if request.param == "abstract":
        name = f"@moat-test-notify-{os.getpid()}-{time.monotonic_ns()}"
        listener = NotifyListener(name, "\0" + name[1:])
    else:
        path = str(tmp_path / "notify")
        listener = NotifyListener(path, path)
    monkeypatch.setenv("NOTIFY_SOCKET", listener.name)
    yield listener
    listener.close()


def environ_of(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read().split(b"\0")


def test_notify_ready_reload_stop(notify, moat_server):
    # READY once the listeners are open (the fixture has had a greeting).
    fields, pid = notify.receive()
    assert fields.get("READY") == "1", fields
    assert fields.get("STATUS") == "running", fields
    assert fields.get("MAINPID") == str(moat_server.pid), fields
    # systemd accepts it only from the main pid (NotifyAccess=main).
    assert pid == moat_server.pid
    # Children cannot speak for master: the variable is not passed on.
    [login] = moat_server.wait_children("imap-login", 1)
    assert not [e for e in environ_of(login) if e.startswith(b"NOTIFY_SOCKET=")]

    before = time.monotonic()
    os.kill(moat_server.pid, signal.SIGHUP)
    fields, pid = notify.receive()
    after = time.monotonic()
    assert fields.get("RELOADING") == "1", fields
    assert pid == moat_server.pid
    # CLOCK_MONOTONIC, in microseconds, taken when the reload began.
    usec = int(fields["MONOTONIC_USEC"])
    assert before * 1e6 - 1e6 <= usec <= after * 1e6 + 1e6, (before, usec, after)
    fields, _ = notify.receive()
    assert fields.get("READY") == "1", fields
    assert fields.get("STATUS") == "running (reloaded)", fields
    # auth restarts with the reload (moatserver's login_after_reload)
    moat_server.login_after_reload("testuser1", client=moat_server.connect())

    moat_server.close_clients()
    os.kill(moat_server.pid, signal.SIGTERM)
    fields, pid = notify.receive()
    assert fields.get("STOPPING") == "1", fields
    assert pid == moat_server.pid
    assert moat_server.proc.wait(STOP_TIMEOUT) == 0


def test_failed_reload_is_ready_again(notify, moat_server):
    assert notify.receive()[0].get("READY") == "1"
    good = moat_server.conf_path.read_text()
    moat_server.conf_path.write_text(good + "no_such_setting = 1\n")
    os.kill(moat_server.pid, signal.SIGHUP)
    assert notify.receive()[0].get("RELOADING") == "1"
    fields, _ = notify.receive()
    assert fields.get("READY") == "1", fields
    assert "reload failed" in fields.get("STATUS", ""), fields
    moat_server.conf_path.write_text(good)
    assert moat_server.login("testuser1").command("NOOP").ok


def test_bad_notify_socket_is_ignored(monkeypatch, request):
    """A NOTIFY_SOCKET that names nothing usable: a warning, and the server
    runs as without one."""
    monkeypatch.setenv("NOTIFY_SOCKET", "relative/name")
    server = MoatServer({})
    try:
        server.prepare()
        server.start()
        assert server.login("testuser1").command("NOOP").ok
        assert wait_for(lambda: "NOTIFY_SOCKET=relative/name is not a socket name"
                        in server.logs(), 10), server.logs()
        server.close_clients()
        rc, leftovers = server.stop()
        assert rc == 0 and not leftovers, server.logs()
        assert not server.sanitizer_reports(), server.logs()
    finally:
        server.kill_everything()
        server.cleanup()


PRIORITY_LINE = re.compile(r"^<([0-7])>")


def test_journal_priorities(monkeypatch):
    """With log_path empty and stderr being the journal stream, every line
    starts with its syslog priority and has no timestamp of its own."""
    server = MoatServer({"log_path": '""'})
    try:
        server.prepare()
        # master's stderr (start() appends to it) stands for the journal.
        server.stderr_path.touch()
        st = os.stat(server.stderr_path)
        monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
        server.start()
        c = server.connect()
        assert c.command("LOGIN testuser1 wrong").status == "NO"
        assert server.login("testuser1").command("NOOP").ok
        server.close_clients()
        rc, leftovers = server.stop()
        assert rc == 0 and not leftovers, server.logs()
        lines = server.stderr_path.read_text().splitlines()
        assert lines
        for line in lines:
            assert PRIORITY_LINE.match(line), line
            assert not re.match(r"^<\d>\d{4}-\d\d-\d\dT", line), line
        assert [l for l in lines if re.match(r"^<6>master: info: moat .* starting up", l)]
        assert "<6>master: info: stopping (signal)" in lines
        # a child's line: its level is read from the text it relayed
        assert [l for l in lines if l.startswith("<6>") and "master:" not in l]
    finally:
        server.kill_everything()
        server.cleanup()


def test_sigusr1_reopens_log(moat_server):
    """logrotate renames the file, then SIGUSR1: master writes to a new file
    at log_path, and children's relayed lines follow it."""
    log = moat_server.log_path
    assert wait_for(lambda: "starting up" in log.read_text(), 10)
    rotated = log.with_name(log.name + ".1")
    os.rename(log, rotated)
    os.kill(moat_server.pid, signal.SIGUSR1)
    assert wait_for(lambda: log.exists() and "SIGUSR1: log reopened" in log.read_text(),
                    NOTIFY_TIMEOUT), moat_server.logs()
    assert "SIGUSR1" not in rotated.read_text()
    size = log.stat().st_size
    c = moat_server.connect()
    assert c.command("LOGIN testuser1 wrong").status == "NO"
    assert moat_server.login("testuser1").command("NOOP").ok
    # Something a child relayed lands in the new file.
    assert wait_for(lambda: log.stat().st_size > size, NOTIFY_TIMEOUT)
    assert "SIGUSR1" not in rotated.read_text()


def test_sigusr1_keeps_old_log_when_reopen_fails(moat_server):
    log = moat_server.log_path
    assert wait_for(lambda: "starting up" in log.read_text(), 10)
    # A directory where the file was: open() fails, the old fd stays.
    rotated = log.with_name(log.name + ".1")
    os.rename(log, rotated)
    log.mkdir()
    try:
        os.kill(moat_server.pid, signal.SIGUSR1)
        assert wait_for(lambda: f"open({log}) failed" in rotated.read_text(),
                        NOTIFY_TIMEOUT), rotated.read_text()
        assert moat_server.login("testuser1").command("NOOP").ok
    finally:
        log.rmdir()
        os.rename(rotated, log)
