"""COPY / UID COPY with COPYUID (RFC 9051 6.4.7, RFC 4315 3) and MOVE /
UID MOVE (RFC 6851): flags, keywords and INTERNALDATE kept, TRYCREATE,
durable before OK, the untagged COPYUID and EXPUNGEs of MOVE."""

import os
import re

import pytest

DATES = ["01-Jan-2020 10:00:00 +0000", "02-Feb-2021 11:30:00 +0000",
         "03-Mar-2022 12:45:00 +0000"]


def msg(n):
    return (f"From: a@example.org\r\nSubject: message {n}\r\n\r\n"
            f"Body {n}.\r\n").encode()


def append_dated(c, n, date, flags):
    tag = c.next_tag()
    body = msg(n)
    c.send(f"{tag} APPEND INBOX ({' '.join(flags)}) \"{date}\" "
           f"{{{len(body)}+}}\r\n".encode() + body + b"\r\n")
    r = c.read_tagged(tag)
    assert r.ok, r


@pytest.fixture
def three(moat_server):
    c = moat_server.login("testuser1")
    append_dated(c, 1, DATES[0], ["\\Seen"])
    append_dated(c, 2, DATES[1], ["\\Flagged", "Work"])
    append_dated(c, 3, DATES[2], ["\\Deleted"])
    assert c.command("SELECT INBOX").ok
    return moat_server, c


def copyuid(code):
    m = re.match(r"COPYUID (\d+) (\S+) (\S+)$", code or "")
    assert m, code
    return int(m.group(1)), m.group(2), m.group(3)


def uidset(s):
    out = []
    for part in s.split(","):
        a, _, b = part.partition(":")
        out += list(range(int(a), int(b or a) + 1))
    return out


def by_uid(r):
    return {int(i["UID"]): i for i in r.fetches().values()}


def user_flags(flags):
    return {f for f in flags if f.lower() != "\\recent"}


def test_copy_to_inbox_keeps_flags_and_date(three):
    server, c = three
    uidvalidity = int(re.search(rb"UIDVALIDITY (\d+)",
                                b" ".join(c.command("SELECT INBOX").untagged)).group(1))
    r = c.command("COPY 1:2 INBOX")
    assert r.ok, r
    v, src, dst = copyuid(r.code)
    assert v == uidvalidity
    assert uidset(src) == [1, 2] and uidset(dst) == [4, 5]
    # the copies are already visible: EXISTS before the tagged OK
    assert r.untagged_with("EXISTS") == [b"* 5 EXISTS"], r
    r = c.command("UID FETCH 1:* (FLAGS INTERNALDATE BODY.PEEK[])")
    f = by_uid(r)
    for old, new in ((1, 4), (2, 5)):
        assert user_flags(f[new]["FLAGS"]) == user_flags(f[old]["FLAGS"])
        assert f[new]["INTERNALDATE"] == f[old]["INTERNALDATE"]
        assert f[new]["BODY[]"] == f[old]["BODY[]"]
    assert "Work" in f[5]["FLAGS"]
    assert f[4]["INTERNALDATE"] == DATES[0].encode()
    # hard links on one file system
    cur = server.maildir("testuser1") / "cur"
    assert sorted(os.stat(p).st_nlink for p in cur.iterdir()) == [1, 2, 2, 2, 2]


def test_uid_copy_and_missing_uids(three):
    server, c = three
    r = c.command("UID COPY 3,1,99 INBOX")
    assert r.ok, r
    _, src, dst = copyuid(r.code)
    assert uidset(src) == [1, 3] and uidset(dst) == [4, 5]
    r = c.command("UID COPY 50:60 INBOX")
    assert r.ok and r.code is None, r


def test_copy_trycreate_and_errors(three):
    server, c = three
    r = c.command("COPY 1 Nonexistent")
    assert r.status == "NO" and r.code == "TRYCREATE", r
    r = c.command("MOVE 1 Nonexistent")
    assert r.status == "NO" and r.code == "TRYCREATE", r
    assert c.command("NOOP").untagged_with("EXPUNGE") == []
    for bad in ("COPY", "COPY 1", "COPY x INBOX", "COPY 1 INBOX extra",
                "COPY 7 INBOX", "MOVE 1:* (INBOX)", "UID MOVE"):
        r = c.command(bad)
        assert r.status == "BAD", (bad, r)
    c2 = server.login("testuser1")
    assert c2.command("COPY 1 INBOX").status == "BAD"   # nothing selected


