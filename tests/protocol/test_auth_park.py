"""LOGIN/AUTHENTICATE while imap-login has no connection to auth (a reload
restarts auth): the request waits for the new auth instead of getting NO
[UNAVAILABLE], bounded by login_auth_park_limit and
login_auth_park_timeout (doc/configuration.md).

The window is made reliable without sleeping: the running auth is
stopped (SIGSTOP) before the reload, so master's SIGTERM stays pending,
the new imap-login process cannot get a socket to any auth and parks
what it receives; SIGCONT lets the old auth die, master starts the new
one and hands imap-login its socket."""

import base64
import os
import signal
import time

import pytest

from moatserver import wait_for

PARKED = "auth is not connected: request of"


def auth_ready(server):
    """auth's pid once it serves logins: stopped earlier, before it routes
    SIGTERM through its event loop, master's SIGTERM would kill it at
    once."""
    server.login("testuser2").close()
    [auth] = server.wait_children("auth", 1)
    return auth


@pytest.fixture
def auth_held(moat_server):
    """Reload with auth stopped; yields a function that lets it go. The new
    imap-login process is running (and has no auth) when it yields."""
    auth = auth_ready(moat_server)
    old_logins = moat_server.child_pids("imap-login")
    os.kill(auth, signal.SIGSTOP)
    released = []

    def release():
        if not released:
            released.append(True)
            os.kill(auth, signal.SIGCONT)
    try:
        os.kill(moat_server.pid, signal.SIGHUP)
        # The old imap-login (no clients) has exited, so the new one
        # accepts; it found its auth socket closed (auth is shutting down)
        # and waits for master to hand it one.
        def reloaded():
            logins = moat_server.child_pids("imap-login")
            return (logins and not set(logins) & set(old_logins) and
                    "auth connection lost" in moat_server.logs())
        assert wait_for(reloaded, 30), moat_server.logs()
        yield release
    finally:
        release()


def parked_count(server):
    return server.logs().count(PARKED)


def send_login(client, user, password, tag="p1"):
    client.send(f"{tag} LOGIN {user} {password}\r\n")
    return tag


def reload_while_auth_stopped(server, auth, client, send):
    """send() a request of client's while auth is stopped (SIGSTOP: it
    waits in auth's socket, unanswered), then reload; auth continues only
    after the reload began, so it goes away with the request unanswered."""
    os.kill(auth, signal.SIGSTOP)
    try:
        send()
        assert client.read_line_within(0.2) is None, server.logs()
        os.kill(server.pid, signal.SIGHUP)
        assert wait_for(lambda: "SIGHUP: reloading" in server.logs(),
                        30), server.logs()
    finally:
        os.kill(auth, signal.SIGCONT)


@pytest.mark.moat_settings(log_debug="yes")
def test_login_during_reload_succeeds(moat_server, auth_held):
    c = moat_server.connect()
    tag = send_login(c, "testuser1", moat_server.users["testuser1"]["password"])
    assert wait_for(lambda: parked_count(moat_server) >= 1, 30), \
        moat_server.logs()
    # Nothing is answered while auth is away.
    assert c.read_line_within(0.2) is None
    # AUTHENTICATE PLAIN with SASL-IR waits the same way.
    a = moat_server.connect()
    ir = base64.b64encode(
        b"\0testuser2\0" +
        moat_server.users["testuser2"]["password"].encode()).decode()
    a.send(f"q1 AUTHENTICATE PLAIN {ir}\r\n")
    assert wait_for(lambda: parked_count(moat_server) >= 2, 30), \
        moat_server.logs()
    auth_held()
    r = c.read_tagged(tag)
    assert r.ok, (r, moat_server.logs())
    assert c.command("SELECT INBOX").ok
    r = a.read_tagged("q1")
    assert r.ok, (r, moat_server.logs())
    assert a.command("NOOP").ok


@pytest.mark.moat_settings(log_debug="yes", login_auth_park_limit=1)
def test_park_limit_answers_unavailable(moat_server, auth_held):
    first = moat_server.connect()
    tag = send_login(first, "testuser1",
                     moat_server.users["testuser1"]["password"])
    assert wait_for(lambda: parked_count(moat_server) >= 1, 30), \
        moat_server.logs()
    # The second one does not fit: answered at once, as before parking.
    second = moat_server.connect()
    r = second.command("LOGIN testuser2 "
                       + moat_server.users["testuser2"]["password"])
    assert r.status == "NO" and r.code == "UNAVAILABLE", r
    assert parked_count(moat_server) == 1
    auth_held()
    r = first.read_tagged(tag)
    assert r.ok, (r, moat_server.logs())
    # The refused client logs in once auth is back.
    moat_server.login_after_reload("testuser2", client=second)


@pytest.mark.moat_settings(log_debug="yes", login_auth_park_timeout=1)
def test_park_timeout_answers_unavailable(moat_server, auth_held):
    c = moat_server.connect()
    start = time.monotonic()
    tag = send_login(c, "testuser1", moat_server.users["testuser1"]["password"])
    r = c.read_tagged(tag)
    waited = time.monotonic() - start
    assert r.status == "NO" and r.code == "UNAVAILABLE", r
    assert waited >= 0.9, waited
    # (the log lines come through master, maybe after the answer)
    assert wait_for(lambda: "login_auth_park_timeout" in moat_server.logs(),
                    30), moat_server.logs()
    assert parked_count(moat_server) == 1, moat_server.logs()
    auth_held()
    # The same connection logs in once auth is back (a tempfail is no
    # failed authentication).
    moat_server.login_after_reload("testuser1", client=c)


