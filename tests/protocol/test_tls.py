"""TLS in imap-login: STARTTLS (RFC 2595, RFC 9051 6.2.1), implicit TLS
(RFC 8314), LOGINDISABLED before TLS, the injection defence, the TLS
proxy after login, robustness against bad TLS peers, and where the
private key may and may not be."""

import os
import pwd
import signal
import re
import socket
import ssl
import subprocess
import time

import pytest

from moatimap import ImapClient
from moatserver import IS_ROOT, MOAT_PREFIX, root_only, wait_for

pytestmark = pytest.mark.moat_settings(tls=True)


def client_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # The test certificate is self-signed: verifying it proves nothing.
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def start_tls(c):
    """Replaces the ImapClient's socket with a TLS one (after STARTTLS)."""
    assert c.buf == b"", f"bytes after STARTTLS OK: {c.buf!r}"
    c.sock = client_context().wrap_socket(c.sock)
    return c


def connect_from(server, source_ip):
    """A client whose connection comes from source_ip (not the server's
    address, so it is not a same-host connection)."""
    c = ImapClient.__new__(ImapClient)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source_ip, 0))
    s.settimeout(10)
    s.connect((server.host, server.port))
    c.sock, c.buf, c.tag_no, c.closed = s, b"", 0, False
    c.greeting = c.read_greeting()
    server.clients.append(c)
    return c


def connect_tls(server):
    """Implicit TLS on the imaps listener; greeting read."""
    c = ImapClient(server.host, server.tls_port)
    c.sock = client_context().wrap_socket(c.sock)
    c.greeting = c.read_greeting()
    server.clients.append(c)
    return c


def caps(line):
    if isinstance(line, bytes):
        line = line.decode()
    return set(line.replace("[", " ").replace("]", " ").split())


def capability(c):
    r = c.command("CAPABILITY")
    assert r.ok, r
    return caps(r.untagged[0])


def test_starttls_then_login_and_session(moat_server):
    c = moat_server.connect()
    assert b"STARTTLS" in c.greeting
    r = c.command("STARTTLS")
    assert r.ok, r
    start_tls(c)
    assert c.sock.version() in ("TLSv1.2", "TLSv1.3")
    after = capability(c)
    assert "STARTTLS" not in after and "AUTH=PLAIN" in after
    assert "LOGINDISABLED" not in after
    r = c.command("STARTTLS")
    assert r.status == "BAD", r
    r = c.command("LOGIN testuser1 pass")
    assert r.ok, r
    assert c.command("SELECT INBOX").ok
    assert c.command("NOOP").ok
    r = c.command("LOGOUT")
    assert r.ok and c.wait_closed(30) is not None


def test_implicit_tls_greets_after_handshake(moat_server):
    c = connect_tls(moat_server)
    assert c.greeting.startswith(b"* OK [CAPABILITY ")
    assert b"STARTTLS" not in c.greeting and b"AUTH=PLAIN" in c.greeting
    r = c.command("STARTTLS")
    assert r.status == "BAD", r
    assert c.command("LOGIN testuser1 pass").ok
    # Big transfers both ways through the proxy's bounded buffers.
    body = b"Subject: big\r\n\r\n" + b"".join(
        b"line %06d " % i + b"x" * 60 + b"\r\n" for i in range(5000))
    assert c.append("INBOX", body).ok
    assert c.command("SELECT INBOX").ok
    tag = c.next_tag()
    c.send(f"{tag} FETCH 1 BODY[]\r\n")
    r = c.read_tagged(tag)
    assert r.ok, r
    assert len(c.buf) == 0
    assert c.command("LOGOUT").ok


def test_imap_session_ends_when_client_vanishes(moat_server):
    c = connect_tls(moat_server)
    assert c.command("LOGIN testuser1 pass").ok
    assert moat_server.wait_children("imap", 1)
    c.sock.close()
    c.closed = True
    # EOF reaches the imap process through the pair; it lingers 1s.
    moat_server.wait_children("imap", 0, timeout=10)


@pytest.mark.moat_settings(tls=True, services={"imap-login": {
    "client_limit": 2, "process_limit": 1}})
