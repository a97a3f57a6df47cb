"""Abuse before and right after login: memory one command can make a
process hold (login_max_command_size; the post-auth parser's bound on a
command's line and literals together). doc/security.md, "Resource limits".

Memory is read as VmRSS from /proc/PID/status of the process under attack;
every attack would make it grow by tens of MiB without the bounds, and
must leave it within a few MiB."""

import pathlib
import select
import socket
import ssl
import threading
import time

import pytest

from moatimap import ImapClient

# Bytes of literal data each attacking connection tries to push.
FLOOD_LITERALS = 2000
FLOOD_LITERAL_SIZE = 8192           # imap-login's per-literal cap
# What the attacked process may grow by (sanitizer builds included).
RSS_GROWTH_MAX_KIB = 8 * 1024


def vm_rss_kib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def only_login_pid(server):
    pids = server.wait_children("imap-login", 1)
    return pids[0]


def flood(sock, head, count, size, nonsync=True):
    """Sends head and count literals of size bytes each, as fast as the
    server takes them; stops quietly when the server closes."""
    plus = "+" if nonsync else ""
    chunk = f" {{{size}{plus}}}\r\n".encode() + b"x" * size
    try:
        sock.sendall(head)
        for _ in range(count):
            sock.sendall(chunk)
    except OSError:
        pass


def tls_flood_until_closed(c, head, count, size, timeout=60):
    """flood() and read_until_closed() on a TLS client, in one thread: an
    SSL object must not be written by one thread while another reads it
    (OpenSSL's rule; two threads on one SSLSocket can lose or garble what
    the server said). Returns everything the server sent until it closed."""
    chunk = f" {{{size}+}}\r\n".encode() + b"x" * size
    sock = c.sock
    sock.setblocking(False)
    out, left, sending = head, count, True
    got = c.buf
    c.buf = b""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout(f"still open after {timeout}s; got {got!r}")
        # Bytes OpenSSL already decrypted are not seen by select().
        if not sock.pending():
            readable, writable, _ = select.select(
                [sock], [sock] if sending else [], [], remaining)
        else:
            readable, writable = [sock], []
        if readable:
            try:
                data = sock.recv(65536)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                data = None
            except (ConnectionResetError, BrokenPipeError):
                data = b""
            if data == b"":
                c.closed = True
                return got
            if data:
                got += data
        if writable and sending:
            if not out:
                if left == 0:
                    sending = False
                    continue
                out, left = chunk, left - 1
            try:
                out = out[sock.send(out[:65536]):]
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
            except OSError:
                sending = False   # the server closed; read what it said


def read_until_closed(c, timeout):
    """Everything the server sends until it closes (raises on timeout)."""
    return c.wait_closed(timeout)


def test_preauth_nonsync_literal_flood(moat_server):
    """Non-synchronizing literals: the command goes over
    login_max_command_size, the client gets a BYE with the reason and is
    disconnected; imap-login's memory does not grow with what was sent;
    other clients are served meanwhile."""
    pid = only_login_pid(moat_server)
    other = moat_server.connect()
    attackers = [moat_server.connect() for _ in range(3)]
    assert other.command("CAPABILITY").ok
    before = vm_rss_kib(pid)
    threads = []
    for i, c in enumerate(attackers):
        t = threading.Thread(target=flood, args=(
            c.sock, f"f{i} LOGIN".encode(), FLOOD_LITERALS,
            FLOOD_LITERAL_SIZE))
        t.start()
        threads.append(t)
    for c in attackers:
        got = read_until_closed(c, 60)
        assert b"* BYE Command too large" in got, got[:200]
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    after = vm_rss_kib(pid)
    assert after - before < RSS_GROWTH_MAX_KIB, (before, after)
    # The same process still serves everyone else.
    assert other.command("NOOP").ok
    assert other.command("LOGIN testuser1 pass").ok
    assert moat_server.login("testuser2").command("NOOP").ok
    assert moat_server.child_pids("imap-login") == [pid]


