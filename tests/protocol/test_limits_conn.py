"""Connection limits, auth attempts, trusted networks, nologin and the
login log line (issue 5, "Abuse and limits"; doc/configuration.md)."""

import re
import socket
import ssl
import time

import pytest

from moatimap import ConnectionClosed, ImapClient
from moatserver import wait_for

LOGIN_LINE = re.compile(
    r"login: user=<(?P<user>[^>]*)>, method=(?P<method>\S+), rip=(?P<rip>\S+), "
    r"lip=(?P<lip>\S+), tls=(?P<tls>\S+), pid=(?P<pid>\d+)$")


def connect_from(server, source_ip, greeting=True):
    """A client whose connection comes from source_ip (127.0.0.x), so it
    is not a same-host connection."""
    c = ImapClient.__new__(ImapClient)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source_ip, 0))
    s.settimeout(10)
    s.connect((server.host, server.port))
    c.sock, c.buf, c.tag_no, c.closed, c.greeting = s, b"", 0, False, None
    server.clients.append(c)
    if greeting:
        c.greeting = c.read_greeting()
    return c


def login_lines(server):
    found = []
    for line in server.log_path.read_text(errors="replace").splitlines():
        m = LOGIN_LINE.search(line)
        if m:
            found.append(m)
    return found


def log_has(server, pattern, timeout=30.0):
    rx = re.compile(pattern)
    return wait_for(lambda: rx.search(server.log_path.read_text(errors="replace")),
                    timeout)


def expect_limit(c, user, password, setting):
    """LOGIN answered by the imap process with BYE + NO [LIMIT], then close."""
    r = c.command(f"LOGIN {user} {password}")
    assert r.status == "NO", r
    assert r.text.startswith(b"[LIMIT] "), r
    assert f"({setting}".encode() in r.text, r
    assert any(l.startswith(b"* BYE [UNAVAILABLE] ") for l in r.untagged), r
    c.wait_closed(30)


@pytest.mark.moat_settings(mail_max_userip_connections=2)
def test_userip_limit(moat_server):
    a = moat_server.login()
    b = moat_server.login()
    c = moat_server.connect()
    expect_limit(c, "testuser1", "pass", "mail_max_userip_connections=2")
    # Another user is not affected.
    other = moat_server.login("testuser2")
    assert other.command("NOOP").ok
    # The refused connection did not count; a closed one frees its slot.
    assert a.command("NOOP").ok
    assert b.command("LOGOUT").ok
    d = wait_for(lambda: _try_login(moat_server), 30)
    assert d, moat_server.logs()
    assert log_has(moat_server, r"connection refused: rip=127\.0\.0\.1, reason="
                   r"Maximum number of connections from user\+IP exceeded")


def _try_login(server):
    c = server.connect()
    r = c.command("LOGIN testuser1 pass")
    if r.ok:
        return c
    return None


@pytest.mark.moat_settings(mail_max_userip_connections=0,
                           mail_max_user_connections=3)
def test_user_limit_all_ips(moat_server):
    clients = [moat_server.login(),
               connect_from(moat_server, "127.0.0.1"),
               connect_from(moat_server, "127.0.0.1")]
    for c in clients[1:]:
        assert c.command("LOGIN testuser1 pass").ok
    c = moat_server.connect()
    expect_limit(c, "testuser1", "pass", "mail_max_user_connections=3")
    assert moat_server.login("testuser2").command("NOOP").ok


@pytest.mark.moat_settings(mail_max_userip_connections=0,
                           services={"imap": {"client_limit": 2}})
def test_imap_client_limit_enforced(moat_server):
    moat_server.login()
    moat_server.login()
    expect_limit(moat_server.connect(), "testuser1", "pass", "client_limit=2")


@pytest.mark.moat_settings(imap_max_auth_attempts=2)
def test_auth_attempts_limit(moat_server):
    c = moat_server.connect()
    r = c.command("LOGIN testuser1 wrong")
    assert r.status == "NO", r
    tag = c.next_tag()
    c.send(f"{tag} LOGIN testuser1 wrong2\r\n")
    rest = c.wait_closed(30)
    assert f"{tag} NO [AUTHENTICATIONFAILED]".encode() in rest, rest
    assert b"* BYE Too many authentication failures" in rest, rest


def test_auth_attempts_default_three(moat_server):
    c = moat_server.connect()
    for _ in range(2):
        assert c.command("LOGIN testuser1 wrong").status == "NO"
    assert c.command("LOGIN testuser1 pass").ok


@pytest.mark.moat_settings(login_max_connections_per_ip=2,
                           disable_plaintext_auth="no",
                           services={"imap-login": {"process_limit": 1}})
