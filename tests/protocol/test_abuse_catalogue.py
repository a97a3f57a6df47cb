"""The abuse catalogue: every bad input we know of, one entry each, with
the outcome it must get and the memory of the process it attacks
(doc/security.md, "Abuse catalogue").

Each entry runs on a fresh server (ASan's quarantine off, so that RSS
shows what is held, not freed memory kept back: test_abuse_storage.py's
quiet_asan). The attacked process's VmRSS is read before and after the
attack and may grow by at most RSS_GROWTH_MAX_KIB
(test_abuse_preauth.py's bound: without the limits every attack here
would cost tens of MiB or more), and the process must still serve a new
client afterwards. Deeper checks of some entries live beside them
(test_abuse_preauth.py, test_abuse_storage.py, test_abuse_guessing.py),
whose helpers this file uses."""

import os
import socket
import ssl
import threading
import time

import pytest

from moatimap import ConnectionClosed, ImapClient
from test_abuse_preauth import (
    FLOOD_LITERAL_SIZE, RSS_GROWTH_MAX_KIB, connect_small_window,
    connect_tls, flood, only_login_pid, overflow_then_keep_sending,
    read_until_closed, tls_flood_until_closed, vm_rss_kib)
from test_abuse_storage import (  # noqa: F401 (quiet_asan: a fixture)
    assert_never_served, chown_link, message, other_user_maildir,
    quiet_asan)

# Literals of a flood: 16 MiB per connection.
FLOOD_LITERALS = 2000
# MIME bombs: nesting far beyond any real message, and many parts.
MIME_DEPTH = 2000
MIME_PARTS = 5000
# Bytes an attacker sends at slowloris pace, one every SLOW_INTERVAL s.
SLOW_INTERVAL = 0.2


class Entry:
    """One abuse: attack(server, victim) runs it and asserts its outcome;
    victim is None before login, a logged-in client of testuser1 after."""

    def __init__(self, name, proc, outcome, attack, **settings):
        self.name, self.proc, self.outcome = name, proc, outcome
        self.attack, self.settings = attack, settings


def tagged(c, cmd, status, text):
    """cmd gets status with text in it; the session goes on."""
    r = c.command(cmd)
    assert r.status == status and text.encode() in r.text, r
    assert c.command("NOOP").ok


def closed_with(c, text):
    got = read_until_closed(c, 60)
    assert text.encode() in got, got[-300:]


# ---- before login: imap-login ------------------------------------------

def long_line(server, _):
    tagged(server.connect(), "LOGIN " + "u" * 200000 + " pass", "BAD",
           "Too long line")


def huge_sync_literal(server, _):
    tagged(server.connect(), "LOGIN {4294967295}", "BAD", "Literal too large")


def huge_nonsync_literal(server, _):
    c = server.connect()
    c.send(b"a1 LOGIN {20000+}\r\n" + b"x" * 20000 + b" pass\r\n")
    closed_with(c, "* BYE Literal too large")


