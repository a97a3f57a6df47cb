"""Bad input: over-long lines, too many bad commands, idle pre-auth
clients, and pipelined commands (DESIGN: bounded memory, a clear error
or disconnect, other clients unaffected)."""

import time

import pytest

from moatimap import ConnectionClosed

LONG = 20 * 1024


def read_until_tag(c, tag):
    """Lines up to and including the one tagged tag (any status)."""
    lines = []
    while True:
        line = c.read_line()
        lines.append(line)
        if line.startswith(tag.encode() + b" "):
            return lines


def assert_long_line_rejected(c, command):
    """Sends an over-long line, expects BAD (tagged or untagged), then a
    working session."""
    c.send(b"x1 " + command + b"\r\n")
    bad = None
    while bad is None:
        line = c.read_line()
        if line.startswith(b"x1 ") or line.startswith(b"* BAD"):
            bad = line
    assert bad.startswith(b"x1 BAD") or bad.startswith(b"* BAD"), bad
    c.send(b"x2 NOOP\r\n")
    lines = read_until_tag(c, "x2")
    assert lines[-1].startswith(b"x2 OK"), lines


@pytest.mark.moat_settings(imap_max_line_length="8k")
def test_long_line_preauth(moat_server):
    c = moat_server.connect()
    # Without the limit this would be an ordinary failed LOGIN (NO).
    assert_long_line_rejected(c, b"LOGIN " + b"u" * LONG + b" pass")
    assert c.command("LOGIN testuser1 pass").ok


@pytest.mark.moat_settings(imap_max_line_length="8k")
def test_long_line_postauth(moat_server):
    c = moat_server.login("testuser1")
    # Without the limit this would be a SELECT of a missing mailbox (NO).
    assert_long_line_rejected(c, b"SELECT " + b"m" * LONG)
    assert c.command("SELECT INBOX").ok


@pytest.mark.moat_settings(imap_max_line_length="8k")
def test_long_line_other_clients_unaffected(moat_server):
    other = moat_server.login("testuser1")
    c = moat_server.connect()
    c.send(b"x1 LOGIN " + b"u" * (LONG * 10) + b"\r\n")
    assert other.command("NOOP").ok
    assert moat_server.login("testuser2").command("NOOP").ok


def send_bad_until_bye(c, limit):
    """Sends unknown commands one by one; returns how many got BAD before
    the BYE. Waits briefly for a BYE after each BAD, so no command is sent
    to a connection the server has already closed."""
    bads = 0
    for i in range(limit + 2):
        tag = f"b{i}"
        c.send(f"{tag} NOSUCHCOMMAND\r\n")
        while True:
            try:
                line = c.read_line()
            except ConnectionClosed:
                raise AssertionError(f"closed without BYE after {bads} BAD")
            if line.startswith(b"* BYE"):
                return bads
            if line.startswith(tag.encode() + b" "):
                assert line.startswith(f"{tag} BAD".encode()), line
                bads += 1
                break
        try:
            line = c.read_line_within(0.5)
        except ConnectionClosed:
            raise AssertionError(f"closed without BYE after {bads} BAD")
        if line is not None:
            assert line.startswith(b"* BYE"), line
            return bads
    raise AssertionError(f"no BYE after {bads} bad commands (limit {limit})")


@pytest.mark.moat_settings(imap_max_bad_commands=3)
def test_bad_commands_limit_preauth(moat_server):
    c = moat_server.connect()
    bads = send_bad_until_bye(c, 3)
    assert bads in (3, 4), bads
    c.wait_closed(30)
    # Other clients are still served.
    assert moat_server.login("testuser1").command("NOOP").ok


@pytest.mark.moat_settings(imap_max_bad_commands=3)
def test_bad_commands_limit_postauth(moat_server):
    c = moat_server.login("testuser1")
    bads = send_bad_until_bye(c, 3)
    assert bads in (3, 4), bads
    c.wait_closed(30)
    assert moat_server.login("testuser1").command("NOOP").ok


