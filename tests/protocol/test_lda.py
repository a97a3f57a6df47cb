"""moat-lda (moat-lda(1)): the message on stdin, -d/-f/-a/-m/-c, the
sysexits.h exit codes, Return-Path and Delivered-To, and the message read
back over IMAP; run as the recipient (no root), as Postfix's local(8)
runs mailbox_command."""

import os
import subprocess

import pytest

from moatserver import IS_ROOT, MOAT_PREFIX, proc_status, wait_for

LDA = MOAT_PREFIX / "bin" / "moat-lda"
MSG = b"From: a@example.org\r\nSubject: lda\r\n\r\nbody\r\n"

EX_OK, EX_USAGE, EX_NOUSER, EX_CANTCREAT, EX_TEMPFAIL, EX_NOPERM, EX_CONFIG = \
    0, 64, 67, 73, 75, 77, 78


def run_lda(server, user, args=(), data=MSG, env=None, as_root=False):
    """moat-lda as user's uid (the way an MTA runs it), HOME and USER set."""
    u = server.users[user]
    full_env = {"PATH": "/usr/bin:/bin", "HOME": str(u["home"]), "USER": user}
    full_env.update({k: v for k, v in os.environ.items()
                     if k.endswith("SAN_OPTIONS")})
    full_env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    if env:
        full_env.update(env)

    def drop():
        if IS_ROOT and not as_root:
            os.setgroups([])
            os.setgid(u["gid"])
            os.setuid(u["uid"])
    return subprocess.run([str(LDA), "-c", str(server.conf_path), *args],
                          input=data, capture_output=True, env=full_env,
                          preexec_fn=drop, timeout=60)


def messages(server, user, mailbox="INBOX"):
    c = server.login(user)
    assert c.command(f"EXAMINE {mailbox}").ok
    r = c.command("UID FETCH 1:* BODY.PEEK[]")
    assert r.ok, r
    c.command("LOGOUT")
    return [items["BODY[]"] for _, items in sorted(r.fetches().items())]


def test_deliver_to_inbox(moat_server):
    r = run_lda(moat_server, "testuser1", ["-f", "sender@example.org"])
    assert r.returncode == EX_OK, r.stderr
    assert messages(moat_server, "testuser1") == [
        b"Return-Path: <sender@example.org>\r\nDelivered-To: testuser1\r\n" + MSG]


def test_address_and_from_line(moat_server):
    """An mbox "From " line gives the sender and is not stored; -a is
    the Delivered-To address."""
    data = b"From bounce@example.net Tue Dec  1 10:00:00 2026\n" + MSG
    r = run_lda(moat_server, "testuser1", ["-a", "tu1+x@example.org"], data)
    assert r.returncode == EX_OK, r.stderr
    assert messages(moat_server, "testuser1") == [
        b"Return-Path: <bounce@example.net>\r\n"
        b"Delivered-To: tu1+x@example.org\r\n" + MSG]


def test_headers_from_the_mta_kept_once(moat_server):
    data = b"Return-Path: <s@example.org>\r\nDelivered-To: testuser1\r\n" + MSG
    r = run_lda(moat_server, "testuser1", ["-d", "testuser1"], data)
    assert r.returncode == EX_OK, r.stderr
    assert messages(moat_server, "testuser1") == [data]


