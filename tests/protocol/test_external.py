"""SASL EXTERNAL (RFC 4422 appendix A) with TLS client certificates: the
user named by a certificate that verified against ssl_ca
(ssl_cert_username_field) logs in without a password; AUTH=EXTERNAL is
offered only on such connections."""

import base64
import os
import signal
import socket
import ssl
import subprocess

import pytest

from moatimap import ImapClient
from moatserver import wait_for

pytestmark = pytest.mark.moat_settings(
    tls=True, auth_mechanisms="plain login external")

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(d):
    openssl("req", "-x509", *EC, "-keyout", f"{d}/ca.key", "-out",
            f"{d}/ca.pem", "-days", "2", "-subj", "/CN=moat test CA")


def make_client_cert(d, name, subject):
    """A client certificate for subject, signed by the test CA."""
    openssl("req", *EC, "-keyout", f"{d}/{name}.key", "-out",
            f"{d}/{name}.csr", "-subj", subject)
    openssl("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.pem",
            "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-out",
            f"{d}/{name}.pem", "-days", "2")


def reconfigure(server, text):
    """Appends settings and reloads; waits for a fresh imap-login."""
    with open(server.conf_path, "a") as f:
        f.write(text)
    old = server.wait_children("imap-login", 1)[0]
    os.kill(server.pid, signal.SIGHUP)
    assert wait_for(lambda: old not in server.child_pids("imap-login")
                    and server.child_pids("imap-login"), 30), server.logs()


@pytest.fixture
def certs(moat_server):
    d = moat_server.tmp
    make_ca(d)
    make_client_cert(d, "client", "/CN=testuser1")
    make_client_cert(d, "client2", "/CN=nosuchuser")
    make_client_cert(d, "email", "/CN=someone/emailAddress=testuser2")
    reconfigure(moat_server, f"ssl_ca = <{d}/ca.pem\n"
                "ssl_verify_client_cert = yes\n")
    return d


def connect(server, cert=None):
    """Implicit TLS, presenting cert (a name in the cert dir) if given."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(f"{server.tmp}/{cert}.pem",
                            f"{server.tmp}/{cert}.key")
    c = ImapClient(server.host, server.tls_port)
    c.sock = ctx.wrap_socket(c.sock)
    c.greeting = c.read_greeting()
    server.clients.append(c)
    return c


def caps(c):
    r = c.command("CAPABILITY")
    assert r.ok, r
    return set(r.untagged[0].decode().split())


def login_lines(server, user):
    return [l for l in server.logs().splitlines()
            if f"Login: user=<{user}>, method=EXTERNAL" in l]


def authenticate(c, ir):
    """AUTHENTICATE EXTERNAL with an initial response; the tagged reply."""
    return c.command(f"AUTHENTICATE EXTERNAL {ir}")


def b64(text):
    return base64.b64encode(text.encode()).decode()


def test_external_login_with_client_cert(moat_server, certs):
    c = connect(moat_server, "client")
    assert "AUTH=EXTERNAL" in caps(c)
    r = authenticate(c, "=")
    assert r.ok, f"{r}\n" + moat_server.logs()
    assert wait_for(lambda: login_lines(moat_server, "testuser1"), 30), \
        moat_server.logs()
    # The session is testuser1's.
    r = c.command("SELECT INBOX")
    assert r.ok, r


def test_external_authzid_same_user_and_continuation(moat_server, certs):
    c = connect(moat_server, "client")
    assert authenticate(c, b64("testuser1")).ok
    # Without an initial response: an empty challenge, an empty answer.
    c2 = connect(moat_server, "client")
    tag = c2.next_tag()
    r = c2.command("AUTHENTICATE EXTERNAL", tag=tag)
    assert r.status == "+", r
    assert c2.continue_with(tag, "\r\n").ok


def test_external_authzid_mismatch_is_refused(moat_server, certs):
    c = connect(moat_server, "client")
    r = authenticate(c, b64("testuser2"))
    assert r.status == "NO", r
    assert b"AUTHENTICATIONFAILED" in r.line
    assert wait_for(lambda: "method=EXTERNAL" in moat_server.logs() and
                    "differs" in moat_server.logs(), 30), moat_server.logs()
    assert not login_lines(moat_server, "testuser2")


def test_external_unknown_user_is_refused(moat_server, certs):
    c = connect(moat_server, "client2")
    assert "AUTH=EXTERNAL" in caps(c)
    r = authenticate(c, "=")
    assert r.status == "NO", r
    assert b"AUTHENTICATIONFAILED" in r.line, r
    assert wait_for(lambda: "user=nosuchuser" in moat_server.logs(), 30), \
        moat_server.logs()


def test_no_client_cert_no_external(moat_server, certs):
    c = connect(moat_server)
    assert "AUTH=EXTERNAL" not in caps(c)
    r = authenticate(c, "=")
    assert r.status == "NO", r
    assert wait_for(lambda: "without a verified client certificate"
                    in moat_server.logs(), 30), moat_server.logs()
    # Plaintext IMAP, no TLS at all.
    p = moat_server.connect()
    assert "AUTH=EXTERNAL" not in caps(p)
    r = authenticate(p, "=")
    assert r.status == "NO", r


def test_external_not_offered_unless_configured(moat_server, certs):
    reconfigure(moat_server, "auth_mechanisms = plain login\n")
    c = connect(moat_server, "client")
    assert "AUTH=EXTERNAL" not in caps(c)
    r = authenticate(c, "=")
    assert r.status == "NO", r


def test_email_address_field(moat_server, certs):
    reconfigure(moat_server, "ssl_cert_username_field = emailAddress\n")
    c = connect(moat_server, "email")
    assert "AUTH=EXTERNAL" in caps(c)
    assert authenticate(c, "=").ok, moat_server.logs()
    assert wait_for(lambda: login_lines(moat_server, "testuser2"), 30), \
        moat_server.logs()
    # A certificate without the field names nobody.
    c2 = connect(moat_server, "client")
    assert "AUTH=EXTERNAL" not in caps(c2)