def test_preauth_connections_per_ip(moat_server):
    a = connect_from(moat_server, "127.0.0.2")
    b = connect_from(moat_server, "127.0.0.2")
    assert a.greeting.startswith(b"* OK") and b.greeting.startswith(b"* OK")
    c = connect_from(moat_server, "127.0.0.2", greeting=False)
    rest = c.wait_closed(30)
    assert rest.startswith(b"* BYE [UNAVAILABLE] Too many connections"), rest
    # Other addresses (and same-host connections) are not limited.
    d = connect_from(moat_server, "127.0.0.3")
    assert d.greeting.startswith(b"* OK")
    for _ in range(3):
        assert moat_server.connect().greeting.startswith(b"* OK")
    # Logging in frees the pre-auth slot.
    assert a.command("LOGIN testuser1 pass").ok
    e = wait_for(lambda: _greeted(moat_server, "127.0.0.2"), 30)
    assert e, moat_server.logs()


def _greeted(server, ip):
    c = connect_from(server, ip, greeting=False)
    try:
        line = c.read_line()
    except (ConnectionClosed, OSError):
        return None
    return c if line.startswith(b"* OK") else None


@pytest.mark.moat_settings(login_trusted_networks="127.0.0.2/32, 10.0.0.0/8",
                           auth_failure_delay=4)
def test_trusted_network_secured_and_originating_ip(moat_server):
    # Untrusted, not same-host: plaintext refused before TLS.
    u = connect_from(moat_server, "127.0.0.3")
    assert b"LOGINDISABLED" in u.greeting
    r = u.command("LOGIN testuser1 pass")
    assert r.status == "NO" and b"[PRIVACYREQUIRED]" in r.text, r

    # Trusted: counts as secured; its failures are not delayed.
    t = connect_from(moat_server, "127.0.0.2")
    assert b"LOGINDISABLED" not in t.greeting
    start = time.monotonic()
    assert t.command("LOGIN testuser1 wrong").status == "NO"
    assert t.command("LOGIN testuser1 wrong").status == "NO"
    # Delayed, the two would take 8 s at least; margin for a busy machine.
    assert time.monotonic() - start < 4
    assert log_has(moat_server, r"auth failed: user=testuser1, method=PLAIN, "
                   r"rip=127\.0\.0\.2, reason=password mismatch")

    # A trusted proxy names its client: logs and penalties use that address.
    p = connect_from(moat_server, "127.0.0.2")
    r = p.command('ID ("name" "webmail" "x-originating-ip" "192.0.2.7" '
                  '"x-originating-port" "4711")')
    assert r.ok, r
    start = time.monotonic()
    assert p.command("LOGIN testuser1 wrong").status == "NO"
    assert time.monotonic() - start >= 3, "the client's address is penalised"
    assert log_has(moat_server, r"auth failed: user=testuser1, method=PLAIN, "
                   r"rip=192\.0\.2\.7, reason=password mismatch")
    assert p.command("LOGIN testuser1 pass").ok
    assert wait_for(lambda: [m for m in login_lines(moat_server)
                             if m["rip"] == "192.0.2.7"], 30), moat_server.logs()


@pytest.mark.moat_settings(disable_plaintext_auth="no")
def test_untrusted_originating_ip_ignored(moat_server):
    c = connect_from(moat_server, "127.0.0.3")
    assert c.command('ID ("x-originating-ip" "198.51.100.1")').ok
    assert c.command("LOGIN testuser1 pass").ok
    found = wait_for(lambda: login_lines(moat_server), 30)
    assert found and found[-1]["rip"] == "127.0.0.3", moat_server.logs()
    assert "198.51.100.1" not in moat_server.log_path.read_text()


def test_nologin_with_reason(moat_server):
    path = moat_server.users_path
    lines = path.read_text().splitlines()
    lines = [l + "nologin reason=Account_suspended_by_admin"
             if l.startswith("testuser2:") else l for l in lines]
    time.sleep(0.01)
    path.write_text("\n".join(lines) + "\n")
    c = moat_server.connect()
    r = c.command("LOGIN testuser2 secret2")
    assert r.status == "NO", r
    assert r.text == b"[CONTACTADMIN] Account_suspended_by_admin", r
    # A wrong password does not reveal the nologin state.
    r = c.command("LOGIN testuser2 wrong")
    assert r.text.startswith(b"[AUTHENTICATIONFAILED]"), r
    assert log_has(moat_server, r"auth failed: user=testuser2, method=PLAIN, "
                   r"rip=127\.0\.0\.1, reason=nologin")
    assert moat_server.login("testuser1").command("NOOP").ok


def test_login_log_line_plain(moat_server):
    moat_server.login()
    found = wait_for(lambda: login_lines(moat_server), 30)
    assert found, moat_server.logs()
    m = found[-1]
    assert (m["user"], m["method"], m["rip"], m["lip"], m["tls"]) == \
        ("testuser1", "PLAIN", "127.0.0.1", "127.0.0.1", "none")
    assert int(m["pid"]) in moat_server.child_pids("imap")


@pytest.mark.moat_settings(tls=True)
def test_login_log_line_tls(moat_server):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    c = ImapClient(moat_server.host, moat_server.tls_port)
    c.sock = ctx.wrap_socket(c.sock)
    moat_server.clients.append(c)
    c.read_greeting()
    assert c.command("LOGIN testuser1 pass").ok
    found = wait_for(lambda: login_lines(moat_server), 30)
    assert found and found[-1]["tls"] == c.sock.version(), moat_server.logs()