def test_proxied_sessions_count_toward_client_limit(moat_server):
    a = connect_tls(moat_server)
    assert a.command("LOGIN testuser1 pass").ok
    b = connect_tls(moat_server)
    assert b.command("LOGIN testuser2 secret2").ok
    # Both slots are held by proxies: a third client is not greeted.
    s = socket.create_connection((moat_server.host, moat_server.port), timeout=1)
    with pytest.raises(socket.timeout):
        s.recv(100)
    a.command("LOGOUT")
    a.wait_closed(30)
    s.settimeout(5)
    assert s.recv(100).startswith(b"* OK")
    s.close()
    assert b.command("NOOP").ok


def test_openssl_s_client(moat_server):
    for extra in (["-starttls", "imap", "-connect",
                   f"{moat_server.host}:{moat_server.port}"],
                  ["-connect", f"{moat_server.host}:{moat_server.tls_port}"]):
        p = subprocess.run(
            ["openssl", "s_client", "-quiet", "-crlf", *extra],
            input=b"a LOGIN testuser1 pass\nb NOOP\nc LOGOUT\n",
            capture_output=True, timeout=20)
        out = p.stdout.decode(errors="replace")
        assert "a OK" in out and "b OK" in out and "c OK" in out, \
            out + p.stderr.decode(errors="replace")


def test_logindisabled_before_starttls_from_another_address(moat_server):
    c = connect_from(moat_server, "127.0.0.2")
    before = caps(c.greeting)
    assert {"LOGINDISABLED", "STARTTLS"} <= before
    assert not [x for x in before if x.startswith("AUTH=")]
    r = c.command("LOGIN testuser1 pass")
    assert r.status == "NO" and r.code == "PRIVACYREQUIRED", r
    r = c.command("AUTHENTICATE PLAIN")
    assert r.status == "NO", r
    assert c.command("STARTTLS").ok
    start_tls(c)
    after = capability(c)
    assert "LOGINDISABLED" not in after and "AUTH=PLAIN" in after
    assert c.command("LOGIN testuser1 pass").ok
    assert c.command("LOGOUT").ok


@pytest.mark.moat_settings(tls=True, ssl="required", disable_plaintext_auth="no")
def test_ssl_required_refuses_all_auth_before_tls(moat_server):
    c = connect_from(moat_server, "127.0.0.2")
    assert "LOGINDISABLED" in caps(c.greeting)
    assert c.command("LOGIN testuser1 pass").status == "NO"
    assert c.command("STARTTLS").ok
    start_tls(c)
    assert c.command("LOGIN testuser1 pass").ok


def test_pipelined_command_after_starttls_is_discarded(moat_server):
    c = moat_server.connect()
    c.send(b"a STARTTLS\r\nb NOOP\r\n")
    line = c.read_line()
    assert line.startswith(b"a OK"), line
    start_tls(c)
    r = c.command("NOOP", tag="c")
    assert r.ok and r.untagged == [], r
    # Nothing tagged b ever arrives.
    c.sock.settimeout(0.5)
    with pytest.raises((socket.timeout, TimeoutError)):
        c.read_line()


def partial_client_hello():
    """The first bytes of a real ClientHello."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = client_context().wrap_bio(inc, out)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return out.read()[:40]


@pytest.mark.moat_settings(tls=True, services={"imap-login": {
    "client_limit": 100, "process_limit": 1}})
def test_bad_tls_peers_do_not_disturb_others(moat_server):
    pid = moat_server.wait_children("imap-login", 1)[0]
    good = connect_tls(moat_server)
    starttls = moat_server.connect()
    # Garbage on the TLS port: closed, nobody else notices.
    g = socket.create_connection((moat_server.host, moat_server.tls_port), 5)
    g.sendall(b"GET / HTTP/1.0\r\n\r\n")
    g.settimeout(5)
    try:
        while g.recv(100):  # perhaps an alert, then the close
            pass
    except ConnectionResetError:
        pass
    g.close()
    # Half a ClientHello, then gone; and one that stalls mid-handshake.
    v = socket.create_connection((moat_server.host, moat_server.tls_port), 5)
    v.sendall(partial_client_hello())
    v.close()
    stall = socket.create_connection((moat_server.host, moat_server.tls_port), 5)
    stall.sendall(partial_client_hello())
    # A STARTTLS client that vanishes right after the OK.
    s = moat_server.connect()
    s.send(b"x STARTTLS\r\n")
    s.read_line()
    s.sock.sendall(partial_client_hello()[:10])
    s.sock.close()
    s.closed = True

    start = time.monotonic()
    assert good.command("NOOP").ok
    assert good.command("LOGIN testuser1 pass").ok
    assert starttls.command("STARTTLS").ok
    start_tls(starttls)
    assert starttls.command("LOGIN testuser2 secret2").ok
    # The stalled peer would hold a blocking server for login_timeout
    # (60 s); the margin is for a busy machine.
    assert time.monotonic() - start < 20
    assert moat_server.child_pids("imap-login") == [pid]
    stall.close()
    assert wait_for(lambda: "TLS handshake failed" in moat_server.logs(), 30), \
        moat_server.logs()


@pytest.mark.moat_settings(tls=True, login_timeout=1)
def test_stalled_handshake_is_timed_out(moat_server):
    s = socket.create_connection((moat_server.host, moat_server.tls_port), 30)
    # Closed by the 1 s login_timeout; without it the wait would end in
    # socket.timeout (30 s, for a busy machine).
    s.settimeout(30)
    assert s.recv(100) == b""
    s.close()
    assert wait_for(lambda: "TLS handshake" in moat_server.logs(), 30)


def test_moat_a_hides_the_key(moat_server):
    key = moat_server.key_path.read_text()
    p = subprocess.run([str(MOAT_PREFIX / "sbin/moat"), "-a", "-c",
                        str(moat_server.conf_path)], capture_output=True, timeout=10)
    out = p.stdout.decode()
    assert p.returncode == 0, p.stderr
    assert "ssl_cert = " in out and "BEGIN CERTIFICATE" in out
    assert "PRIVATE KEY" not in out and key_fragment(key) not in out


def key_fragment(pem):
    """A line of the key's base64 body: unique to this key."""
    return [ln for ln in pem.splitlines() if not ln.startswith("-----")][1]


