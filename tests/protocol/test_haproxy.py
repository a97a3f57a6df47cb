"""The PROXY protocol (HAProxy's proxy-protocol.txt, v1 and v2) on an
imap-login inet_listener with haproxy = yes (doc/configuration.md): only
from haproxy_trusted_networks, the header's client address is then the
one logs, penalties, per-IP limits and moatadm who see; anything else on
such a listener is closed with a log line, never served as a plain
client. The headers are written here byte by byte as the spec lays them
out."""

import os
import shutil
import socket
import ssl
import struct
import subprocess
import time

import pytest

from moatimap import ConnectionClosed, ImapClient
from moatserver import free_port, wait_for
from test_moatadm import as_json, moatadm, wait_sessions

V2_SIG = b"\r\n\r\n\x00\r\nQUIT\n"
LB = dict(haproxy=True, haproxy_trusted_networks="127.0.0.1/32")
# Plaintext LOGIN from a proxied (not same-host) address.
LB_PLAIN = dict(LB, disable_plaintext_auth="no")


def v1(src="192.0.2.7", dst="198.51.100.1", sport=56324, dport=143,
       proto="TCP4"):
    return f"PROXY {proto} {src} {dst} {sport} {dport}\r\n".encode()


def v2(command=1, family=0x11, src="192.0.2.7", dst="198.51.100.1",
       sport=56324, dport=143, tlvs=b""):
    """A v2 header: PROXY (1) or LOCAL (0); family 0x11 TCP over IPv4,
    0x21 over IPv6, 0x00 UNSPEC."""
    if family == 0x11:
        block = (socket.inet_pton(socket.AF_INET, src) +
                 socket.inet_pton(socket.AF_INET, dst) +
                 struct.pack("!HH", sport, dport))
    elif family == 0x21:
        block = (socket.inet_pton(socket.AF_INET6, src) +
                 socket.inet_pton(socket.AF_INET6, dst) +
                 struct.pack("!HH", sport, dport))
    else:
        block = b""
    body = block + tlvs
    return V2_SIG + bytes([0x20 | command, family]) + struct.pack("!H", len(body)) + body


def tlv(kind, value):
    return bytes([kind]) + struct.pack("!H", len(value)) + value


# PP2_TYPE_SSL: client flags PP2_CLIENT_SSL, verify 0, a PP2_SUBTYPE_SSL_VERSION
SSL_TLV = tlv(0x20, b"\x01" + b"\x00\x00\x00\x00" + tlv(0x21, b"TLSv1.3"))


def raw_connect(server, port=None, source=None):
    """An ImapClient whose socket is connected but has read nothing."""
    c = ImapClient.__new__(ImapClient)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if source:
        s.bind((source, 0))
    s.settimeout(30)
    s.connect((server.host, port or server.haproxy_port))
    c.sock, c.buf, c.tag_no, c.closed, c.greeting = s, b"", 0, False, None
    server.clients.append(c)
    return c


def lb_connect(server, header, port=None, source=None):
    """Through the "load balancer": the header first, then IMAP."""
    c = raw_connect(server, port, source)
    c.send(header)
    c.greeting = c.read_greeting()
    return c


def wait_log(server, text, timeout=20):
    assert wait_for(lambda: text in server.logs(), timeout), \
        f"no {text!r} in the log\n" + server.logs()


def assert_refused(server, c, reason):
    """Closed without a byte sent to the client, and logged."""
    assert c.wait_closed(30) == b""
    wait_log(server, "PROXY header refused: " + reason)


@pytest.mark.moat_settings(**LB_PLAIN)
def test_v1_header_is_the_client_address(moat_server):
    c = lb_connect(moat_server, v1())
    assert c.greeting.startswith(b"* OK"), c.greeting
    assert c.command("LOGIN testuser1 pass").ok
    wait_log(moat_server, "login: user=<testuser1>, method=PLAIN, "
             "rip=192.0.2.7, lip=198.51.100.1")
    rows = wait_sessions(moat_server, "testuser1", 1)
    assert rows[0]["addresses"] == "192.0.2.7"
    # the plain listener of the same server is unaffected
    assert moat_server.login("testuser2")