@pytest.mark.moat_settings(log_debug="yes", login_auth_park_limit=0)
def test_park_limit_zero_keeps_old_behaviour(moat_server, auth_held):
    c = moat_server.connect()
    r = c.command("LOGIN testuser1 " + moat_server.users["testuser1"]["password"])
    assert r.status == "NO" and r.code == "UNAVAILABLE", r
    assert parked_count(moat_server) == 0


@pytest.mark.moat_settings(log_debug="yes")
def test_parked_client_hangs_up(moat_server, auth_held):
    gone = moat_server.connect()
    send_login(gone, "testuser1", moat_server.users["testuser1"]["password"])
    assert wait_for(lambda: parked_count(moat_server) >= 1, 30), \
        moat_server.logs()
    gone.close()
    assert wait_for(lambda: "Connection closed during authentication"
                    in moat_server.logs(), 30), moat_server.logs()
    auth_held()
    c = moat_server.login_after_reload("testuser2")
    assert c.command("NOOP").ok


@pytest.mark.moat_settings(log_debug="yes", auth_failure_delay="1 secs")
def test_parked_requests_pay_the_penalty(moat_server, auth_held):
    """A parked request is an ordinary request for the new auth: a wrong
    password is answered after the penalty delay, and the address's next
    authentication (right password) waits for it too."""
    c = moat_server.connect()
    tag = send_login(c, "testuser1", "wrong-password")
    assert wait_for(lambda: parked_count(moat_server) >= 1, 30), \
        moat_server.logs()
    auth_held()
    start = time.monotonic()
    r = c.read_tagged(tag)
    assert r.status == "NO" and r.code == "AUTHENTICATIONFAILED", r
    assert time.monotonic() - start >= 0.9
    start = time.monotonic()
    r = c.command("LOGIN testuser1 " + moat_server.users["testuser1"]["password"])
    assert r.ok, (r, moat_server.logs())
    assert time.monotonic() - start >= 0.9


@pytest.mark.moat_settings(log_debug="yes")
def test_request_at_auth_during_reload_is_sent_again(moat_server):
    """A LOGIN that auth has but has not answered when it goes away (a
    reload's SIGTERM) is parked and sent to the new auth: the client sees
    its OK, not NO [UNAVAILABLE]."""
    auth = auth_ready(moat_server)
    c = moat_server.connect()
    reload_while_auth_stopped(
        moat_server, auth, c,
        lambda: send_login(c, "testuser1",
                           moat_server.users["testuser1"]["password"]))
    r = c.read_tagged("p1")
    assert r.ok, (r, moat_server.logs())
    assert parked_count(moat_server) >= 1, moat_server.logs()
    assert c.command("NOOP").ok


@pytest.mark.moat_settings(log_debug="yes")
def test_token_of_replaced_auth_is_sent_again(moat_server):
    """The other order of the race above: the old auth answers the LOGIN,
    and its token reaches master only after the reload's new auth took
    over. The new auth knows the token is not its own (FOREIGN), master
    answers HANDOFF-RETRY and the login is sent to the new auth.

    Made reliable by stopping imap-login while auth answers and the
    reload runs: its token waits in its auth socket until the new auth is
    up."""
    auth = auth_ready(moat_server)
    [login] = moat_server.child_pids("imap-login")
    c = moat_server.connect()
    os.kill(auth, signal.SIGSTOP)
    try:
        send_login(c, "testuser1", moat_server.users["testuser1"]["password"])
        assert c.read_line_within(0.2) is None, moat_server.logs()
        os.kill(login, signal.SIGSTOP)
        os.kill(auth, signal.SIGCONT)
        assert wait_for(lambda: "auth ok: user=testuser1" in
                        moat_server.logs(), 30), moat_server.logs()
        os.kill(moat_server.pid, signal.SIGHUP)

        def new_auth_up():
            pids = moat_server.child_pids("auth")
            return (len(pids) == 1 and pids[0] != auth and
                    f"auth[{pids[0]}]: debug: passwd-file" in
                    moat_server.logs())
        assert wait_for(new_auth_up, 30), moat_server.logs()
    finally:
        for pid in (auth, login):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass   # the old auth exited once it was let go
    r = c.read_tagged("p1")
    assert r.ok, (r, moat_server.logs())
    assert "was issued by another auth process" in moat_server.logs()
    assert parked_count(moat_server) >= 1, moat_server.logs()
    assert c.command("NOOP").ok


@pytest.mark.moat_settings(log_debug="yes")
def test_authenticate_without_ir_waits_for_auth(moat_server, auth_held):
    """AUTHENTICATE PLAIN without an initial response while auth is away:
    nothing has been asked of the client yet, so it is parked like LOGIN;
    the new auth sends the empty challenge and the exchange goes on."""
    c = moat_server.connect()
    c.send("s1 AUTHENTICATE PLAIN\r\n")
    assert wait_for(lambda: parked_count(moat_server) >= 1, 30), \
        moat_server.logs()
    assert c.read_line_within(0.2) is None
    auth_held()
    line = c.read_line()
    assert line.rstrip() == b"+", line
    secret = moat_server.users["testuser1"]["password"].encode()
    c.send(base64.b64encode(b"\0testuser1\0" + secret) + b"\r\n")
    r = c.read_tagged("s1")
    assert r.ok, (r, moat_server.logs())
    assert c.command("NOOP").ok
