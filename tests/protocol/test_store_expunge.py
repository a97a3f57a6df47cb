"""STORE / UID STORE with system flags and keywords, EXPUNGE and UID
EXPUNGE, and what other sessions see of them (RFC 9051 6.4.3, 6.4.6,
7.5.1; RFC 3501 5.2, 7.4.1; RFC 4315 2.1; RFC 5530 LIMIT)."""

import re

import pytest


def msg(n):
    return (f"From: a@example.org\r\nSubject: message {n}\r\n\r\n"
            f"Body {n}.\r\n").encode()


def fill(c, n, flags=None):
    for i in range(1, n + 1):
        assert c.append("INBOX", msg(i), flags=flags).ok


def select(c, mailbox="INBOX", cmd="SELECT"):
    r = c.command(f"{cmd} {mailbox}")
    assert r.ok, r
    return r


def flags_of(r):
    """{seq: set of flags without \\Recent} from the FETCH responses."""
    return {seq: {f for f in items["FLAGS"] if f.lower() != "\\recent"}
            for seq, items in r.fetches().items() if "FLAGS" in items}


def expunges(r):
    return [int(m.group(1)) for line in r.untagged
            for m in [re.match(rb"^\* (\d+) EXPUNGE$", line)] if m]


@pytest.fixture
def five(moat_server):
    c = moat_server.login("testuser1")
    fill(c, 5)
    select(c)
    return moat_server, c


def test_store_replace_add_remove(five):
    server, c = five
    r = c.command("STORE 1 FLAGS (\\Seen \\Flagged)")
    assert r.ok, r
    assert flags_of(r) == {1: {"\\Seen", "\\Flagged"}}
    r = c.command("STORE 1:2 +FLAGS (\\Deleted)")
    assert r.ok, r
    assert flags_of(r) == {1: {"\\Seen", "\\Flagged", "\\Deleted"}, 2: {"\\Deleted"}}
    r = c.command("STORE 1 -FLAGS (\\Flagged \\Deleted)")
    assert flags_of(r) == {1: {"\\Seen"}}
    r = c.command("FETCH 1:2 FLAGS")
    assert flags_of(r) == {1: {"\\Seen"}, 2: {"\\Deleted"}}


def test_store_rfc_example(five):
    """RFC 9051 6.4.6: STORE 2:4 +FLAGS (\\Deleted) answers one FETCH each."""
    server, c = five
    r = c.command("STORE 2:4 +FLAGS (\\Deleted)")
    assert r.ok, r
    assert sorted(flags_of(r)) == [2, 3, 4]
    assert all("\\Deleted" in f for f in flags_of(r).values())


def test_store_silent(five):
    server, c = five
    r = c.command("STORE 1:3 +FLAGS.SILENT (\\Answered)")
    assert r.ok, r
    assert r.fetches() == {}, r
    r = c.command("STORE 1 FLAGS.SILENT \\Draft")   # bare flag, no list
    assert r.ok and r.fetches() == {}, r
    assert flags_of(c.command("FETCH 1:3 FLAGS")) == {
        1: {"\\Draft"}, 2: {"\\Answered"}, 3: {"\\Answered"}}


def test_uid_store_reports_uid(five):
    server, c = five
    r = c.command("UID STORE 2,4 +FLAGS (\\Flagged)")
    assert r.ok, r
    f = r.fetches()
    assert sorted(f) == [2, 4]
    assert f[2]["UID"] == "2" and f[4]["UID"] == "4"
    # UIDs not in use are ignored
    r = c.command("UID STORE 100:200 +FLAGS (\\Flagged)")
    assert r.ok and r.fetches() == {}, r


def test_store_keywords(five):
    server, c = five
    r = c.command("STORE 1 +FLAGS ($Forwarded Work)")
    assert r.ok, r
    assert flags_of(r) == {1: {"$Forwarded", "Work"}}
    # the new keywords are announced with FLAGS before the FETCH
    flags_line = [l for l in r.untagged if l.startswith(b"* FLAGS ")]
    assert flags_line and b"$Forwarded" in flags_line[0] and b"Work" in flags_line[0], r
    assert r.untagged.index(flags_line[0]) < next(
        i for i, l in enumerate(r.untagged) if b"FETCH" in l)
    # keyword names are case-insensitive
    r = c.command("STORE 2 +FLAGS (work)")
    assert flags_of(r) == {2: {"Work"}}
    r = c.command("STORE 1 -FLAGS (WORK)")
    assert flags_of(r) == {1: {"$Forwarded"}}
    # removing an unknown keyword is fine and defines nothing
    r = c.command("STORE 1 -FLAGS (Unknown)")
    assert r.ok and flags_of(r) == {1: {"$Forwarded"}}
    # SELECT lists the keywords in FLAGS and PERMANENTFLAGS with \*
    r = select(c)
    flags = [l for l in r.untagged if l.startswith(b"* FLAGS ")][0]
    perm = [l for l in r.untagged if b"PERMANENTFLAGS" in l][0]
    assert b"$Forwarded" in flags and b"Work" in flags and b"Unknown" not in flags
    assert b"$Forwarded" in perm and b"\\*" in perm
    # stored in the Maildir file name as letters
    c.command("LOGOUT")
    cur = server.maildir("testuser1") / "cur"
    kwfile = (server.maildir("testuser1") / "moat-keywords").read_text()
    assert "$Forwarded" in kwfile and "Work" in kwfile
    assert any(re.search(r":2,[A-Z]*[a-z]+$", p.name) for p in cur.iterdir())


