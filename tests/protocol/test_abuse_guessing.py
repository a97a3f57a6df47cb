"""Online password guessing (doc/security.md, "Authentication penalty"):
every authentication from an address with failures waits for the
address's penalty before its password is checked, one at a time, a right
password too; counted across connections and processes; other and
trusted addresses are not held up; the per-IP pre-auth connection limit
holds over all imap-login processes.

The delays are timed against lower bounds only (a server cannot answer
before its timer), so a busy machine cannot make these tests fail; the
settings are small (a base delay of 200 ms) and the shape is checked:
reply k of a guesser arrives no earlier than base * (2^k - 1) after its
first guess. bench/auth-guessing.py measures the real-settings figure."""

import socket
import threading
import time

import pytest

from moatimap import ConnectionClosed, ImapClient
from moatserver import wait_for

BASE = 0.2      # auth_failure_delay in these tests, seconds
# Timers work in whole milliseconds: allow for the rounding only.
SLACK = 0.01


def connect_from(server, source_ip, greeting=True):
    """A client connecting from source_ip (127.0.0.x): not the same host,
    so penalties and per-IP limits apply."""
    c = ImapClient.__new__(ImapClient)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source_ip, 0))
    s.settimeout(60)
    s.connect((server.host, server.port))
    c.sock, c.buf, c.tag_no, c.closed, c.greeting = s, b"", 0, False, None
    server.clients.append(c)
    if greeting:
        c.greeting = c.read_greeting()
    return c


def cumulative(k, base=BASE):
    """Earliest time of reply k (1-based) after the first guess."""
    return base * (2 ** k - 1)


def send_login(c, tag, password):
    c.send(f"{tag} LOGIN testuser1 {password}\r\n")