def connect_tls(server):
    """Implicit TLS on the imaps listener; greeting read."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False   # self-signed test certificate
    ctx.verify_mode = ssl.CERT_NONE
    c = ImapClient(server.host, server.tls_port)
    c.sock = ctx.wrap_socket(c.sock)
    c.greeting = c.read_greeting()
    server.clients.append(c)
    return c


@pytest.mark.moat_settings(tls=True)
def test_preauth_tls_literal_flood(moat_server):
    """The same over TLS (the session's buffers are imap-login's too):
    BYE, and imap-login's memory stays within the bound."""
    pid = only_login_pid(moat_server)
    attackers = [connect_tls(moat_server) for _ in range(3)]
    other = connect_tls(moat_server)
    before = vm_rss_kib(pid)
    results = [None] * len(attackers)

    def attack(i, c):
        results[i] = tls_flood_until_closed(
            c, f"t{i} LOGIN".encode(), FLOOD_LITERALS, FLOOD_LITERAL_SIZE)

    # One thread per connection (each SSL object used by one thread only).
    threads = [threading.Thread(target=attack, args=(i, c))
               for i, c in enumerate(attackers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
        assert not t.is_alive()
    for got in results:
        assert got is not None and b"* BYE Command too large" in got, got
    after = vm_rss_kib(pid)
    assert after - before < RSS_GROWTH_MAX_KIB, (before, after)
    assert other.command("LOGIN testuser1 pass").ok


# Sent after the command went over login_max_command_size: bytes the
# server never reads as a command (below lib/sock-linger.h's
# SOCK_LINGER_MAX_BYTES, so the server drains them all).
UNREAD_TAIL = 64 * 1024
# The client's receive buffer: a window of about a KiB. Replies beyond it
# wait in the server's socket when the server closes.
SMALL_RCVBUF = 1024
# CAPABILITY commands pipelined first: their replies (some 7 KiB) fill
# the small window, so the BYE behind them is still in the server's
# socket, unsent, when it disconnects.
PIPELINED_CAPABILITY = 40


def connect_small_window(server, tls=False):
    """A client whose socket has a receive buffer of SMALL_RCVBUF (set
    before connecting, so the window is small from the start)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_RCVBUF)
    sock.settimeout(30)
    sock.connect((server.host, server.tls_port if tls else server.port))
    c = ImapClient.__new__(ImapClient)
    c.buf, c.tag_no, c.closed = b"", 0, False
    c.sock = sock
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False   # self-signed test certificate
        ctx.verify_mode = ssl.CERT_NONE
        c.sock = ctx.wrap_socket(sock)
    server.clients.append(c)
    c.greeting = c.read_greeting()
    return c


def overflow_then_keep_sending(c, tag):
    """Pipelined CAPABILITYs, one command over login_max_command_size
    (non-synchronizing literals), then UNREAD_TAIL more bytes, all sent
    before reading a byte; returns what the server sent until it
    closed."""
    literal = b" {8192+}\r\n" + b"x" * 8192
    payload = b"".join(f"{tag}c{i} CAPABILITY\r\n".encode()
                       for i in range(PIPELINED_CAPABILITY))
    payload += tag.encode() + b" LOGIN" + 3 * literal + b"y" * UNREAD_TAIL
    t = threading.Thread(target=flood, args=(c.sock, payload, 0, 0))
    t.start()
    t.join(60)
    assert not t.is_alive()
    return read_until_closed(c, 60)


def test_preauth_bye_survives_unread_input(moat_server):
    """The BYE of a command that went too large reaches a client that
    kept sending and reads only afterwards, with earlier replies still
    queued before it: imap-login shuts the socket down and drains the
    client's input before it closes. (A close() with unread input resets
    the connection, and the kernel drops what it had not sent yet: the
    BYE of the flaky literal flood tests.) Several rounds, so that a
    lucky ordering cannot pass it."""
    for i in range(5):
        c = connect_small_window(moat_server)
        got = overflow_then_keep_sending(c, f"u{i}")
        assert got.count(b" OK Capability completed.") == \
            PIPELINED_CAPABILITY, got[-200:]
        assert b"* BYE Command too large" in got, got[-200:]
    assert moat_server.connect().command("LOGIN testuser1 pass").ok


@pytest.mark.moat_settings(tls=True)
def test_preauth_tls_bye_survives_unread_input(moat_server):
    """The same over TLS: the BYE and close_notify are out before the
    socket lingers."""
    for i in range(3):
        c = connect_small_window(moat_server, tls=True)
        got = overflow_then_keep_sending(c, f"v{i}")
        assert b"* BYE Command too large" in got, got[-200:]


def test_preauth_sync_literals_refused(moat_server):
    """Synchronizing literals: once the next one would take the command
    past login_max_command_size, it gets a tagged BAD instead of "+"; the
    connection goes on."""
    c = moat_server.connect()
    tag = "s1"
    c.send(f"{tag} LOGIN {{{FLOOD_LITERAL_SIZE}}}\r\n")
    sent = 0
    while True:
        r = c.read_tagged(tag)
        if r.status != "+":
            break
        sent += 1
        assert sent < 10, "the server keeps asking for literal data"
        c.send(b"u" * FLOOD_LITERAL_SIZE + f" {{{FLOOD_LITERAL_SIZE}}}\r\n".encode())
    assert r.status == "BAD", r
    assert b"Command too large" in r.text, r
    # Default login_max_command_size is 16k: two literals of 8 KiB and
    # the line do not fit together.
    assert sent == 1, sent
    assert c.command("LOGIN testuser1 pass").ok


@pytest.mark.moat_settings(login_max_command_size="2k")
def test_preauth_long_line_over_command_size(moat_server):
    """A line alone longer than login_max_command_size (below
    imap_max_line_length) is refused with a tagged BAD."""
    c = moat_server.connect()
    r = c.command("LOGIN " + "u" * 3000 + " pass")
    assert r.status == "BAD", r
    assert c.command("LOGIN testuser1 pass").ok


def test_preauth_many_arguments_refused(moat_server):
    """Thousands of tiny arguments (each costs parser memory) are refused
    before login, far below the post-auth argument limit."""
    c = moat_server.connect()
    r = c.command("ID (" + " ".join(["NIL"] * 2000) + ")")
    assert r.status == "BAD", r
    assert b"Too many arguments" in r.text, r
    assert c.command("ID NIL").ok


def test_preauth_long_oauth_style_ir_fits(moat_server):
    """SASL-IR with a long token (an 8 KiB OAUTHBEARER message is 10924
    bytes of base64) is not refused as too large: it reaches auth, which
    answers it like any PLAIN message of that size."""
    import base64
    raw = b"\0testuser1\0" + b"p" * (8192 - 11)
    ir = base64.b64encode(raw).decode()
    assert len(ir) > 10000
    c = moat_server.connect()
    r = c.command("AUTHENTICATE PLAIN " + ir)
    assert r.status == "NO", r
    assert r.code == "AUTHENTICATIONFAILED", r


def test_postauth_literal_flood(moat_server):
    """After login, a command other than APPEND may hold at most
    imap_max_line_length + imap_max_literal_size of line and literals:
    LITERAL+ data beyond that ends the connection with a BYE; the user's
    imap process does not grow with what was sent."""
    victim = moat_server.login("testuser1")
    assert victim.command("SELECT INBOX").ok
    pids = moat_server.wait_children("imap", 1)
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    before = vm_rss_kib(pids[0])
    t = threading.Thread(target=flood, args=(
        c.sock, b"p1 SEARCH TEXT", 300, 60000))
    t.start()
    got = read_until_closed(c, 60)
    t.join(60)
    assert b"* BYE Command too large" in got, got[:200]
    after = vm_rss_kib(pids[0])
    assert after - before < RSS_GROWTH_MAX_KIB, (before, after)
    assert victim.command("NOOP").ok


def test_postauth_sync_literals_refused(moat_server):
    """Synchronizing literals after login: BAD once the command's
    literals would exceed the bound, and the session goes on."""
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    tag = "q1"
    size = 60000
    c.send(f"{tag} SEARCH TEXT {{{size}}}\r\n")
    sent = 0
    while True:
        r = c.read_tagged(tag)
        if r.status != "+":
            break
        sent += 1
        assert sent < 10, "the server keeps asking for literal data"
        c.send(b"t" * size + f" TEXT {{{size}}}\r\n".encode())
    assert r.status == "BAD", r
    assert b"Command too large" in r.text, r
    assert c.command("NOOP").ok