@pytest.mark.moat_settings(**LB_PLAIN)
def test_v2_tcp6_header_in_pieces(moat_server):
    """A header that arrives a byte at a time, an IPv6 client, TLVs."""
    c = raw_connect(moat_server)
    header = v2(family=0x21, src="2001:db8::7", dst="2001:db8::1",
                tlvs=tlv(0x04, b"\x00" * 5) + tlv(0x05, b"id-1"))
    for i in range(len(header)):
        c.send(header[i:i + 1])
    c.greeting = c.read_greeting()
    assert c.greeting.startswith(b"* OK"), c.greeting
    assert c.command("LOGIN testuser1 pass").ok
    wait_log(moat_server, "rip=2001:db8::7, lip=2001:db8::1")
    rows = wait_sessions(moat_server, "testuser1", 1)
    assert rows[0]["addresses"] == "2001:db8::7"


@pytest.mark.moat_settings(**LB)
def test_v2_local_and_unspec_keep_the_connection(moat_server):
    """LOCAL (the balancer's health check) and UNSPEC: the connection's
    own addresses, here the same host (so plaintext LOGIN is allowed)."""
    for header in (v2(command=0), v2(command=1, family=0x00)):
        c = lb_connect(moat_server, header)
        assert b"LOGINDISABLED" not in c.greeting, c.greeting
        assert c.command("LOGIN testuser1 pass").ok
        c.close()
    wait_log(moat_server, "login: user=<testuser1>, method=PLAIN, "
             "rip=127.0.0.1, lip=127.0.0.1")


@pytest.mark.moat_settings(**LB_PLAIN)
def test_v1_unknown_and_command_in_same_write(moat_server):
    """The client's first command in the header's segment is not lost."""
    c = raw_connect(moat_server)
    c.send(v1(src="192.0.2.44") + b"a1 CAPABILITY\r\n")
    c.greeting = c.read_greeting()
    assert c.read_tagged("a1").ok
    c2 = lb_connect(moat_server, b"PROXY UNKNOWN\r\n")
    assert c2.command("NOOP").ok


@pytest.mark.moat_settings(**LB)
def test_untrusted_source_refused(moat_server):
    """127.0.0.2 is not in haproxy_trusted_networks: a valid header from
    there is refused (anyone could claim any address)."""
    c = raw_connect(moat_server, source="127.0.0.2")
    c.send(v1())
    assert_refused(moat_server, c, "connection not from haproxy_trusted_networks")
    wait_log(moat_server, "rip=127.0.0.2")
    # the same address on the plain listener is an ordinary client
    plain = raw_connect(moat_server, port=moat_server.port, source="127.0.0.2")
    assert plain.read_greeting().startswith(b"* OK")


@pytest.mark.moat_settings(**LB)
@pytest.mark.parametrize("data,reason", [
    (b"a1 LOGIN testuser1 pass\r\n", "not a PROXY protocol header"),
    (b"PROXY TCP4 192.0.2.7 198.51.100.1 1\r\n", "PROXY v1: bad address or port"),
    (b"PROXY TCP4 192.0.2.7 198.51.100.1 1 2\n",
     "PROXY v1: line does not end with CRLF"),
    (b"PROXY UNKNOWN " + b"x" * 200, "PROXY v1: line too long"),
    (V2_SIG + b"\x11\x11\x00\x0c" + b"\x00" * 12, "PROXY v2: unknown version"),
    (V2_SIG + b"\x21\x11\x00\x0b" + b"\x00" * 11, "PROXY v2: short address block"),
    (V2_SIG + b"\x21\x11\xff\xff", "PROXY v2: header too long"),
    (V2_SIG[:5] + b"\x16\x03\x01", "not a PROXY protocol header"),
])
def test_garbage_refused(moat_server, data, reason):
    c = raw_connect(moat_server)
    c.send(data)
    assert_refused(moat_server, c, reason)


