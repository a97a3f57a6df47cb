"""What a restart of auth (a crash, a reload) does to authentication:
the per-address penalty survives it (master keeps the table and hands
it to the new auth, auth/auth-penalty-sync.h), and a SASL exchange that
loses auth in its middle gets a clean NO [UNAVAILABLE] the client can
retry, while one with an initial response that auth had not answered is
sent to the new auth like LOGIN (test_auth_park.py has the rest)."""

import base64
import os
import signal
import time

import pytest

from moatserver import wait_for
from test_abuse_guessing import connect_from
from test_auth_park import reload_while_auth_stopped

RESTORED = "penalty table: 1 addresses from master"


def auth_pid(server):
    """auth's pid once it serves logins."""
    server.login("testuser2").close()
    [auth] = server.wait_children("auth", 1)
    return auth


def wait_new_auth(server, old):
    def replaced():
        pids = server.child_pids("auth")
        return len(pids) == 1 and pids[0] != old
    assert wait_for(replaced, 30), server.children()


def plain_ir(server, user):
    secret = server.users[user]["password"].encode()
    return base64.b64encode(b"\0" + user.encode() + b"\0" + secret).decode()


@pytest.mark.moat_settings(log_debug="yes", auth_failure_delay="2 secs")
def test_penalty_survives_auth_crash(moat_server):
    """kill -9 of auth right after a failure: the new auth knows the
    address's failure, so the next guess waits for its turn (4 s after
    the failure) and is then answered after the delay of two failures
    (4 s). A fresh table would answer it 2 s after the restart."""
    auth = auth_pid(moat_server)
    c = moat_server.connect()
    r = c.command("LOGIN testuser1 wrong-password")
    answered = time.monotonic()
    assert r.status == "NO" and r.code == "AUTHENTICATIONFAILED", r
    os.kill(auth, signal.SIGKILL)
    wait_new_auth(moat_server, auth)
    assert wait_for(lambda: RESTORED in moat_server.logs(), 30), \
        moat_server.logs()

    def guess():
        r = c.command("LOGIN testuser1 wrong-again")
        return r if b"[UNAVAILABLE]" not in r.line else None
    r = wait_for(guess, 30, interval=0.5)
    assert r and r.status == "NO" and r.code == "AUTHENTICATIONFAILED", r
    assert time.monotonic() - answered >= 5.5
    # A right password from the address waits too, on a new connection.
    start = time.monotonic()
    moat_server.login("testuser1").close()
    assert time.monotonic() - start >= 3.5


@pytest.mark.moat_settings(log_debug="yes", auth_failure_delay="2 secs",
                           disable_plaintext_auth="no")
def test_many_addresses_survive_in_chunks(moat_server):
    """20 penalised addresses reach the new auth in two PENALTY-LOADs (15
    a record, each acknowledged), and the last of them is still
    penalised."""
    auth = auth_pid(moat_server)
    ips = [f"127.0.0.{100 + i}" for i in range(1, 21)]
    clients = [connect_from(moat_server, ip) for ip in ips]
    for c in clients:
        c.send("g1 LOGIN testuser1 wrong-password\r\n")
    for c in clients:
        r = c.read_tagged("g1")
        assert r.status == "NO" and r.code == "AUTHENTICATIONFAILED", r
    answered = time.monotonic()
    os.kill(auth, signal.SIGKILL)
    wait_new_auth(moat_server, auth)
    def loaded():
        logs = moat_server.logs()
        return ("penalty table: 15 addresses from master" in logs and
                "penalty table: 5 addresses from master" in logs)
    assert wait_for(loaded, 30), moat_server.logs()
    last = connect_from(moat_server, ips[-1])
    def login():
        r = last.command("LOGIN testuser1 " +
                         moat_server.users["testuser1"]["password"])
        return r if b"[UNAVAILABLE]" not in r.line else None
    r = wait_for(login, 30, interval=0.5)
    assert r and r.ok, (r, moat_server.logs())
    assert time.monotonic() - answered >= 1.9
    # an address never penalised logs in at once
    start = time.monotonic()
    connect_from(moat_server, "127.0.0.99").command(
        "LOGIN testuser1 " + moat_server.users["testuser1"]["password"])
    assert time.monotonic() - start < 1.5


@pytest.mark.moat_settings(log_debug="yes", auth_failure_delay="2 secs")
def test_penalty_survives_reload(moat_server):
    """A reload restarts auth; guessing across it gains nothing."""
    auth = auth_pid(moat_server)
    c = moat_server.connect()
    r = c.command("LOGIN testuser1 wrong-password")
    answered = time.monotonic()
    assert r.status == "NO" and r.code == "AUTHENTICATIONFAILED", r
    os.kill(moat_server.pid, signal.SIGHUP)
    wait_new_auth(moat_server, auth)
    assert wait_for(lambda: RESTORED in moat_server.logs(), 30), \
        moat_server.logs()
    moat_server.login_after_reload("testuser1", client=c)
    # the check started no earlier than 2 s after the failure's answer
    assert time.monotonic() - answered >= 1.9


@pytest.mark.moat_settings(log_debug="yes")
def test_clean_addresses_are_not_kept(moat_server):
    """Right passwords leave nothing for master to keep."""
    auth = auth_pid(moat_server)
    moat_server.login("testuser1").close()
    os.kill(auth, signal.SIGKILL)
    wait_new_auth(moat_server, auth)
    moat_server.login_after_reload("testuser1").close()
    assert "penalty table:" not in moat_server.logs()


@pytest.mark.moat_settings(log_debug="yes")
def test_sasl_exchange_loses_auth(moat_server):
    """AUTHENTICATE LOGIN after its first challenge: auth asked something
    and the exchange cannot be restarted behind the client's back (RFC
    4422 3.1: the exchange's state is the server's; a new auth has none).
    The client gets NO [UNAVAILABLE] at once, not a hang, and may retry
    on the same connection."""
    auth = auth_pid(moat_server)
    c = moat_server.connect()
    c.send("s1 AUTHENTICATE LOGIN\r\n")
    line = c.read_line()
    assert line.startswith(b"+ "), line
    os.kill(auth, signal.SIGKILL)
    r = c.read_tagged("s1")
    assert r.status == "NO" and r.code == "UNAVAILABLE", r
    assert b"Temporary authentication failure" in r.line, r
    wait_new_auth(moat_server, auth)
    moat_server.login_after_reload("testuser1", client=c)
    assert c.command("NOOP").ok


@pytest.mark.moat_settings(log_debug="yes")
def test_sasl_ir_at_auth_during_reload_is_sent_again(moat_server):
    """AUTHENTICATE PLAIN with an initial response that auth has not
    answered when it goes away: nothing of the exchange was asked yet, so
    the new auth gets it like a LOGIN and the client sees its OK."""
    auth = auth_pid(moat_server)
    c = moat_server.connect()
    reload_while_auth_stopped(
        moat_server, auth, c,
        lambda: c.send(f"s1 AUTHENTICATE PLAIN "
                       f"{plain_ir(moat_server, 'testuser1')}\r\n"))
    r = c.read_tagged("s1")
    assert r.ok, (r, moat_server.logs())
    assert "request of" in moat_server.logs() and \
        "parked" in moat_server.logs(), moat_server.logs()
    assert c.command("NOOP").ok