def literal_flood(server, _):
    clients = [server.connect() for _ in range(3)]
    threads = [threading.Thread(target=flood, args=(
        c.sock, f"f{i} LOGIN".encode(), FLOOD_LITERALS, FLOOD_LITERAL_SIZE))
        for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for c in clients:
        closed_with(c, "* BYE Command too large")
    for t in threads:
        t.join(60)
        assert not t.is_alive()


def literal_flood_unread(server, _):
    got = overflow_then_keep_sending(connect_small_window(server), "u1")
    assert b"* BYE Command too large" in got, got[-300:]


def nul_byte(server, _):
    tagged(server.connect(), b"LOGIN us\0er pass", "BAD", "NUL byte")


def bare_cr(server, _):
    c = server.connect()
    c.send(b"a1 NOOP\rb1 NOOP\r\n")
    r = c.read_tagged("a1")
    assert r.status == "BAD" and b"Missing LF after CR" in r.text, r
    assert c.command("NOOP").ok


def bad_base64_initial(server, _):
    tagged(server.connect(), "AUTHENTICATE PLAIN @@@!!", "BAD",
           "Invalid base64 data in initial response")


def bad_base64_continuation(server, _):
    c = server.connect()
    c.send(b"a1 AUTHENTICATE PLAIN\r\n")
    assert c.read_tagged("a1").status == "+"
    c.send(b"@@@!!\r\n")
    r = c.read_tagged("a1")
    assert r.status == "BAD" and b"Invalid base64 data in continued" in r.text, r
    assert c.command("NOOP").ok


def invalid_command_flood(server, _):
    c = server.connect()
    c.send(b"\xff\xfe junk\r\n" * 30)
    closed_with(c, "* BYE Too many invalid commands.")


def tls_garbage(server, _):
    """Random bytes where a ClientHello belongs: the handshake fails and
    the connection closes, whatever the bytes."""
    for seed in range(5):
        s = socket.create_connection((server.host, server.tls_port), 30)
        s.sendall(b"\x16\x03\x01\x02\x00" + os.urandom(4000))
        s.settimeout(30)
        while True:
            try:
                if not s.recv(65536):
                    break
            except ConnectionResetError:
                break
        s.close()


def tls_then_plaintext_flood(server, _):
    """A TLS session whose client then floods: the same bound as plain."""
    c = connect_tls(server)
    got = tls_flood_until_closed(c, b"t1 LOGIN", FLOOD_LITERALS,
                                 FLOOD_LITERAL_SIZE)
    assert b"* BYE Command too large" in got, got[-300:]


def slowloris(server, _):
    """A command sent a byte at a time never completes: login_timeout
    ends the connection, however slowly the bytes keep coming."""
    c = server.connect()
    start = time.monotonic()
    try:
        for ch in b"a1 LOGIN " + b"u" * 200:
            c.send(bytes([ch]))
            time.sleep(SLOW_INTERVAL)
    except OSError:
        pass
    closed_with(c, "* BYE Login timeout")
    assert time.monotonic() - start < 30


# ---- after login: the user's imap process ------------------------------

def postauth_literal_flood(server, victim):
    c = server.login("testuser1")
    t = threading.Thread(target=flood, args=(
        c.sock, b"p1 SEARCH TEXT", 300, 60000))
    t.start()
    closed_with(c, "* BYE Command too large")
    t.join(60)
    assert victim.command("NOOP").ok


TRAVERSAL_NAMES = ['"../testuser2"', '"../../etc"', '"foo/../../x"',
                   '"INBOX/../../x"', '"a/./b"', '"/etc"', '"~testuser2/INBOX"',
                   '"..."', '"%2e%2e/x"']


def tree(path):
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, dirs, files in os.walk(path) for f in dirs + files)


def mailbox_traversal(server, victim):
    """Names with ".." levels, absolute paths and another user's name:
    refused, or a folder inside the user's own Maildir; nothing appears
    outside it and the other user's Maildir is untouched."""
    home = server.maildir("testuser1")
    outside = home.parent.parent
    other = server.maildir("testuser2")
    before_other, before_outside = tree(other), sorted(os.listdir(outside))
    for name in TRAVERSAL_NAMES:
        r = victim.command(f"SELECT {name}")
        assert r.status == "NO", (name, r)
        r = victim.command(f"CREATE {name}")
        assert r.status in ("NO", "OK"), (name, r)
        r = victim.command(f"RENAME INBOX {name}")
        assert r.status in ("NO", "OK"), (name, r)
        if r.ok:
            assert victim.command(f"RENAME {name} INBOX").ok
    assert tree(other) == before_other
    assert sorted(os.listdir(outside)) == before_outside
    assert victim.command("SELECT INBOX").ok


def deep_mime(depth):
    head = b"From: a@example.org\r\nSubject: deep\r\n"
    parts = []
    for i in range(depth):
        parts.append(b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n"
                     b"--b%d\r\n" % (i, i))
    tail = b"".join(b"\r\n--b%d--\r\n" % i for i in reversed(range(depth)))
    return head + b"".join(parts) + b"Content-Type: text/plain\r\n\r\nx\r\n" + tail