@pytest.mark.moat_settings(haproxy_timeout="1", **LB)
def test_header_timeout(moat_server):
    """A client that waits for a greeting (or a stalled header) is closed
    after haproxy_timeout, not served."""
    silent = raw_connect(moat_server)
    partial = raw_connect(moat_server)
    partial.send(b"PROXY TCP4 192.0.2.")
    assert_refused(moat_server, silent, "not received within haproxy_timeout")
    assert partial.wait_closed(30) == b""


@pytest.mark.moat_settings(**LB)
def test_ssl_tlv_counts_as_secured(moat_server):
    """disable_plaintext_auth = yes: a proxied client is not secured unless
    the header says the balancer took its TLS (PP2_TYPE_SSL)."""
    c = lb_connect(moat_server, v2(src="192.0.2.8"))
    assert b"LOGINDISABLED" in c.greeting, c.greeting
    assert c.command("LOGIN testuser1 pass").status == "NO"
    t = lb_connect(moat_server, v2(src="192.0.2.8", tlvs=SSL_TLV))
    assert b"LOGINDISABLED" not in t.greeting, t.greeting
    assert t.command("LOGIN testuser1 pass").ok


BASE = 0.2
SLACK = 0.01


@pytest.mark.moat_settings(auth_failure_delay="200 ms", **LB_PLAIN)
def test_penalty_applies_to_the_real_address(moat_server):
    """A failure through the balancer penalises the header's address:
    its next login (a right password) waits for the penalty, and the
    "auth failed:" line names it. Lower bounds only (busy machines)."""
    a = lb_connect(moat_server, v1(src="192.0.2.50"))
    assert a.command("LOGIN testuser1 wrong").status == "NO"
    wait_log(moat_server, "auth failed: user=testuser1, method=PLAIN, "
             "rip=192.0.2.50")
    b = lb_connect(moat_server, v1(src="192.0.2.50"))
    t0 = time.monotonic()
    assert b.command("LOGIN testuser1 pass").ok
    assert time.monotonic() - t0 >= BASE - SLACK


@pytest.mark.moat_settings(login_max_connections_per_ip=2, **LB)
def test_per_ip_limit_counts_the_real_address(moat_server):
    held = [lb_connect(moat_server, v1(src="192.0.2.60")) for _ in range(2)]
    assert all(c.greeting.startswith(b"* OK") for c in held)
    third = raw_connect(moat_server)
    third.send(v1(src="192.0.2.60"))
    line = third.read_greeting()
    assert line.startswith(b"* BYE [UNAVAILABLE]"), line
    # the balancer's own address is not what is counted
    other = lb_connect(moat_server, v1(src="192.0.2.61"))
    assert other.greeting.startswith(b"* OK")


# ---- TLS behind the balancer ------------------------------------------------

