"""An atom is an atom, a number is a number: the atom NIL where a flag,
keyword or astring is expected, and sequence numbers and UIDs up to
4294967295 (RFC 3501 9 / RFC 9051 9: flag-keyword = atom, astring,
nz-number is a 32-bit unsigned number, uniqueid = nz-number).
Expected answers were checked against Dovecot 2.3."""

import re

import pytest


def msg(subject):
    return (f"From: a@example.org\r\nSubject: {subject}\r\n\r\n"
            f"Body of {subject}.\r\n").encode()


@pytest.fixture
def three(moat_server):
    c = moat_server.login("testuser1")
    for s in ("first", "the nil word", "third"):
        assert c.append("INBOX", msg(s)).ok
    assert c.command("SELECT INBOX").ok
    return c


def search(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    lines = [u for u in r.untagged if u.startswith(b"* SEARCH")]
    assert len(lines) == 1, r
    return [int(n) for n in lines[0].split()[2:]]


def flags(r, seq):
    """The flags of seq; the test client's parser reads the atom NIL in a
    flag list as None (nil), so it is mapped back."""
    items = r.fetches()[seq]
    return {"NIL" if f is None else f for f in items["FLAGS"]
            if f is None or f.lower() != "\\recent"}


def test_store_keyword_nil(three):
    c = three
    r = c.command("STORE 1 +FLAGS NIL")          # bare flag, not a list
    assert r.ok, r
    assert flags(r, 1) == {"NIL"}
    r = c.command("STORE 2 +FLAGS (NIL \\Seen)")
    assert r.ok, r
    assert flags(r, 2) == {"NIL", "\\Seen"}
    assert any(re.match(rb"\* OK \[PERMANENTFLAGS \(.* NIL .*\)\]", u)
               for u in c.command("SELECT INBOX").untagged)
    assert search(c, "SEARCH KEYWORD NIL") == [1, 2]
    assert search(c, "SEARCH UNKEYWORD NIL") == [3]
    r = c.command("STORE 1:2 -FLAGS (nil)")       # keywords match caselessly
    assert r.ok, r
    assert search(c, "SEARCH KEYWORD NIL") == []


def test_append_keyword_nil(three):
    c = three
    assert c.append("INBOX", msg("fourth"), flags=["NIL"]).ok
    r = c.command("FETCH 4 FLAGS")
    assert r.ok and flags(r, 4) == {"NIL"}, r


def test_search_string_nil(three):
    """SEARCH SUBJECT NIL searches for the string "NIL" (astring)."""
    c = three
    assert search(c, "SEARCH SUBJECT NIL") == [2]
    assert search(c, "SEARCH BODY nil") == [2]
    assert search(c, "SEARCH HEADER SUBJECT NIL") == [2]
    assert search(c, "SEARCH FROM NIL") == []
    # NIL is not a search key
    assert c.command("SEARCH NIL").status == "BAD"


def test_mailbox_named_nil(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("CREATE NIL").ok
    r = c.command('LIST "" NIL')
    assert r.ok and r.untagged == [b'* LIST (\\HasNoChildren) "/" "NIL"'], r
    assert c.command("SELECT NIL").ok
    assert c.command('STATUS "NIL" (MESSAGES)').ok
    assert c.command("DELETE NIL").ok


def test_uid_up_to_max(three):
    c = three
    assert search(c, "UID SEARCH UID 1:4294967295") == [1, 2, 3]
    assert search(c, "UID SEARCH UID 4294967295") == []
    # n:* always includes the largest UID in use (RFC 9051 6.4.8 / 9)
    assert search(c, "UID SEARCH UID 4294967295:*") == [3]
    assert search(c, "SEARCH 1:4294967295") == [1, 2, 3]
    r = c.command("UID FETCH 4294967295 FLAGS")
    assert r.ok and r.fetches() == {}, r
    r = c.command("UID FETCH 2:4294967295 UID")
    assert r.ok, r
    assert sorted(r.fetches()) == [2, 3]
    r = c.command("UID STORE 3:4294967295 +FLAGS.SILENT (\\Flagged)")
    assert r.ok, r
    assert search(c, "SEARCH FLAGGED") == [3]
    assert c.command("UID COPY 4294967295 INBOX").ok
    assert c.command("UID MOVE 4294967295 INBOX").ok
    r = c.command("UID EXPUNGE 4294967295")
    assert r.ok and r.untagged == [], r
    assert search(c, "SEARCH ALL") == [1, 2, 3]


def test_numbers_out_of_range(three):
    c = three
    for cmd in ("UID SEARCH UID 4294967296", "UID FETCH 4294967296 FLAGS",
                "UID FETCH 0 FLAGS", "FETCH 0 FLAGS", "SEARCH 0",
                "UID STORE 99999999999 +FLAGS (x)", "UID EXPUNGE 1:4294967296",
                "FETCH 1:18446744073709551617 FLAGS"):
        assert c.command(cmd).status == "BAD", cmd
    # a sequence number beyond the messages is a BAD for FETCH, STORE,
    # COPY (as Dovecot), but SEARCH just matches what exists
    for cmd in ("FETCH 4294967295 FLAGS", "FETCH 1:4294967295 FLAGS",
                "STORE 4 +FLAGS (x)", "COPY 4 INBOX"):
        assert c.command(cmd).status == "BAD", cmd
    assert search(c, "SEARCH 4:4294967295") == []
    assert search(c, "SEARCH 4:*") == [3]     # "*" is the last message
    assert search(c, "SEARCH 4") == []
