"""UTF8=ACCEPT against a private Dovecot (dovecotserver.py). Dovecot 2.3
(Debian's) does not implement RFC 6855: it does not advertise
UTF8=ACCEPT and enables nothing for it, so the UTF-8 side cannot be
compared there (doc/extensions.md). What can be: the modified UTF-7 side
of the same folders. Names moat was given in UTF-8 mode must be, as a
legacy session lists them, names Dovecot accepts and lists back
unchanged; and hand-written modified UTF-7 names are accepted or refused
by both alike. Skipped, saying so, where Dovecot is not installed."""

import re

import pytest

from dovecotserver import DovecotServer, dovecot_binary

# one level each: Dovecot's default Maildir++ separator is "."
UTF8_NAMES = ["Entw\u00fcrfe", "\u65e5\u672c\u8a9e", "R&D", "\u00e9t\u00e9",
              "&AOk-", "caf\u00e9 cr\u00e8me", "\U0001f600 smile",
              "\u0424\u0430\u0439\u043b", "a~b&c-d"]
# modified UTF-7 as a client may write it; the invalid ones by RFC 3501
# 5.1.3 (an ASCII character encoded, no closing "-", a bad base64
# character, an unpaired surrogate) are refused by both
MUTF7_NAMES = ["&ZeVnLIqe-", "a&-b", "&AMQ-rger", "&2D3eAA-",
               "&AGE-", "&U,BTFw", "&Jjo!", "&2D0-"]


@pytest.fixture
def dovecot():
    if dovecot_binary() is None:
        pytest.skip("Dovecot is not installed (Debian package "
                    "dovecot-imapd)")
    server = DovecotServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


# moat creates its SPECIAL-USE folders at login; Dovecot is not told to
SPECIALS = {b"Drafts", b"Sent", b"Trash", b"Junk", b"Archive"}


def names(r):
    out = set()
    for line in r.untagged:
        m = re.match(rb'^\* LIST \([^)]*\) "[./]" (.*)$', line)
        if m and m.group(1) != b"INBOX":
            out.add(m.group(1).strip(b'"'))
    return out - SPECIALS


def test_dovecot_has_no_utf8_accept(dovecot):
    """What this comparison stands on: a Dovecot that implemented RFC 6855
    would be compared in UTF-8 mode instead."""
    d = dovecot.login()
    caps = d.command("CAPABILITY").untagged[0].split()
    if b"UTF8=ACCEPT" in caps:
        pytest.fail("this Dovecot implements UTF8=ACCEPT: compare UTF-8 "
                    "mode with it too")
    r = d.command("ENABLE UTF8=ACCEPT")
    assert r.ok and not any(b"UTF8" in line for line in r.untagged), r


def test_utf8_names_as_dovecot_lists_them(moat_server, dovecot):
    u = moat_server.login()
    assert u.command("ENABLE UTF8=ACCEPT").ok
    for name in UTF8_NAMES:
        q = name.replace("\\", "\\\\").replace('"', '\\"')
        assert u.command(f'CREATE "{q}"'.encode()).ok, name
    legacy = moat_server.login()
    moat_wire = names(legacy.command('LIST "" "*"'))
    assert len(moat_wire) == len(UTF8_NAMES), moat_wire
    d = dovecot.login()
    for wire in sorted(moat_wire):
        r = d.command(b'CREATE "' + wire + b'"')
        assert r.ok, (wire, r)
    assert names(d.command('LIST "" "*"')) == moat_wire


def test_mutf7_accepted_and_refused_alike(moat_server, dovecot):
    m = moat_server.login()
    d = dovecot.login()
    for wire in MUTF7_NAMES:
        rm = m.command(f'CREATE "{wire}"')
        rd = d.command(f'CREATE "{wire}"')
        assert (rm.status, wire) == (rd.status, wire), (rm, rd)
    assert names(m.command('LIST "" "*"')) == \
        names(d.command('LIST "" "*"'))