def test_move_rfc6851(three):
    server, c = three
    caps = c.command("CAPABILITY").untagged[0].split()
    assert b"MOVE" in caps
    r = c.command("MOVE 2:3 INBOX")
    assert r.ok, r
    # "* OK [COPYUID ...]" first, then the EXPUNGEs, then the tagged OK
    lines = r.untagged
    i_copy = next(i for i, l in enumerate(lines) if l.startswith(b"* OK [COPYUID "))
    i_exp = [i for i, l in enumerate(lines) if l.endswith(b" EXPUNGE")]
    assert i_exp and all(i > i_copy for i in i_exp), r
    assert [l for l in lines if l.endswith(b" EXPUNGE")] == [b"* 2 EXPUNGE", b"* 2 EXPUNGE"]
    code = re.match(rb"^\* OK \[([^\]]*)\]", lines[i_copy]).group(1).decode()
    _, src, dst = copyuid(code)
    assert uidset(src) == [2, 3] and uidset(dst) == [4, 5]
    r = c.command("UID FETCH 1:* (FLAGS)")
    f = by_uid(r)
    assert sorted(f) == [1, 4, 5]
    assert user_flags(f[4]["FLAGS"]) == {"\\Flagged", "Work"}
    assert user_flags(f[5]["FLAGS"]) == {"\\Deleted"}


def test_uid_move_other_session(three):
    server, c = three
    c2 = server.login("testuser1")
    assert c2.command("SELECT INBOX").ok
    r = c.command("UID MOVE 1 INBOX")
    assert r.ok, r
    assert [l for l in r.untagged if l.endswith(b" EXPUNGE")] == [b"* 1 EXPUNGE"]
    # the other session: no EXPUNGE during FETCH, then at NOOP
    r = c2.command("FETCH 1:3 UID")
    assert r.untagged_with("EXPUNGE") == [], r
    # the new copy may be announced here already (EXISTS is allowed)
    assert r.untagged_with("EXISTS") == [b"* 4 EXISTS"], r
    r = c2.command("NOOP")
    assert r.untagged_with("EXPUNGE") == [b"* 1 EXPUNGE"], r
    r = c2.command("UID FETCH 1:* UID")
    assert sorted(int(i["UID"]) for i in r.fetches().values()) == [2, 3, 4]


def test_move_readonly(three):
    server, c = three
    assert c.command("EXAMINE INBOX").ok
    r = c.command("MOVE 1 INBOX")
    assert r.status == "NO", r
    # COPY from a read-only mailbox is fine
    r = c.command("COPY 1 INBOX")
    assert r.ok, r


def test_copy_to_folder(three):
    """To another folder of the user, once folders exist (Maildir++)."""
    server, c = three
    md = server.maildir("testuser1")
    for sub in ("cur", "new", "tmp"):
        (md / ".Archive" / sub).mkdir(parents=True, exist_ok=True)
    server.chown_home(server.users["testuser1"])
    r = c.command("COPY 2 Archive")
    if r.code == "TRYCREATE":
        pytest.skip("folders other than INBOX are not supported yet")
    assert r.ok, r
    v, src, dst = copyuid(r.code)
    assert uidset(src) == [2] and uidset(dst) == [1]
    r = c.command("MOVE 1 Archive")
    assert r.ok, r
    assert c.command("SELECT Archive").ok
    r = c.command("UID FETCH 1:* (FLAGS BODY.PEEK[])")
    f = by_uid(r)
    assert f[1]["BODY[]"] == msg(2) and f[2]["BODY[]"] == msg(1)
    assert "Work" in f[1]["FLAGS"]


def test_copy_and_move_to_non_ascii_mailbox(three):
    server, c = three
    # "Entwürfe" in modified UTF-7 (RFC 3501 5.1.3)
    assert c.command('CREATE "Entw&APw-rfe"').ok
    r = c.command('COPY 1 "Entw&APw-rfe"')
    assert r.ok and r.code.startswith("COPYUID"), r
    r = c.command('MOVE 2 "Entw&APw-rfe"')
    assert r.ok, r
    r = c.command('STATUS "Entw&APw-rfe" (MESSAGES)')
    assert r.ok and any(b"MESSAGES 2" in line for line in r.untagged), r