def many_parts(count):
    body = b"".join(b"--b\r\nContent-Type: text/plain\r\n\r\npart %d\r\n" % i
                    for i in range(count))
    return (b"From: a@example.org\r\nSubject: many\r\n"
            b"Content-Type: multipart/mixed; boundary=b\r\n\r\n" +
            body + b"--b--\r\n")


def mime_bomb(server, victim, data):
    assert victim.append("INBOX", data).ok
    assert victim.command("SELECT INBOX").ok
    for item in ("BODYSTRUCTURE", "BODY", "ENVELOPE", "BODY.PEEK[1.1.1]",
                 "BINARY.PEEK[1]", "BODY.PEEK[TEXT]<0.100>"):
        r = victim.command(f"FETCH 1 ({item})")
        assert r.status in ("OK", "NO"), (item, r)
    r = victim.command("SEARCH TEXT x")
    assert r.ok, r


def mime_deep_nesting(server, victim):
    mime_bomb(server, victim, deep_mime(MIME_DEPTH))


def mime_many_parts(server, victim):
    mime_bomb(server, victim, many_parts(MIME_PARTS))


def search_deep_nesting(server, victim):
    assert victim.command("SELECT INBOX").ok
    tagged(victim, "SEARCH " + "(" * 2000 + "ALL" + ")" * 2000, "BAD",
           "Too deep list nesting")
    tagged(victim, "SEARCH " + "NOT " * 5000 + "ALL", "BAD",
           "nested too deeply")


def or_tree(leaves):
    """A balanced OR tree of SUBJECT keys (depth log2(leaves))."""
    if leaves == 1:
        return "SUBJECT m1"
    half = leaves // 2
    return f"OR {or_tree(half)} {or_tree(leaves - half)}"


def search_or_tree(server, victim):
    assert victim.append("INBOX", message(1)).ok
    assert victim.command("SELECT INBOX").ok
    tagged(victim, "SEARCH " + "OR " * 5000 + "ALL " * 5000 + "ALL", "BAD",
           "Too many arguments")
    tagged(victim, "SEARCH " + "OR " * 900 + "ALL " * 900 + "ALL", "BAD",
           "nested too deeply")
    # a wide, shallow tree within the argument limit is evaluated
    r = victim.command("SEARCH " + or_tree(1024))
    assert r.ok and r.untagged_with("SEARCH") == [b"* SEARCH 1"], r


def select_without_mailbox(server, victim):
    """Found by fuzz-imap-session: SELECT and EXAMINE without a mailbox
    name sent an uninitialized error text (the process crashed)."""
    for cmd in ("SELECT", "EXAMINE", "SELECT (CONDSTORE)"):
        r = victim.command(cmd)
        assert r.status == "BAD", (cmd, r)
    assert victim.command("SELECT INBOX").ok


def idle_bad_limit(server, _):
    """Found by fuzz-imap-session: an IDLE ended by a line other than
    DONE whose BAD reached imap_max_bad_commands was cancelled again when
    the client was destroyed (a NULL dereference: the process crashed
    with every session of the user)."""
    c = server.login("testuser1")
    for i in range(6):
        tag = f"i{i}"
        c.send(f"{tag} IDLE\r\n")
        assert c.read_line() == b"+ idling"
        c.send("NOT-DONE\r\n")
        try:
            line = c.read_line()
        except ConnectionClosed:
            raise AssertionError(f"closed without a BAD after IDLE {i}")
        assert line.startswith(f"{tag} BAD".encode()), line
        try:
            line = c.read_line_within(0.5)
        except ConnectionClosed:
            raise AssertionError(f"closed without BYE after IDLE {i}")
        if line is not None:
            assert line.startswith(b"* BYE"), line
            c.wait_closed(30)
            return
    raise AssertionError("no BYE after 6 bad IDLE endings (limit 3)")


def symlinked_message(server, victim):
    """issue 14, finding 3 (test_abuse_storage.py has every variant)."""
    assert victim.append("INBOX", message(1)).ok
    _, target = other_user_maildir(server)
    link = server.maildir("testuser1") / "cur" / "1700000001.M2P2.evil:2,S"
    os.symlink(target, link)
    chown_link(server, link)
    assert_never_served(victim)