@pytest.mark.moat_settings(login_timeout=2)
def test_login_timeout(moat_server):
    c = moat_server.connect()
    start = time.monotonic()
    rest = c.wait_closed(30)
    assert rest.startswith(b"* BYE"), rest
    assert time.monotonic() - start >= 1.5
    # A client that logged in is not affected by login_timeout.
    c2 = moat_server.login("testuser1")
    time.sleep(2.5)
    assert c2.command("NOOP").ok


def tags_in_order(c, tags):
    """Reads until the last tag; returns the tagged lines in arrival order."""
    tagged = []
    while len(tagged) < len(tags):
        line = c.read_line()
        if not line.startswith(b"* "):
            tagged.append(line)
    return tagged


def test_pipelined_preauth(moat_server):
    c = moat_server.connect()
    c.send(b"p1 CAPABILITY\r\np2 NOOP\r\np3 NOOP\r\np4 CAPABILITY\r\n")
    tagged = tags_in_order(c, ["p1", "p2", "p3", "p4"])
    assert [t.split(b" ")[:2] for t in tagged] == \
        [[b"p1", b"OK"], [b"p2", b"OK"], [b"p3", b"OK"], [b"p4", b"OK"]], tagged


def test_pipelined_across_login(moat_server):
    """Commands after LOGIN in the same write reach the imap process."""
    c = moat_server.connect()
    c.send(b"p1 NOOP\r\np2 LOGIN testuser1 pass\r\np3 NOOP\r\n"
           b"p4 SELECT INBOX\r\np5 NOOP\r\n")
    tagged = tags_in_order(c, ["p1", "p2", "p3", "p4", "p5"])
    assert [t.split(b" ")[:2] for t in tagged] == \
        [[b"p1", b"OK"], [b"p2", b"OK"], [b"p3", b"OK"], [b"p4", b"OK"],
         [b"p5", b"OK"]], tagged


def test_pipelined_postauth(moat_server):
    c = moat_server.login("testuser1")
    assert c.append("INBOX", b"Subject: x\r\n\r\ny\r\n").ok
    c.send(b"q1 NOOP\r\nq2 SELECT INBOX\r\nq3 FETCH 1 (UID FLAGS)\r\n"
           b"q4 NOOP\r\nq5 LOGOUT\r\n")
    tagged = tags_in_order(c, ["q1", "q2", "q3", "q4", "q5"])
    assert [t.split(b" ")[:2] for t in tagged] == \
        [[b"q1", b"OK"], [b"q2", b"OK"], [b"q3", b"OK"], [b"q4", b"OK"],
         [b"q5", b"OK"]], tagged


@pytest.mark.moat_settings(imap_literal_minus="yes")
def test_literal_minus_advertised_and_enforced(moat_server):
    """RFC 7888 5: LITERAL- instead of LITERAL+, never both; a
    non-synchronizing literal over 4096 bytes is refused (connection closed,
    since its data is already on the way)."""
    c = moat_server.connect()
    r = c.command("CAPABILITY")
    caps = b" ".join(r.untagged)
    assert b"LITERAL-" in caps and b"LITERAL+" not in caps, caps
    c = moat_server.login("testuser1")
    r = c.command("CAPABILITY")
    caps = b" ".join(r.untagged)
    assert b"LITERAL-" in caps and b"LITERAL+" not in caps, caps
    tag = c.next_tag()
    c.send(f"{tag} APPEND INBOX {{5+}}\r\nhello\r\n".encode())
    assert c.read_tagged(tag).ok
    tag = c.next_tag()
    body = b"x" * 5000
    c.send(f"{tag} APPEND INBOX {{{len(body)}+}}\r\n".encode() + body + b"\r\n")
    with pytest.raises(ConnectionClosed) as closed:
        c.read_tagged(tag)
    assert any(b"BYE" in line for line in closed.value.untagged), closed.value