def writable_memory_contains(pid, needle):
    """Searches pid's writable private mappings (heap, stacks, anonymous)."""
    found = False
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("rw"):
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if hi - lo > 256 * 1024 * 1024:
                continue  # sanitizer shadow memory
            try:
                mem.seek(lo)
                if needle in mem.read(hi - lo):
                    found = True
            except (OSError, ValueError, OverflowError):
                continue
    return found


@root_only
def test_key_stays_with_root_and_imap_login(moat_server):
    st = os.stat(moat_server.key_path)
    assert st.st_uid == 0 and (st.st_mode & 0o777) == 0o600
    c = connect_tls(moat_server)
    assert c.command("LOGIN testuser1 pass").ok
    login_pid = moat_server.wait_children("imap-login", 1)[0]
    auth_pid = moat_server.wait_children("auth", 1)[0]
    imap_pid = moat_server.wait_children("imap", 1)[0]
    status = open(f"/proc/{login_pid}/status").read()
    login_uid = pwd.getpwnam("moat-login").pw_uid
    assert re.search(rf"^Uid:\s+{login_uid}\s+{login_uid}\s+{login_uid}\s+{login_uid}$",
                     status, re.M), status
    # imap-login's uid cannot open the key file.
    child = os.fork()
    if child == 0:
        try:
            os.setgroups([])
            os.setgid(pwd.getpwnam("moat-login").pw_gid)
            os.setuid(login_uid)
            open(moat_server.key_path).close()
            os._exit(1)
        except PermissionError:
            os._exit(0)
        except BaseException:
            os._exit(2)
    assert os.waitpid(child, 0)[1] == 0
    # Neither auth nor imap has the key: environment, settings, memory.
    fragment = key_fragment(moat_server.key_path.read_text()).encode()
    for pid in (auth_pid, imap_pid):
        env = open(f"/proc/{pid}/environ", "rb").read()
        assert b"PRIVATE KEY" not in env and fragment not in env
        assert not writable_memory_contains(pid, fragment), pid
    # Master keeps two settings memfds: only the key-signer's has the key.
    with_key = without_key = 0
    for fd in os.listdir(f"/proc/{moat_server.pid}/fd"):
        path = f"/proc/{moat_server.pid}/fd/{fd}"
        try:
            if "moat-settings" not in os.readlink(path):
                continue
            data = open(path, "rb").read()
        except OSError:
            continue
        if fragment in data:
            with_key += 1
        else:
            without_key += 1
    assert with_key == 1 and without_key == 1
    assert c.command("LOGOUT").ok


