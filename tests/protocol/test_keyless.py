"""ssl_key_isolation (default yes): the key-signer process holds the TLS
private key and signs handshakes for imap-login, which never has the key
(doc/security.md, "The TLS private key"). With an RSA and with an ECDSA
key: TLS 1.2 and 1.3, implicit TLS and STARTTLS, several imap-login
processes, no trace of the key in any imap-login's memory (the private
number in both byte orders, its DER and its PEM), reload with a new key,
and a stopped or killed key-signer."""

import os
import pwd
import re
import signal
import socket
import ssl
import subprocess
import time

import pytest

from moatimap import ImapClient
from moatserver import IS_ROOT, root_only, wait_for

KEY_TYPES = ["rsa", "ec"]
VERSIONS = [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3]
# Mappings larger than this are sanitizer shadow memory (terabytes
# reserved, nothing of the program's own in them).
SCAN_MAPPING_MAX = 256 * 1024 * 1024
SCAN_CHUNK = 16 * 1024 * 1024


def keyed(key_type, **settings):
    return pytest.param(key_type, marks=pytest.mark.moat_settings(
        tls=True, tls_key_type=key_type, **settings), id=key_type)


def client_context(version=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # The test certificate is self-signed: what is checked is that the
    # server proves it holds its key, i.e. that the handshake completes.
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if version is not None:
        ctx.minimum_version = ctx.maximum_version = version
    return ctx


def tls_client(server, version=None, starttls=False, ctx=None):
    """A logged-out client after a completed handshake (implicit TLS on
    the imaps listener, or STARTTLS on the imap one)."""
    ctx = ctx or client_context(version)
    if starttls:
        c = server.connect()
        r = c.command("STARTTLS")
        assert r.ok, r
        assert c.buf == b""
        c.sock = ctx.wrap_socket(c.sock)
    else:
        c = ImapClient(server.host, server.tls_port)
        c.sock = ctx.wrap_socket(c.sock)
        c.greeting = c.read_greeting()
        server.clients.append(c)
    return c


def cert_der(server):
    return ssl.PEM_cert_to_DER_cert(server.cert_path.read_text())


def check_session(server, c, version):
    assert c.sock.getpeercert(binary_form=True) == cert_der(server)
    if version is not None:
        assert c.sock.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2",
                                    ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
    r = c.command("LOGIN testuser1 pass")
    assert r.ok, r
    assert c.command("NOOP").ok


def openssl(*args):
    return subprocess.run(["openssl", *args], check=True,
                          capture_output=True).stdout


def key_secrets(key_path):
    """{what: bytes} for every form of the private key the scan looks
    for: each private number (RSA: d, p, q; EC: the scalar) big-endian
    and little-endian (how OpenSSL's BIGNUMs hold it on x86), the key's
    PKCS#8 and traditional DER, and a line of its PEM body."""
    text = openssl("pkey", "-in", str(key_path), "-noout", "-text").decode()
    numbers, name = {}, None
    for line in text.splitlines():
        m = re.match(r"^(\w+):\s*$", line)
        if m:
            name = m.group(1)
            numbers[name] = ""
        elif name is not None and line.startswith(" "):
            numbers[name] += line.strip().replace(":", "")
        else:
            name = None
    secrets = {}
    for name in ("privateExponent", "prime1", "prime2", "priv"):
        if name in numbers:
            value = bytes.fromhex(numbers[name]).lstrip(b"\0")
            assert len(value) >= 16, (name, value)
            secrets[f"{name} big-endian"] = value
            secrets[f"{name} little-endian"] = value[::-1]
    assert any("little-endian" in k for k in secrets), text
    secrets["PKCS#8 DER"] = openssl("pkey", "-in", str(key_path),
                                    "-outform", "DER")
    secrets["traditional DER"] = openssl("pkey", "-in", str(key_path),
                                         "-outform", "DER", "-traditional")
    pem = key_path.read_text().splitlines()
    secrets["PEM line"] = [ln for ln in pem if not ln.startswith("-----")][1].encode()
    return secrets


def memory_matches(pid, secrets):
    """The names of the secrets found anywhere in pid's readable memory."""
    found = set()
    overlap = max(len(v) for v in secrets.values())
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("r") or (len(fields) > 5 and
                                                 fields[5] in ("[vvar]", "[vsyscall]")):
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if hi - lo > SCAN_MAPPING_MAX:
                continue
            pos, tail = lo, b""
            while pos < hi:
                size = min(SCAN_CHUNK, hi - pos)
                try:
                    mem.seek(pos)
                    data = tail + mem.read(size)
                except (OSError, ValueError, OverflowError):
                    data = b""
                for name, value in secrets.items():
                    if value in data:
                        found.add(name)
                tail = data[-overlap:]
                pos += size
    return found


def signer_pid(server):
    return server.wait_children("key-signer", 1, timeout=30)[0]


def handshake_ok(server, version=None):
    try:
        c = tls_client(server, version)
    except (OSError, ssl.SSLError):
        return False
    ok = c.sock.getpeercert(binary_form=True) == cert_der(server)
    c.close()
    return ok


# ---- handshakes and the memory of every imap-login --------------------------

@root_only
@pytest.mark.parametrize("key_type", [
    keyed(k, services={"imap-login": {"service_count": 1}}) for k in KEY_TYPES])
def test_no_key_in_any_imap_login(moat_server, key_type):
    """Four logged-in sessions (TLS 1.2 and 1.3, implicit and STARTTLS),
    each in its own imap-login process (service_count = 1), all signed by
    the one key-signer; then none of those processes' memory holds any
    form of the key, while the key-signer's does (the scan can find it)."""
    clients = []
    for version in VERSIONS:
        for starttls in (False, True):
            c = tls_client(moat_server, version, starttls)
            check_session(moat_server, c, version)
            clients.append(c)
    logins = moat_server.wait_children("imap-login", len(clients) + 1, timeout=30)
    secrets = key_secrets(moat_server.key_path)
    for pid in logins:
        leaked = memory_matches(pid, secrets)
        assert not leaked, f"imap-login {pid} holds the key: {sorted(leaked)}"
        env = open(f"/proc/{pid}/environ", "rb").read()
        assert b"PRIVATE KEY" not in env
    in_signer = memory_matches(signer_pid(moat_server), secrets)
    assert any("endian" in name for name in in_signer), in_signer
    # imap-login's settings copy has no ssl_key; the key-signer's has.
    for c in clients:
        assert c.command("LOGOUT").ok


@root_only
@pytest.mark.parametrize("key_type", [keyed("ec", ssl_key_isolation="no")])
def test_without_isolation_imap_login_holds_the_key(moat_server, key_type):
    """ssl_key_isolation = no: the old behaviour, no key-signer, and the
    same scan finds the key in imap-login."""
    c = tls_client(moat_server, ssl.TLSVersion.TLSv1_3)
    check_session(moat_server, c, ssl.TLSVersion.TLSv1_3)
    assert moat_server.child_pids("key-signer") == []
    login = moat_server.wait_children("imap-login", 1)[0]
    found = memory_matches(login, key_secrets(moat_server.key_path))
    assert any("endian" in name for name in found), found
    assert c.command("LOGOUT").ok


@pytest.mark.parametrize("key_type", [keyed(k) for k in KEY_TYPES])
def test_handshakes_each_version_and_mode(moat_server, key_type):
    for version in VERSIONS:
        for starttls in (False, True):
            c = tls_client(moat_server, version, starttls)
            check_session(moat_server, c, version)
            assert c.command("LOGOUT").ok


@pytest.mark.parametrize("key_type", [keyed("rsa")])
def test_rsa_tls13_signs_with_pss_and_tls12_with_pkcs1(moat_server, key_type):
    """TLS 1.3 allows only RSA-PSS for an RSA key; a TLS 1.2 client that
    offers only PKCS#1 v1.5 signatures gets one of those."""
    ctx = client_context(ssl.TLSVersion.TLSv1_3)
    c = tls_client(moat_server, ctx=ctx)
    check_session(moat_server, c, ssl.TLSVersion.TLSv1_3)
    c.close()
    ctx = client_context(ssl.TLSVersion.TLSv1_2)
    ctx.set_ciphers("ECDHE-RSA-AES128-GCM-SHA256")
    c = tls_client(moat_server, ctx=ctx)
    check_session(moat_server, c, ssl.TLSVersion.TLSv1_2)
    c.close()


@pytest.mark.parametrize("key_type", [keyed("rsa")])
def test_rsa_key_exchange_is_not_offered(moat_server, key_type):
    """The key-signer never decrypts: a TLS 1.2 client offering only RSA
    key exchange finds no common suite."""
    ctx = client_context(ssl.TLSVersion.TLSv1_2)
    ctx.set_ciphers("AES128-GCM-SHA256:AES256-SHA")
    with pytest.raises((ssl.SSLError, OSError)):
        tls_client(moat_server, ctx=ctx)
    assert handshake_ok(moat_server, ssl.TLSVersion.TLSv1_2)


@root_only
@pytest.mark.parametrize("key_type", [keyed("ec")])
def test_key_signer_process(moat_server, key_type):
    """Its own process, shown as key-signer: auth's uid, the empty
    chroot, no capabilities, no_new_privs, its seccomp filter."""
    pid = signer_pid(moat_server)
    # the filter goes in last: then the whole drop is done
    assert wait_for(lambda: re.search(r"^Seccomp:\s+2$", open(
        f"/proc/{pid}/status").read(), re.M), 30), moat_server.logs()
    status = open(f"/proc/{pid}/status").read()
    uid = pwd.getpwnam("moat-auth").pw_uid
    assert re.search(rf"^Uid:\s+{uid}\s+{uid}\s+{uid}\s+{uid}$", status, re.M), status
    assert re.search(r"^CapEff:\s+0+$", status, re.M), status
    assert re.search(r"^CapBnd:\s+0+$", status, re.M), status
    assert re.search(r"^NoNewPrivs:\s+1$", status, re.M), status
    assert re.search(r"^Seccomp:\s+2$", status, re.M), status
    assert os.readlink(f"/proc/{pid}/root") == str(moat_server.base_dir / "empty")
    assert b"PRIVATE KEY" not in open(f"/proc/{pid}/environ", "rb").read()
    # Not dumpable: auth, which shares the uid, cannot read its memory.
    child = os.fork()
    if child == 0:
        try:
            os.setgroups([])
            os.setgid(pwd.getpwnam("moat-auth").pw_gid)
            os.setuid(uid)
            open(f"/proc/{pid}/mem", "rb").close()
            os._exit(1)
        except PermissionError:
            os._exit(0)
        except BaseException:
            os._exit(2)
    assert os.waitpid(child, 0)[1] == 0


# ---- reload and failures -----------------------------------------------------

@pytest.mark.parametrize("key_type", [keyed("ec")])
def test_reload_with_a_new_key(moat_server, key_type):
    """SIGHUP after the certificate and key changed (EC to RSA): new
    handshakes present the new certificate and are signed with the new
    key, in TLS 1.2 and 1.3."""
    assert handshake_ok(moat_server)
    old_signer = signer_pid(moat_server) if IS_ROOT else None
    old_logins = moat_server.child_pids("imap-login")
    old_cert = cert_der(moat_server)
    moat_server._make_cert("rsa")
    assert cert_der(moat_server) != old_cert
    os.kill(moat_server.pid, signal.SIGHUP)
    # An old imap-login may accept until it has read master's SHUTDOWN;
    # without clients it then exits.
    assert wait_for(lambda: not set(old_logins) &
                    set(moat_server.child_pids("imap-login")), 60), moat_server.logs()
    assert wait_for(lambda: handshake_ok(moat_server), 60), moat_server.logs()
    for version in VERSIONS:
        for starttls in (False, True):
            c = tls_client(moat_server, version, starttls)
            check_session(moat_server, c, version)
            c.close()
    if old_signer is not None:
        assert wait_for(lambda: moat_server.child_pids("key-signer") not in
                        ([], [old_signer]), 30)


@pytest.mark.parametrize("key_type", [keyed("ec")])
def test_stopped_then_killed_signer(moat_server, key_type):
    """A stopped key-signer: handshakes fail cleanly (no hang; imap-login
    waits at most its timeout once, then fails at once) and plaintext
    clients are served meanwhile; killed, master restarts it and
    handshakes work again."""
    assert handshake_ok(moat_server)
    pid = moat_server.wait_children("key-signer", 1, timeout=30)[0]
    os.kill(pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        assert not handshake_ok(moat_server)
        first = time.monotonic() - start
        # the imap-login waited, but not forever (3 s timeout + load)
        assert first < 30
        start = time.monotonic()
        assert not handshake_ok(moat_server)
        # the back-off answers without a second wait
        assert time.monotonic() - start < first + 1
        c = moat_server.connect()
        assert c.command("NOOP").ok
        c.close()
        assert "key-signer did not answer" in moat_server.logs()
    finally:
        os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: moat_server.child_pids("key-signer") not in ([], [pid]), 30), \
        moat_server.logs()
    assert wait_for(lambda: handshake_ok(moat_server), 30), moat_server.logs()
    assert "service(key-signer): child" in moat_server.logs()


@pytest.mark.parametrize("key_type", [keyed("ec")])
def test_killed_signer_restarts(moat_server, key_type):
    """SIGKILL alone: imap-login sees the socket close, master starts a
    new key-signer and hands every imap-login a socket to it."""
    assert handshake_ok(moat_server)
    pid = moat_server.wait_children("key-signer", 1, timeout=30)[0]
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: moat_server.child_pids("key-signer") not in ([], [pid]), 30), \
        moat_server.logs()
    assert wait_for(lambda: handshake_ok(moat_server), 30), moat_server.logs()


@pytest.mark.parametrize("key_type", [keyed("ec", ssl_key_isolation="no")])
def test_reload_turns_isolation_on(moat_server, key_type):
    """A reload from ssl_key_isolation = no to yes: the old imap-login
    (which has no use for the key-signer's socket) keeps serving its
    clients, new handshakes are signed by a new key-signer."""
    c = moat_server.connect()
    assert moat_server.child_pids("key-signer") == []
    moat_server.settings["ssl_key_isolation"] = "yes"
    moat_server.conf_path.write_text(moat_server._config_text())
    os.kill(moat_server.pid, signal.SIGHUP)
    moat_server.wait_children("key-signer", 1, timeout=30)
    assert wait_for(lambda: handshake_ok(moat_server), 30), moat_server.logs()
    assert c.command("NOOP").ok
    assert c.command("LOGOUT").ok
    assert "malformed" not in moat_server.logs()
