"""Kernel TLS handoff (ssl_ktls = yes, lib/ktls.h): where the kernel has
the tls module and OpenSSL offloads both directions, imap-login hands the
TLS socket itself to the user's imap process instead of relaying.

Every session must work the same either way, so the session tests run on
any kernel. Where the kernel has no tls ULP (the test machines so far),
they check the fallback is logged and taken; where it has one, that TLS
1.2 sessions are handed off and no longer occupy imap-login."""

import socket
import ssl
import subprocess

import pytest

from moatimap import ImapClient
from moatserver import MOAT_PREFIX, wait_for

pytestmark = pytest.mark.moat_settings(tls=True, ssl_ktls="yes",
                                       log_debug="yes")


def kernel_has_tls_ulp():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    c = socket.create_connection(listener.getsockname())
    try:
        c.setsockopt(socket.IPPROTO_TCP, 31, b"tls")  # TCP_ULP
        return True
    except OSError:
        return False
    finally:
        c.close()
        listener.close()


KTLS = kernel_has_tls_ulp()


def context(version):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ctx.maximum_version = getattr(ssl.TLSVersion, version)
    if version == "TLSv1_2":
        # AES-GCM: what every kernel with the tls module can carry.
        ctx.set_ciphers("ECDHE+AESGCM")
    return ctx


def connect(server, mode, version):
    if mode == "imaps":
        c = ImapClient(server.host, server.tls_port)
        c.sock = context(version).wrap_socket(c.sock)
        c.greeting = c.read_greeting()
    else:
        c = ImapClient(server.host, server.port)
        c.greeting = c.read_greeting()
        assert c.command("STARTTLS").ok
        c.sock = context(version).wrap_socket(c.sock)
    server.clients.append(c)
    return c


@pytest.mark.parametrize("mode", ["starttls", "imaps"])
@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_session_with_ssl_ktls(moat_server, mode, version):
    c = connect(moat_server, mode, version)
    # A command pipelined behind LOGIN in the same TLS record: it reaches
    # the imap process whichever way the session continues.
    c.send("a1 LOGIN testuser1 pass\r\na2 SELECT INBOX\r\n")
    assert c.read_tagged("a1").ok
    assert c.read_tagged("a2").ok
    body = b"Subject: ktls\r\n\r\n" + b"".join(
        b"line %06d " % i + b"y" * 70 + b"\r\n" for i in range(3000))
    assert c.append("INBOX", body).ok
    assert c.command("NOOP").ok
    tag = c.next_tag()
    c.send(f"{tag} FETCH 1 BODY.PEEK[]\r\n")
    r = c.read_tagged(tag)
    assert r.ok, r
    assert body in b"".join(r.untagged)
    r = c.command("LOGOUT")
    assert r.ok and c.wait_closed(30) is not None

    # The lines travel through master's log pipe: wait for them.
    handoff = KTLS and version == "TLSv1_2"
    want = "(kTLS)" if handoff else "kTLS handoff not possible, relaying: "

    def login_lines():
        log = moat_server.logs()
        if want not in log:
            return None
        return [line for line in log.splitlines()
                if "Login: user=<testuser1>" in line]
    lines = wait_for(login_lines, 30)
    assert lines, moat_server.logs()
    assert lines[-1].endswith(", kTLS") == handoff, lines


@pytest.mark.skipif(not KTLS, reason="the kernel has no tls ULP (tls module)")
@pytest.mark.moat_settings(tls=True, ssl_ktls="yes", log_debug="yes",
                           services={"imap-login": {"client_limit": 1,
                                                    "process_limit": 1}})
def test_handed_off_session_frees_its_login_slot(moat_server):
    a = connect(moat_server, "imaps", "TLSv1_2")
    assert a.command("LOGIN testuser1 pass").ok
    # The one slot is free again: no proxy holds it.
    b = moat_server.connect()
    assert b.greeting.startswith(b"* OK")
    assert a.command("NOOP").ok
    assert a.command("LOGOUT").ok


def test_ssl_ktls_is_off_by_default(tmp_path):
    conf = tmp_path / "moat.conf"
    conf.write_text(f"base_dir = {tmp_path}/run\n"
                    "passdb {\n  driver = passwd-file\n"
                    f"  args = {tmp_path}/users\n}}\n")
    r = subprocess.run([str(MOAT_PREFIX / "sbin/moat"), "-a", "-c", str(conf)],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r
    assert "ssl_ktls = no" in r.stdout.splitlines(), r