def copy_onto_itself(server, victim):
    """issue 14, finding 4: COPY of a mailbox onto itself until
    mailbox_max_messages stops it with NO [LIMIT]."""
    for i in range(4):
        assert victim.append("INBOX", message(i)).ok
    assert victim.command("SELECT INBOX").ok
    while True:
        r = victim.command("COPY 1:* INBOX")
        if not r.ok:
            break
    assert r.status == "NO" and r.code == "LIMIT", r
    r = victim.command("STATUS INBOX (MESSAGES)")
    assert b"MESSAGES 64)" in b"".join(r.untagged), r


CATALOGUE = [
    Entry("long-line", "imap-login", "BAD Too long line", long_line),
    Entry("huge-sync-literal", "imap-login", "BAD Literal too large",
          huge_sync_literal),
    Entry("huge-nonsync-literal", "imap-login", "BYE Literal too large",
          huge_nonsync_literal),
    Entry("literal-flood", "imap-login", "BYE Command too large",
          literal_flood),
    Entry("literal-flood-unread", "imap-login",
          "BYE Command too large, not lost to a reset", literal_flood_unread),
    Entry("nul-byte", "imap-login", "BAD NUL byte in command", nul_byte),
    Entry("bare-cr", "imap-login", "BAD Missing LF after CR", bare_cr),
    Entry("bad-base64-initial", "imap-login", "BAD Invalid base64 data",
          bad_base64_initial),
    Entry("bad-base64-continuation", "imap-login", "BAD Invalid base64 data",
          bad_base64_continuation),
    Entry("invalid-command-flood", "imap-login",
          "BYE Too many invalid commands", invalid_command_flood),
    Entry("tls-garbage", "imap-login", "closed", tls_garbage, tls=True),
    Entry("tls-literal-flood", "imap-login", "BYE Command too large",
          tls_then_plaintext_flood, tls=True),
    Entry("slowloris", "imap-login", "BYE Login timeout", slowloris,
          login_timeout=2),
    Entry("postauth-literal-flood", "imap", "BYE Command too large",
          postauth_literal_flood),
    Entry("mailbox-traversal", "imap", "NO, nothing outside the Maildir",
          mailbox_traversal),
    Entry("mime-deep-nesting", "imap", "OK", mime_deep_nesting),
    Entry("mime-many-parts", "imap", "OK", mime_many_parts),
    Entry("search-deep-nesting", "imap", "BAD", search_deep_nesting),
    Entry("search-or-tree", "imap", "BAD (too many arguments, too deep); "
          "a wide tree OK",
          search_or_tree),
    Entry("select-without-mailbox", "imap", "BAD", select_without_mailbox),
    Entry("idle-bad-limit", "imap", "BAD, BYE; the process serves on",
          idle_bad_limit, imap_max_bad_commands=3),
    Entry("symlinked-message", "imap", "never served", symlinked_message),
    Entry("copy-onto-itself", "imap", "NO [LIMIT]", copy_onto_itself,
          mailbox_max_messages=64),
]


@pytest.mark.parametrize("entry", [
    pytest.param(e, id=e.name, marks=pytest.mark.moat_settings(**e.settings))
    for e in CATALOGUE])
def test_abuse(quiet_asan, moat_server, entry):  # noqa: F811
    victim = None
    if entry.proc == "imap":
        victim = moat_server.login("testuser1")
        assert victim.command("NOOP").ok
        pid = moat_server.wait_children("imap", 1)[0]
    else:
        pid = only_login_pid(moat_server)
    before = vm_rss_kib(pid)
    entry.attack(moat_server, victim)
    after = vm_rss_kib(pid)
    assert after - before < RSS_GROWTH_MAX_KIB, (entry.name, before, after)
    # the attacked process still serves
    if entry.proc == "imap":
        assert moat_server.wait_children("imap", 1)[0] == pid
        assert victim.command("NOOP").ok
    else:
        assert moat_server.child_pids("imap-login") == [pid]
    assert moat_server.login("testuser1").command("NOOP").ok
