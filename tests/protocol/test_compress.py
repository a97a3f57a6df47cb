"""COMPRESS=DEFLATE (RFC 4978) with Python's zlib on a raw socket: the
tagged OK goes out plain and everything after its CRLF is raw deflate in
both directions; each response batch is complete on the wire (the server
ends it with a sync flush, so a reply is readable without more data);
literals, IDLE, big FETCH answers and TLS (relayed and kTLS) work over it;
a second COMPRESS and unknown mechanisms are refused without turning
anything on, and garbage from the client is a clean disconnect."""

import socket
import ssl
import zlib

import pytest

from moatimap import ImapClient
from moatserver import wait_for


class DeflateSocket:
    """A socket that deflates what is sent (sync flush per send, as a
    client must so the server can read each command) and inflates what is
    received; stands in for ImapClient.sock."""

    def __init__(self, sock, leftover=b""):
        self.sock = sock
        self.z_out = zlib.compressobj(6, zlib.DEFLATED, -15)
        self.z_in = zlib.decompressobj(-15)
        self.pending = self.z_in.decompress(leftover)
        self.wire_in = len(leftover)    # compressed bytes received
        self.plain_in = len(self.pending)

    def sendall(self, data):
        self.sock.sendall(self.z_out.compress(data) +
                          self.z_out.flush(zlib.Z_SYNC_FLUSH))

    def send_raw(self, data):
        self.sock.sendall(data)

    def recv(self, n):
        while not self.pending:
            chunk = self.sock.recv(n)
            if not chunk:
                return b""
            self.wire_in += len(chunk)
            self.pending = self.z_in.decompress(chunk)
            self.plain_in += len(self.pending)
        data, self.pending = self.pending, b""
        return data

    def settimeout(self, t):
        self.sock.settimeout(t)

    def gettimeout(self):
        return self.sock.gettimeout()

    def close(self):
        self.sock.close()


def compress(c):
    """COMPRESS DEFLATE on c; from its OK on, c talks deflate."""
    r = c.command("COMPRESS DEFLATE")
    assert r.ok, r
    # the OK itself is plain; anything after it would be compressed
    c.sock = DeflateSocket(c.sock, c.buf)
    c.buf = b""
    return r