def test_append_keywords(moat_server):
    c = moat_server.login("testuser1")
    assert c.append("INBOX", msg(1), flags=["\\Seen", "Todo"]).ok
    r = select(c)
    assert b"Todo" in [l for l in r.untagged if l.startswith(b"* FLAGS ")][0]
    assert flags_of(c.command("FETCH 1 FLAGS")) == {1: {"\\Seen", "Todo"}}


def test_keyword_limit(five):
    server, c = five
    names = " ".join(f"kw{i}" for i in range(26))
    assert c.command(f"STORE 1 +FLAGS ({names})").ok
    r = c.command("STORE 1 +FLAGS (onemore)")
    assert r.status == "NO" and r.code == "LIMIT", r
    # an existing one still works
    assert c.command("STORE 2 +FLAGS (KW3)").ok
    r = c.append("INBOX", msg(9), flags=["another"])
    assert r.status == "NO" and r.code == "LIMIT", r
    # no \* in PERMANENTFLAGS once no keyword can be added
    r = select(c)
    perm = [l for l in r.untagged if b"PERMANENTFLAGS" in l][0]
    assert b"kw25" in perm and b"\\*" not in perm, perm


@pytest.mark.parametrize("cmd", [
    "STORE 1 FLAGS (\\Recent)",
    "STORE 1 +FLAGS (\\Bogus)",
    "STORE 1 +FLAGS (bad]kw)",
    "STORE 1 +FLAGS (\\*)",
    "STORE 1 FLAGZ (\\Seen)",
    "STORE 1 +FLAGS",
    "STORE 1:x +FLAGS (\\Seen)",
    "STORE 9 +FLAGS (\\Seen)",
    "STORE 1 +FLAGS (\\Seen) extra",
    "STORE 1 +FLAGS (\"quoted\")",
    "UID EXPUNGE",
    "UID EXPUNGE abc",
    "EXPUNGE 1",
])
def test_bad_syntax(five, cmd):
    server, c = five
    r = c.command(cmd)
    assert r.status == "BAD", r
    # nothing changed
    assert flags_of(c.command("FETCH 1 FLAGS")) == {1: set()}


def test_store_needs_selected(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("STORE 1 +FLAGS (\\Seen)").status == "BAD"
    assert c.command("EXPUNGE").status == "BAD"


def test_readonly(five):
    server, c = five
    assert c.command("STORE 1 +FLAGS (\\Deleted)").ok
    select(c, cmd="EXAMINE")
    r = c.command("STORE 1 +FLAGS (\\Seen)")
    assert r.status == "NO", r
    r = c.command("EXPUNGE")
    assert r.status == "NO", r
    assert c.command("NOOP").untagged_with("EXPUNGE") == []


def test_expunge_order(five):
    """RFC 9051 6.4.3 example: 3, 4, 7, 11 deleted gives 3, 3, 5, 8; here
    with 2, 3 and 5 of 5 the responses are 2, 2, 3."""
    server, c = five
    assert c.command("STORE 2:3,5 +FLAGS.SILENT (\\Deleted)").ok
    r = c.command("EXPUNGE")
    assert r.ok, r
    assert expunges(r) == [2, 2, 3], r
    r = c.command("FETCH 1:* UID")
    assert [int(r.fetches()[s]["UID"]) for s in (1, 2)] == [1, 4]


def test_uid_expunge_only_listed(five):
    server, c = five
    assert c.command("STORE 1:4 +FLAGS.SILENT (\\Deleted)").ok
    r = c.command("UID EXPUNGE 2:3,5")
    assert r.ok, r
    assert expunges(r) == [2, 2], r       # 5 was not \Deleted
    r = c.command("UID FETCH 1:* FLAGS")
    assert sorted(int(i["UID"]) for i in r.fetches().values()) == [1, 4, 5]
    caps = c.command("CAPABILITY").untagged[0].split()
    assert b"UIDPLUS" in caps


def test_two_sessions_flags_and_expunge(five):
    server, c = five
    c2 = server.login("testuser1")
    select(c2)
    assert c.command("STORE 2 +FLAGS.SILENT (\\Seen Label)").ok
    r = c2.command("NOOP")
    assert flags_of(r) == {2: {"\\Seen", "Label"}}, r
    assert [l for l in r.untagged if l.startswith(b"* FLAGS ")], r

    assert c.command("STORE 1,4 +FLAGS.SILENT (\\Deleted)").ok
    assert expunges(c.command("EXPUNGE")) == [1, 3]
    # never during FETCH, STORE or SEARCH (RFC 9051 7.5.1)
    r = c2.command("FETCH 1:5 UID")
    assert expunges(r) == [], r
    r = c2.command("STORE 5 +FLAGS (\\Answered)")
    assert expunges(r) == [], r
    # UID commands and NOOP may send them
    r = c2.command("NOOP")
    assert expunges(r) == [1, 3], r
    r = c2.command("FETCH 1:* UID")
    assert sorted(int(i["UID"]) for i in r.fetches().values()) == [2, 3, 5]


def test_maildir_flags_by_other_writer(five):
    """A flag change by another Maildir client reaches the session."""
    server, c = five
    cur = server.maildir("testuser1") / "cur"
    f = sorted(cur.iterdir())[0]
    base = f.name.split(":")[0]
    f.rename(cur / (base + ":2,FS"))
    r = c.command("NOOP")
    assert flags_of(r) == {1: {"\\Flagged", "\\Seen"}}, r