def test_reload_keeps_tls_sessions_and_loads_new_cert(moat_server):
    c = connect_tls(moat_server)
    assert c.command("LOGIN testuser1 pass").ok
    old_login = moat_server.wait_children("imap-login", 1)[0]
    old_cert = ssl.DER_cert_to_PEM_cert(c.sock.getpeercert(binary_form=True))
    moat_server._make_cert()
    os.kill(moat_server.pid, signal.SIGHUP)
    # A new imap-login takes the listeners; the old one stays for the session.
    assert wait_for(lambda: len(moat_server.child_pids("imap-login")) == 2, 30), \
        moat_server.logs()
    assert c.command("NOOP").ok
    c2 = connect_tls(moat_server)
    new_cert = ssl.DER_cert_to_PEM_cert(c2.sock.getpeercert(binary_form=True))
    assert new_cert != old_cert
    # auth restarts with the reload (moatserver's login_after_reload)
    moat_server.login_after_reload("testuser2", client=c2)
    assert c.command("LOGOUT").ok
    # The old process exits once its last (proxied) session ended.
    assert wait_for(lambda: old_login not in moat_server.child_pids("imap-login"), 30)
    assert c2.command("NOOP").ok


@pytest.mark.moat_settings(tls=True, ssl_min_protocol="TLSv1.3")
def test_min_protocol(moat_server):
    ctx = client_context()
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    s = socket.create_connection((moat_server.host, moat_server.tls_port), 5)
    with pytest.raises((ssl.SSLError, ConnectionResetError)):
        ctx.wrap_socket(s).recv(10)
    s.close()
    assert connect_tls(moat_server).sock.version() == "TLSv1.3"


@pytest.mark.moat_settings(tls=True, services={"imap-login": {
    "client_limit": 100, "process_limit": 1}})
def test_many_concurrent_tls_sessions(moat_server):
    clients = []
    for i in range(12):
        c = connect_tls(moat_server) if i % 2 else moat_server.connect()
        if i % 2 == 0:
            assert c.command("STARTTLS").ok
            start_tls(c)
        clients.append(c)
    for i, c in enumerate(clients):
        assert c.command(f"LOGIN testuser{1 + i % 2} "
                         f"{'pass' if i % 2 == 0 else 'secret2'}").ok
    body = b"Subject: x\r\n\r\n" + b"y" * 100000 + b"\r\n"
    for c in clients[:4]:
        assert c.append("INBOX", body).ok
    # Pipeline a big FETCH on every session at once, then read them all.
    tags = []
    for c in clients:
        assert c.command("SELECT INBOX").ok
        tag = c.next_tag()
        c.send(f"{tag} FETCH 1:* BODY.PEEK[]\r\n")
        tags.append(tag)
    for c, tag in zip(clients, tags):
        assert c.read_tagged(tag).ok
    assert len(moat_server.child_pids("imap-login")) == 1


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_client_certs(d):
    """A CA, a client certificate it signed, and a self-signed stranger."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem",
            "-days", "2", "-subj", "/CN=moat test CA")
    openssl("req", *ec, "-keyout", f"{d}/client.key", "-out", f"{d}/client.csr",
            "-subj", "/CN=testuser1")
    openssl("x509", "-req", "-in", f"{d}/client.csr", "-CA", f"{d}/ca.pem",
            "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-out", f"{d}/client.pem",
            "-days", "2")
    openssl("req", "-x509", *ec, "-keyout", f"{d}/other.key", "-out",
            f"{d}/other.pem", "-days", "2", "-subj", "/CN=stranger")


def test_client_certificates_are_verified(moat_server):
    d = moat_server.tmp
    make_client_certs(d)
    with open(moat_server.conf_path, "a") as f:
        f.write(f"ssl_ca = <{d}/ca.pem\nssl_verify_client_cert = yes\n")
    old = moat_server.wait_children("imap-login", 1)[0]
    os.kill(moat_server.pid, signal.SIGHUP)
    assert wait_for(lambda: old not in moat_server.child_pids("imap-login"), 30), \
        moat_server.logs()

    def connect_with(cert):
        ctx = client_context()
        if cert:
            ctx.load_cert_chain(f"{d}/{cert}.pem", f"{d}/{cert}.key")
        s = ctx.wrap_socket(socket.create_connection(
            (moat_server.host, moat_server.tls_port), 5))
        s.settimeout(5)
        return s.recv(200)

    assert connect_with("client").startswith(b"* OK")
    assert connect_with(None).startswith(b"* OK")
    # TLS 1.3 reports a rejected certificate after the client's handshake.
    with pytest.raises((ssl.SSLError, ConnectionResetError)):
        if not connect_with("other"):
            raise ConnectionResetError("closed")