def test_mailbox_option(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("CREATE Lists").ok
    assert run_lda(moat_server, "testuser1", ["-m", "Lists"]).returncode == EX_OK
    # a folder that does not exist: INBOX
    assert run_lda(moat_server, "testuser1", ["-m", "Nope"]).returncode == EX_OK
    assert len(messages(moat_server, "testuser1", "Lists")) == 1
    assert len(messages(moat_server, "testuser1")) == 1


def test_idle_session_hears_it(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    tag = c.next_tag()
    c.send(f"{tag} IDLE\r\n")
    assert c.read_line().startswith(b"+ ")
    assert run_lda(moat_server, "testuser1").returncode == EX_OK
    assert c.read_line_within(30) == b"* 1 EXISTS"
    c.send("DONE\r\n")
    assert c.read_tagged(tag).ok


@pytest.mark.moat_settings(message_size_limit="1k")
def test_too_big(moat_server):
    big = MSG + b"x" * 2000 + b"\r\n"
    r = run_lda(moat_server, "testuser1", data=big)
    assert r.returncode == EX_NOPERM, r
    assert b"too big" in r.stderr
    # nothing left behind
    assert messages(moat_server, "testuser1") == []
    assert list((moat_server.maildir("testuser1") / "tmp").iterdir()) == []


def test_big_message_streams(moat_server):
    big = MSG + b"".join(b"line %07d\r\n" % i for i in range(50000))
    r = run_lda(moat_server, "testuser2", data=big)
    assert r.returncode == EX_OK, r.stderr
    got = messages(moat_server, "testuser2")
    assert len(got) == 1 and got[0].endswith(big)


def test_usage_and_config_errors(moat_server):
    assert run_lda(moat_server, "testuser1", ["-x"]).returncode == EX_USAGE
    assert run_lda(moat_server, "testuser1", ["extra"]).returncode == EX_USAGE
    assert run_lda(moat_server, "testuser1",
                   ["-f", "a\nb"]).returncode == EX_USAGE
    r = run_lda(moat_server, "testuser1", ["-c", "/nonexistent/moat.conf"])
    assert r.returncode == EX_CONFIG, r


def test_unwritable_home(moat_server, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o500)
    if IS_ROOT:
        os.chown(home, moat_server.users["testuser1"]["uid"], 0)
    r = run_lda(moat_server, "testuser1", env={"HOME": str(home)})
    assert r.returncode in (EX_CANTCREAT, EX_TEMPFAIL), r
    assert r.returncode == EX_CANTCREAT, r.stderr


@pytest.mark.skipif(not IS_ROOT, reason="needs root to start as root")
def test_root_needs_a_system_user(moat_server):
    r = run_lda(moat_server, "testuser1", as_root=True,
                env={"HOME": "/nonexistent"})
    assert r.returncode == EX_USAGE, r     # no -d
    r = run_lda(moat_server, "testuser1", ["-d", "no-such-user-moat"],
                as_root=True)
    assert r.returncode == EX_NOUSER, r
    r = run_lda(moat_server, "testuser1", ["-d", "root"], as_root=True)
    assert r.returncode == EX_NOPERM, r


def lda_seccomp_while_reading(server, user):
    """Starts moat-lda with stdin held open, waits until it is filtered
    (or 30 s), finishes the message; returns (Seccomp field seen, exit
    code). The filter goes in before the first read of stdin."""
    u = server.users[user]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(u["home"]), "USER": user,
           "ASAN_OPTIONS": "detect_leaks=0"}

    def drop():
        if IS_ROOT:
            os.setgroups([])
            os.setgid(u["gid"])
            os.setuid(u["uid"])
    p = subprocess.Popen([str(LDA), "-c", str(server.conf_path)],
                         stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, preexec_fn=drop)
    try:
        def field():
            return (proc_status(p.pid) or {}).get("Seccomp")
        seen = wait_for(lambda: field() == "2" and "2", 30) or field()
        _, err = p.communicate(MSG, timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == EX_OK, err
    return seen


def test_lda_runs_filtered(moat_server):
    """moat-lda delivers under its seccomp allowlist ("Seccomp: 2"); the
    message arrives (the rest of this file delivers filtered too)."""
    assert lda_seccomp_while_reading(moat_server, "testuser1") == "2"
    assert messages(moat_server, "testuser1")[0].endswith(MSG)


@pytest.mark.moat_settings(seccomp="no")
def test_lda_seccomp_no(moat_server):
    """seccomp = no: no filter, delivery as before."""
    assert lda_seccomp_while_reading(moat_server, "testuser1") == "0"
    assert messages(moat_server, "testuser1")[0].endswith(MSG)


def test_utf8_sender(moat_server):
    """-f with a UTF-8 address (RFC 6531) goes into Return-Path as it is;
    8-bit bytes that are not UTF-8 are a usage error."""
    sender = "j\u00f6rg@b\u00fccher.example"
    r = run_lda(moat_server, "testuser1", ["-f", sender])
    assert r.returncode == EX_OK, r.stderr
    assert messages(moat_server, "testuser1") == [
        f"Return-Path: <{sender}>\r\nDelivered-To: testuser1\r\n".encode()
        + MSG]
    r = run_lda(moat_server, "testuser1", [b"-f", b"j\xf6rg@example.org"])
    assert r.returncode == EX_USAGE, r.stderr
    assert b"UTF-8" in r.stderr