def client_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # The test certificate is self-signed: verifying it proves nothing.
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class BioSocket:
    """TLS over a plain socket through memory BIOs, so the ClientHello
    can go out in the same write as the PROXY header. Offers what
    ImapClient uses of a socket."""

    def __init__(self, sock, header):
        self.sock = sock
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = client_context().wrap_bio(self.inc, self.out)
        first = True
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                data = self.out.read()
                if first:
                    data, first = header + data, False
                if data:
                    self.sock.sendall(data)
                self._recv_raw()
        self._flush()

    def _recv_raw(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionClosed()
        self.inc.write(chunk)

    def _flush(self):
        data = self.out.read()
        if data:
            self.sock.sendall(data)

    def version(self):
        return self.tls.version()

    def sendall(self, data):
        self.tls.write(data)
        self._flush()

    def recv(self, n):
        while True:
            try:
                return self.tls.read(n)
            except ssl.SSLWantReadError:
                self._recv_raw()
            except ssl.SSLZeroReturnError:
                return b""

    def settimeout(self, t):
        self.sock.settimeout(t)

    def gettimeout(self):
        return self.sock.gettimeout()

    def close(self):
        self.sock.close()


@pytest.mark.moat_settings(tls=True, **LB)
def test_implicit_tls_hello_right_after_header(moat_server):
    c = raw_connect(moat_server, port=moat_server.haproxy_tls_port)
    c.sock = BioSocket(c.sock, v2(src="192.0.2.9", dport=993))
    c.greeting = c.read_greeting()
    assert c.greeting.startswith(b"* OK"), c.greeting
    assert c.command("LOGIN testuser1 pass").ok
    assert c.command("NOOP").ok
    wait_log(moat_server, "rip=192.0.2.9, lip=198.51.100.1, tls=TLSv1.")


@pytest.mark.moat_settings(tls=True, **LB)
def test_starttls_behind_the_balancer(moat_server):
    c = lb_connect(moat_server, v1(src="192.0.2.10"))
    assert b"STARTTLS" in c.greeting and b"LOGINDISABLED" in c.greeting
    assert c.command("STARTTLS").ok
    c.sock = client_context().wrap_socket(c.sock)
    assert c.command("LOGIN testuser1 pass").ok
    wait_log(moat_server, "rip=192.0.2.10, lip=198.51.100.1, tls=TLSv1.")
    rows = as_json(moatadm(moat_server, "who", json_out=True))
    assert [r["addresses"] for r in rows] == ["192.0.2.10"]


# ---- Debian's haproxy as the balancer ---------------------------------------

def start_haproxy(server, send):
    """A private haproxy on a free loopback port in front of the imap-lb
    listener (never the system service); returns (Popen, port)."""
    port = free_port()
    cfg = server.tmp / "haproxy.cfg"
    cfg.write_text(
        "global\n"
        "  log stderr format short local0 notice\n"
        "defaults\n"
        "  mode tcp\n"
        "  log global\n"
        "  timeout connect 10s\n"
        "  timeout client 60s\n"
        "  timeout server 60s\n"
        "frontend imap\n"
        f"  bind 127.0.0.1:{port}\n"
        "  default_backend moat\n"
        "backend moat\n"
        f"  server s1 127.0.0.1:{server.haproxy_port} {send}\n")
    log = open(server.tmp / "haproxy.log", "ab")
    proc = subprocess.Popen([HAPROXY, "-db", "-f", str(cfg)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    log.close()

    def listening():
        if proc.poll() is not None:
            pytest.fail("haproxy exited: " +
                        (server.tmp / "haproxy.log").read_text(errors="replace"))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return True
        except OSError:
            return False
    assert wait_for(listening, 30), "haproxy did not listen"
    return proc, port


HAPROXY = shutil.which("haproxy") or (
    "/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None)


@pytest.mark.skipif(HAPROXY is None,
                    reason="haproxy is not installed (dev.sh PACKAGES)")
@pytest.mark.moat_settings(**LB_PLAIN)
@pytest.mark.parametrize("send", ["send-proxy", "send-proxy-v2"])
def test_behind_real_haproxy(moat_server, send):
    """The client connects from 127.0.0.3 to haproxy, which connects to
    moat from 127.0.0.1 and names 127.0.0.3 in its header."""
    proc, port = start_haproxy(moat_server, send)
    try:
        c = ImapClient.__new__(ImapClient)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.3", 0))
        s.settimeout(30)
        s.connect(("127.0.0.1", port))
        c.sock, c.buf, c.tag_no, c.closed = s, b"", 0, False
        moat_server.clients.append(c)
        c.greeting = c.read_greeting()
        assert c.greeting.startswith(b"* OK"), c.greeting
        assert c.command("LOGIN testuser1 pass").ok
        wait_log(moat_server, "login: user=<testuser1>, method=PLAIN, "
                 "rip=127.0.0.3, lip=127.0.0.1")
        rows = wait_sessions(moat_server, "testuser1", 1)
        assert rows[0]["addresses"] == "127.0.0.3"
        c.close()
    finally:
        proc.terminate()
        proc.wait(30)