def ok(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    return r


def test_capability_lists_compress_deflate(moat_server):
    c = moat_server.login()
    r = ok(c, "CAPABILITY")
    caps = r.untagged[0].split()
    assert b"COMPRESS=DEFLATE" in caps


def test_compress_session(moat_server):
    """RFC 4978 3: commands and responses after the OK are deflated; a
    session does its usual work through it."""
    c = moat_server.login()
    r = compress(c)
    assert r.line.startswith(r.tag.encode() + b" OK")
    ok(c, "NOOP")
    ok(c, "SELECT INBOX")
    # a synchronizing literal: the continuation comes compressed
    body = b"Subject: deflate\r\n\r\n" + b"".join(
        b"line %05d of a longish message body\r\n" % i for i in range(4000))
    assert c.append("INBOX", body).ok
    # and a non-synchronizing one (LITERAL+)
    assert c.append("INBOX", b"Subject: two\r\n\r\nsecond\r\n", sync=False).ok
    r = ok(c, "FETCH 1:2 (UID RFC822.SIZE BODY.PEEK[])")
    data = b"\r\n".join(r.untagged)
    assert body in data and b"second" in data
    # the FETCH answer compressed well (it repeats itself)
    assert c.sock.wire_in * 5 < c.sock.plain_in, (c.sock.wire_in,
                                                  c.sock.plain_in)
    r = c.command("LOGOUT")
    assert r.ok and any(l.startswith(b"* BYE") for l in r.untagged)


def test_compress_twice_is_refused(moat_server):
    """RFC 4978 3: BAD when COMPRESS is active already, with the
    COMPRESSIONACTIVE code; the session goes on compressed."""
    c = moat_server.login()
    compress(c)
    r = c.command("COMPRESS DEFLATE")
    assert r.status == "BAD" and r.code == "COMPRESSIONACTIVE", r
    ok(c, "NOOP")


@pytest.mark.parametrize("args", ["FOO", "", "DEFLATE DEFLATE", "(DEFLATE)",
                                  "\"DEFLATE\" x"])
def test_compress_bad_arguments(moat_server, args):
    """Unknown or malformed mechanism: BAD, and the session stays plain
    (RFC 4978 3: the server MUST NOT turn on compression)."""
    c = moat_server.login()
    r = c.command(f"COMPRESS {args}".rstrip())
    assert r.status == "BAD", r
    r = ok(c, "NOOP")
    assert r.line.endswith(b"NOOP completed.")


def test_compress_idle(moat_server):
    """IDLE's continuation and the updates another session causes arrive
    compressed and complete, each as it happens."""
    c = moat_server.login()
    compress(c)
    ok(c, "SELECT INBOX")
    tag = c.next_tag()
    c.send(f"{tag} IDLE\r\n")
    assert c.read_line().startswith(b"+")
    other = moat_server.login("testuser1")
    assert other.append("INBOX", b"Subject: x\r\n\r\ny\r\n").ok
    line = c.read_line_within(30)
    assert line == b"* 1 EXISTS", line
    c.send("DONE\r\n")
    assert c.read_tagged(tag).ok


def test_compress_pipelined_after_command(moat_server):
    """Bytes sent right behind COMPRESS (before the OK, which RFC 4978
    forbids, but a client may do it) are the first compressed input: the
    server reads them after the switch, without waiting for more."""
    c = moat_server.login()
    z = zlib.compressobj(6, zlib.DEFLATED, -15)
    first = z.compress(b"p2 NOOP\r\n") + z.flush(zlib.Z_SYNC_FLUSH)
    c.send(b"p1 COMPRESS DEFLATE\r\n" + first)
    r = c.read_tagged("p1")
    assert r.ok, r
    sock = DeflateSocket(c.sock, c.buf)
    sock.z_out = z
    c.sock, c.buf = sock, b""
    assert c.read_tagged("p2").ok
    ok(c, "NOOP")


def test_compress_big_input_burst(moat_server):
    """A small compressed burst that inflates to far more than one read
    (a long APPEND literal of one repeated byte) is all read, though the
    socket signals it only once."""
    c = moat_server.login()
    compress(c)
    body = b"Subject: zeros\r\n\r\n" + (b"0" * 998 + b"\r\n") * 2000
    tag = c.next_tag()
    c.send(f"{tag} APPEND INBOX {{{len(body)}+}}\r\n".encode() + body +
           b"\r\n")
    assert c.read_tagged(tag).ok
    r = ok(c, "STATUS INBOX (MESSAGES SIZE)")
    assert b"MESSAGES 1" in r.untagged[0]


def test_compress_garbage_disconnects(moat_server):
    """Input that is not deflate data ends the session with a logged
    reason; the server and other sessions are unharmed."""
    c = moat_server.login()
    compress(c)
    c.sock.send_raw(b"\xff\xfe\xfd\xfc" * 8)
    c.wait_closed(30)
    wait_for(lambda: "invalid deflate data" in moat_server.logs(), 30)
    ok(moat_server.login(), "NOOP")


def test_compress_slow_reader(moat_server):
    """A FETCH answer many times the socket buffers, read slowly: nothing
    is lost while compressed output waits for the socket."""
    c = moat_server.login()
    other = moat_server.login()
    body = b"Subject: big\r\n\r\n" + b"".join(
        b"%08x" % (i * 2654435761 % 2**32) + b" random-ish\r\n"
        for i in range(100000))
    assert other.append("INBOX", body).ok
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    compress(c)
    ok(c, "SELECT INBOX")
    tag = c.next_tag()
    c.send(f"{tag} FETCH 1 BODY.PEEK[]\r\n")
    got, c.buf = c.buf, b""
    while True:
        chunk = c.sock.recv(1024)
        assert chunk
        got += chunk
        if f"\r\n{tag} OK".encode() in got:
            break
    assert body in got


def tls_client(server):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers("ECDHE+AESGCM")
    c = ImapClient(server.host, server.tls_port)
    c.sock = ctx.wrap_socket(c.sock)
    c.greeting = c.read_greeting()
    server.clients.append(c)
    return c


@pytest.mark.parametrize("ktls", [
    pytest.param(v, marks=pytest.mark.moat_settings(tls=True, ssl_ktls=v))
    for v in ("no", "yes")])
def test_compress_over_tls(moat_server, ktls):
    """RFC 4978 3: compression happens before TLS: deflate runs on the
    plaintext the imap process gets, relayed by imap-login or, with
    ssl_ktls (where the kernel has the tls module), on the kTLS socket
    itself."""
    c = tls_client(moat_server)
    ok(c, "LOGIN testuser1 pass")
    compress(c)
    ok(c, "SELECT INBOX")
    body = b"Subject: tls\r\n\r\n" + b"x" * 50000 + b"\r\n"
    assert c.append("INBOX", body).ok
    r = ok(c, "FETCH 1 BODY.PEEK[]")
    assert body in b"\r\n".join(r.untagged)
    ok(c, "LOGOUT")


def test_compress_before_login_is_not_a_command(moat_server):
    """COMPRESS is a command of the authenticated state (RFC 4978 5,
    command-auth): imap-login does not know it."""
    c = moat_server.connect()
    r = c.command("COMPRESS DEFLATE")
    assert r.status == "BAD", r
    ok(c, "NOOP")