def read_reply_times(clients, tag, t0):
    """[(seconds since t0, Response)] of each client's reply, in parallel
    threads so one slow reply does not delay reading the others."""
    results = [None] * len(clients)

    def reader(i, c):
        r = c.read_tagged(tag)
        results[i] = (time.monotonic() - t0, r)
    threads = [threading.Thread(target=reader, args=(i, c))
               for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(r is not None for r in results), results
    return results


PENALTY = dict(auth_failure_delay="200 ms", disable_plaintext_auth="no")


@pytest.mark.moat_settings(**PENALTY)
def test_guesses_on_fresh_connections_wait(moat_server):
    """One guess per fresh connection, sent without waiting for the
    previous answer (the red team's way): each waits for the penalty."""
    n = 5
    t0 = time.monotonic()
    clients = []
    for i in range(n):
        c = connect_from(moat_server, "127.0.0.5")
        send_login(c, "g", f"wrong{i}")
        clients.append(c)
        time.sleep(0.05)
    results = read_reply_times(clients, "g", t0)
    times = sorted(t for t, _ in results)
    for _, r in results:
        assert r.status == "NO" and r.code == "AUTHENTICATIONFAILED", r
    for k, t in enumerate(times, 1):
        assert t >= cumulative(k) - SLACK, (k, times)


@pytest.mark.moat_settings(**PENALTY)
def test_parallel_guesses_wait_in_turn(moat_server):
    """Guesses sent at once over many connections are checked one after
    the other, each after the penalty of the failures before it."""
    n = 5
    clients = [connect_from(moat_server, "127.0.0.6") for _ in range(n)]
    t0 = time.monotonic()
    for i, c in enumerate(clients):
        send_login(c, "p", f"wrong{i}")
    results = read_reply_times(clients, "p", t0)
    times = sorted(t for t, _ in results)
    for k, t in enumerate(times, 1):
        assert t >= cumulative(k) - SLACK, (k, times)


@pytest.mark.moat_settings(**PENALTY)
def test_right_password_is_delayed_too(moat_server):
    """After a failure a right password waits for the penalty like a
    wrong one (else the answer time would tell a guesser he is right),
    and the success does not clear the address's failures."""
    a = connect_from(moat_server, "127.0.0.7")
    b = connect_from(moat_server, "127.0.0.7")
    t0 = time.monotonic()
    send_login(a, "w", "wrong")
    send_login(b, "r", "pass")
    ra = a.read_tagged("w")
    rb = b.read_tagged("r")
    t_right = time.monotonic() - t0
    assert ra.status == "NO", ra
    assert rb.ok, rb
    assert t_right >= BASE - SLACK, t_right
    # Still penalised: the next right password waits again (its check
    # starts at least a delay after the previous one started).
    c = connect_from(moat_server, "127.0.0.7")
    assert c.command("LOGIN testuser1 pass").ok
    # b's check started at >= t0 + BASE; c's starts >= BASE after that.
    assert time.monotonic() - t0 >= 2 * BASE - SLACK


@pytest.mark.moat_settings(**PENALTY)
def test_other_addresses_answered_meanwhile(moat_server):
    """While one address's guesses wait (auth's event loop keeps
    running), another address logs in at once."""
    n = 6
    clients = [connect_from(moat_server, "127.0.0.8") for _ in range(n)]
    t0 = time.monotonic()
    for i, c in enumerate(clients):
        send_login(c, "q", f"wrong{i}")
    other = connect_from(moat_server, "127.0.0.9")
    assert other.command("LOGIN testuser1 pass").ok
    t_other = time.monotonic() - t0
    results = read_reply_times(clients, "q", t0)
    last = max(t for t, _ in results)
    assert last >= cumulative(n) - SLACK, last
    # The guesser's queue took over 12 s; the other address did not wait
    # for it.
    assert t_other < last, (t_other, last)
    assert t_other < cumulative(n) / 2, t_other


@pytest.mark.moat_settings(auth_failure_delay="500 ms",
                           disable_plaintext_auth="no")
def test_short_wait_not_held_by_longer_one(moat_server):
    """Two penalised addresses wait at once: the one whose delay ends
    first is served then, not when the other's (longer) delay ends."""
    for i in range(4):
        # a new connection per guess: imap_max_auth_attempts is 3
        x = connect_from(moat_server, "127.0.0.14")
        assert x.command(f"LOGIN testuser1 wrong{i}").status == "NO"
    # 127.0.0.14 has 4 failures: its next guess waits 4 s
    x = connect_from(moat_server, "127.0.0.14")
    send_login(x, "x", "wrong")
    y = connect_from(moat_server, "127.0.0.15")
    assert y.command("LOGIN testuser1 wrong").status == "NO"
    # 127.0.0.15 has 1 failure: its next check waits 0.5 s
    t0 = time.monotonic()
    assert y.command("LOGIN testuser1 pass").ok
    waited = time.monotonic() - t0
    assert waited >= 0.5 - SLACK, waited
    assert waited < 2.0, waited
    assert x.read_tagged("x").status == "NO"


@pytest.mark.moat_settings(auth_failure_delay="1 sec",
                           disable_plaintext_auth="no",
                           login_trusted_networks="127.0.0.10")
def test_trusted_network_not_delayed(moat_server):
    """login_trusted_networks stay exempt: parallel failures from there
    are answered without the penalty (that would take 15 s here)."""
    n = 4
    clients = [connect_from(moat_server, "127.0.0.10") for _ in range(n)]
    t0 = time.monotonic()
    for i, c in enumerate(clients):
        send_login(c, "t", f"wrong{i}")
    results = read_reply_times(clients, "t", t0)
    for _, r in results:
        assert r.status == "NO", r
    assert max(t for t, _ in results) < cumulative(n, 1.0) / 2, results


@pytest.mark.moat_settings(auth_failure_delay="1 sec",
                           disable_plaintext_auth="no")
def test_too_many_waiting_refused_and_cancelled(moat_server):
    """At most 16 authentications of an address wait (auth-penalty.h);
    more get NO [LIMIT] at once and are no failure. Waiting ones whose
    clients go away leave the queue."""
    first = connect_from(moat_server, "127.0.0.11")
    assert first.command("LOGIN testuser1 wrong").status == "NO"
    waiting = [connect_from(moat_server, "127.0.0.11") for _ in range(20)]
    for i, c in enumerate(waiting):
        send_login(c, "x", f"wrong{i}")
    # One is checked (and fails after 2 s), 16 wait, the rest are
    # refused at once; within 5 s at most the one checked fails.
    deadline = time.monotonic() + 5
    limited, other = [], []
    for c in waiting:
        line = c.read_line_within(max(0.1, deadline - time.monotonic()))
        if line is None:
            continue
        (limited if line.startswith(b"x NO [LIMIT] ") else other).append(line)
    assert len(limited) >= 3, (limited, other)
    assert len(other) <= 1, other
    for line in other:
        assert line.startswith(b"x NO [AUTHENTICATIONFAILED]"), line
    # The clients that still wait leave; their requests are dropped, so
    # a right password now waits for one delay, not for their checks
    # (which would take 1+2+4+8+15... s).
    for c in waiting:
        c.close()
    time.sleep(0.5)
    c = connect_from(moat_server, "127.0.0.11")
    t0 = time.monotonic()
    assert c.command("LOGIN testuser1 pass").ok
    assert time.monotonic() - t0 < 10


@pytest.mark.moat_settings(login_max_connections_per_ip=2,
                           disable_plaintext_auth="no",
                           services={"imap-login": {"client_limit": 1,
                                                    "process_limit": 8}})
def test_preauth_connections_per_ip_over_processes(moat_server):
    """login_max_connections_per_ip counts over all imap-login processes:
    with one client per process, a third connection of an address is
    still refused."""
    a = connect_from(moat_server, "127.0.0.12")
    b = connect_from(moat_server, "127.0.0.12")
    assert a.greeting.startswith(b"* OK") and b.greeting.startswith(b"* OK")
    assert len(moat_server.child_pids("imap-login")) >= 2
    c = connect_from(moat_server, "127.0.0.12", greeting=False)
    rest = c.wait_closed(60)
    assert rest.startswith(b"* BYE [UNAVAILABLE] Too many connections"), rest
    d = connect_from(moat_server, "127.0.0.13")
    assert d.greeting.startswith(b"* OK")
    # A connection that logs in is no longer counted.
    assert a.command("LOGIN testuser1 pass").ok

    def greeted():
        e = connect_from(moat_server, "127.0.0.12", greeting=False)
        try:
            return e.read_line().startswith(b"* OK")
        except (ConnectionClosed, OSError):
            return False
    assert wait_for(greeted, 60), moat_server.logs()
