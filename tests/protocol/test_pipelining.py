"""Pipelined commands (RFC 9051 5.5) and imap_max_pipelined_commands: many
commands in one write are all answered, in order; a client that floods
commands without reading the replies is not disconnected and cannot make the
imap process grow: once it has that many unread replies, moat stops reading
its input until it reads (TCP flow control holds the rest)."""

import re
import select
import socket
import threading
import time

import pytest

from moatimap import ImapClient
from moatserver import proc_status

# How much the imap process may grow while a client floods it: its buffers
# are bounded (128 KiB input, 1 MiB output); the rest is allocator slack.
RSS_GROWTH_MAX_KB = 16 * 1024
# The flood stops when the server has not taken a byte for this long
# (every buffer between us and it is full) ...
FLOOD_STALL = 1.5
# ... or after this many bytes (it would mean nobody pushes back).
FLOOD_MAX_BYTES = 256 * 1024 * 1024


def small_buffer_client(server, rcvbuf=8192):
    """A logged-in ImapClient whose socket buffers are small, so that the
    server's output backs up after a few hundred replies."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, rcvbuf)
    sock.settimeout(10.0)
    sock.connect((server.host, server.port))
    c = ImapClient.__new__(ImapClient)
    c.sock, c.buf, c.tag_no, c.closed = sock, b"", 0, False
    server.clients.append(c)
    c.greeting = c.read_greeting()
    u = server.users["testuser1"]
    assert c.command(f"LOGIN testuser1 {u['password']}").ok
    return c


def imap_pid(server):
    pids = server.wait_children("imap", 1)
    assert len(pids) == 1, pids
    return pids[0]


def sanitized(pid):
    """AddressSanitizer keeps freed memory in quarantine (up to 256 MB), so
    RSS says nothing about moat's own buffers in a sanitizer build."""
    with open(f"/proc/{pid}/maps") as f:
        return any("libasan" in line for line in f)


def assert_rss_bounded(pid, grown):
    if sanitized(pid):
        return
    assert grown < RSS_GROWTH_MAX_KB, f"imap grew by {grown} kB"


def status_kb(pid, field):
    m = re.match(r"(\d+) kB", proc_status(pid)[field])
    assert m, field
    return int(m.group(1))


def read_tagged_in_order(c, count, tag_of):
    """Reads the replies of count NOOPs; every line must be the tagged OK
    of the next one."""
    for i in range(count):
        line = c.read_raw_line()
        want = tag_of(i).encode() + b" OK"
        assert line.startswith(want), (i, line)


def test_200_noops_in_one_write(moat_server):
    c = moat_server.login()
    tags = [f"p{i:03d}" for i in range(200)]
    c.send(b"".join(f"{t} NOOP\r\n".encode() for t in tags))
    read_tagged_in_order(c, 200, lambda i: tags[i])
    # the connection goes on normally
    assert c.command("NOOP").ok


def test_pipelined_mixed_commands_in_order(moat_server):
    c = moat_server.login()
    lines = []
    for i in range(50):
        lines.append(f"m{i:02d}a SELECT INBOX\r\n")
        lines.append(f"m{i:02d}b STATUS INBOX (MESSAGES)\r\n")
        lines.append(f"m{i:02d}c SEARCH ALL\r\n")
        lines.append(f"m{i:02d}d UNSELECT\r\n")
    c.send("".join(lines).encode())
    for i in range(50):
        for suffix in "abcd":
            r = c.read_tagged(f"m{i:02d}{suffix}")
            assert r.ok, r


def flood(c, tag_of):
    """Sends NOOPs without reading until the server stops taking them.
    Returns (commands sent, the unsent rest of a half-sent last one)."""
    c.sock.setblocking(False)
    chunk, first, off, total = b"", 0, 0, 0
    stalled_since = None
    while total < FLOOD_MAX_BYTES:
        if off == len(chunk):
            first += chunk.count(b"\r\n")
            chunk = b"".join(f"{tag_of(first + k)} NOOP\r\n".encode()
                             for k in range(1000))
            off = 0
        _, writable, _ = select.select([], [c.sock], [], 0.1)
        n = 0
        if writable:
            try:
                n = c.sock.send(chunk[off:])
            except BlockingIOError:
                n = 0
        if n == 0:
            stalled_since = stalled_since or time.monotonic()
            if time.monotonic() - stalled_since > FLOOD_STALL:
                break
            continue
        stalled_since = None
        off += n
        total += n
    assert total < FLOOD_MAX_BYTES, "the server never pushed back"
    c.sock.setblocking(True)
    c.sock.settimeout(30.0)
    count = first + chunk[:off].count(b"\r\n")
    rest = b""
    if off > 0 and not chunk[:off].endswith(b"\r\n"):
        rest = chunk[off:chunk.index(b"\r\n", off) + 2]
        count += 1
    return count, rest


def finish_and_read(c, count, rest, tag_of):
    # the server waits for us to read: send the rest while reading
    writer = threading.Thread(target=c.sock.sendall, args=(rest,))
    writer.start()
    read_tagged_in_order(c, count, tag_of)
    writer.join(10)
    assert c.command("NOOP").ok


def test_flood_without_reading_is_bounded(moat_server):
    c = moat_server.login()
    pid = imap_pid(moat_server)
    assert c.command("NOOP").ok
    rss_before = status_kb(pid, "VmRSS")
    tag_of = "{:x}".format
    count, rest = flood(c, tag_of)
    assert count > 1000, count
    grown = status_kb(pid, "VmHWM") - rss_before
    assert_rss_bounded(pid, grown)
    # not disconnected: every command is answered, in order
    finish_and_read(c, count, rest, tag_of)
    assert "Output buffer full" not in moat_server.logs()


@pytest.mark.moat_settings(imap_max_pipelined_commands=2)
def test_small_limit_blocks_and_resumes(moat_server):
    c = small_buffer_client(moat_server)
    pid = imap_pid(moat_server)
    rss_before = status_kb(pid, "VmRSS")
    tag_of = "s{:x}".format
    count, rest = flood(c, tag_of)
    grown = status_kb(pid, "VmHWM") - rss_before
    assert_rss_bounded(pid, grown)
    finish_and_read(c, count, rest, tag_of)

