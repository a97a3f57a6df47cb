"""Pre-authentication state (imap-login): greeting, CAPABILITY, NOOP,
LOGOUT, LOGIN and AUTHENTICATE PLAIN (RFC 9051 6.1-6.2, RFC 4959, RFC 4616)."""

import time

import pytest

from moatserver import plain_ir



def capabilities(text):
    """The capability words of a '[CAPABILITY ...]' code or '* CAPABILITY' line."""
    text = text.decode() if isinstance(text, bytes) else text
    if text.startswith("* CAPABILITY "):
        words = text[len("* CAPABILITY "):]
    else:
        start = text.index("[CAPABILITY ") + len("[CAPABILITY ")
        words = text[start:text.index("]", start)]
    return [w.upper() for w in words.split()]


def test_greeting_has_capability(moat_server):
    c = moat_server.connect()
    assert c.greeting.startswith(b"* OK [CAPABILITY "), c.greeting
    caps = capabilities(c.greeting)
    assert "IMAP4REV1" in caps or "IMAP4REV2" in caps
    assert "AUTH=PLAIN" in caps
    # Plaintext logins are allowed on loopback, so LOGIN is not disabled.
    assert "LOGINDISABLED" not in caps


def test_capability_noop_logout_preauth(moat_server):
    c = moat_server.connect()
    r = c.command("CAPABILITY")
    assert r.ok, r
    lines = [l for l in r.untagged if l.upper().startswith(b"* CAPABILITY ")]
    assert len(lines) == 1, r
    caps = capabilities(lines[0])
    assert "IMAP4REV1" in caps or "IMAP4REV2" in caps
    assert "AUTH=PLAIN" in caps and "SASL-IR" in caps

    r = c.command("NOOP")
    assert r.ok, r
    assert r.untagged == []

    tag = c.next_tag()
    c.send(f"{tag} LOGOUT\r\n")
    rest = c.wait_closed(30)
    lines = rest.split(b"\r\n")
    assert lines[0].startswith(b"* BYE"), rest
    assert lines[1].startswith(f"{tag} OK".encode()), rest


def test_login_ok(moat_server):
    c = moat_server.connect()
    r = c.command("LOGIN testuser1 pass")
    assert r.ok, r
    # The first command after the handoff is served by the imap process.
    r = c.command("NOOP")
    assert r.ok, r
    tag = c.next_tag()
    c.send(f"{tag} LOGOUT\r\n")
    rest = c.wait_closed(30)
    assert rest.startswith(b"* BYE"), rest
    assert f"\r\n{tag} OK".encode() in rest, rest


def test_login_quoted_strings(moat_server):
    c = moat_server.connect()
    r = c.command('LOGIN "testuser2" "secret2"')
    assert r.ok, r
    assert c.command("NOOP").ok


def test_login_wrong_password(moat_server):
    c = moat_server.connect()
    r = c.command("LOGIN testuser1 wrong")
    assert r.status == "NO", r
    assert r.code == "AUTHENTICATIONFAILED", r
    # The session stays usable and can still log in.
    assert c.command("NOOP").ok
    assert c.command("LOGIN testuser1 pass").ok


def test_login_unknown_user_same_answer(moat_server):
    c = moat_server.connect()
    wrong = c.command("LOGIN testuser1 wrong")
    unknown = c.command("LOGIN nosuchuser wrong")
    assert unknown.status == "NO", unknown
    assert unknown.code == "AUTHENTICATIONFAILED", unknown
    # The text must not tell an unknown user from a wrong password.
    assert unknown.text == wrong.text


def test_authenticate_plain_sasl_ir(moat_server):
    c = moat_server.connect()
    r = c.command("AUTHENTICATE PLAIN " + plain_ir("testuser1", "pass"))
    assert r.ok, r
    assert c.command("NOOP").ok


def test_authenticate_plain_continuation(moat_server):
    c = moat_server.connect()
    tag = c.next_tag()
    c.send(f"{tag} AUTHENTICATE PLAIN\r\n")
    cont = c.read_tagged(tag)
    assert cont.status == "+", cont
    # PLAIN's challenge is empty: "+ " or "+" followed by nothing else.
    assert cont.line.rstrip() == b"+", cont
    r = c.continue_with(tag, plain_ir("testuser2", "secret2") + "\r\n")
    assert r.ok, r
    assert c.command("NOOP").ok


def test_authenticate_plain_wrong_password(moat_server):
    c = moat_server.connect()
    r = c.command("AUTHENTICATE PLAIN " + plain_ir("testuser1", "nope"))
    assert r.status == "NO" and r.code == "AUTHENTICATIONFAILED", r
    assert c.command("NOOP").ok


def test_authenticate_cancel(moat_server):
    c = moat_server.connect()
    tag = c.next_tag()
    c.send(f"{tag} AUTHENTICATE PLAIN\r\n")
    assert c.read_tagged(tag).status == "+"
    r = c.continue_with(tag, "*\r\n")
    assert r.status == "BAD", r
    assert c.command("NOOP").ok


def test_select_before_login_is_refused(moat_server):
    c = moat_server.connect()
    r = c.command("SELECT INBOX")
    assert r.status in ("BAD", "NO"), r
    assert c.command("NOOP").ok


@pytest.mark.moat_settings(auth_failure_delay=1)
def test_failed_login_is_delayed(moat_server):
    c = moat_server.connect()
    start = time.monotonic()
    r = c.command("LOGIN testuser1 wrong")
    assert r.status == "NO" and r.code == "AUTHENTICATIONFAILED", r
    assert time.monotonic() - start >= 0.9
    assert c.command("LOGIN testuser1 pass").ok
