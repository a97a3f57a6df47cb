"""SORT and THREAD (RFC 5256) with SORT=DISPLAY (RFC 5957) and ESORT
(RFC 5267 3.1): every sort key, REVERSE, several keys, UID SORT, both
threading algorithms on small crafted messages with known answers,
charset and syntax errors, and keys served from the cache."""

import os
import re
import time

import pytest

DAY = 86400
BASE = 1704888000   # 2024-01-10 12:00 UTC


def msg(headers, body=b"body\r\n"):
    return b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body


# (internal date offset in days, content). Sent dates (UTC):
# 1 Jan 8 09:00, 2 Jan 9 08:00, 3 Jan 7 12:00, 4 Jan 10 13:00,
# 5 none (INTERNALDATE Jan 14 12:00), 6 Jan 11 09:00.
MESSAGES = [
    (2, msg([b"From: Alice Adams <alice@example.org>",
             b"To: Zoe <zoe@example.org>", b"Cc: carl@example.org",
             b"Subject: Project plan",
             b"Date: Mon, 8 Jan 2024 09:00:00 +0000",
             b"Message-ID: <p1@example.org>"], b"x" * 100 + b"\r\n")),
    (0, msg([b"From: bob@example.org",
             b"To: Alice Adams <alice@example.org>",
             b"Subject: Re: Project plan",
             b"Date: Tue, 9 Jan 2024 09:00:00 +0100",
             b"Message-ID: <p2@example.org>",
             b"In-Reply-To: <p1@example.org>",
             b"References: <p1@example.org>"], b"x" * 300 + b"\r\n")),
    (1, msg([b"From: =?UTF-8?Q?=C3=89mile?= <emile@example.org>",
             b"To: Aaron <yves@example.org>", b"Cc: Anna <anna@example.org>",
             b"Subject: [list] Lunch",
             b"Date: Sun, 7 Jan 2024 12:00:00 +0000",
             b"Message-ID: <l1@example.org>"], b"x" * 50 + b"\r\n")),
    (5, msg([b"From: Carl <zcarl@example.org>", b"To: bob@example.org",
             b"Subject: Fwd: Lunch",
             b"Date: Wed, 10 Jan 2024 08:00:00 -0500",
             b"Message-ID: <l2@example.org>"], b"x" * 1000 + b"\r\n")),
    (4, msg([b"From: dave@example.org",
             b"Message-ID: <x@example.org>",
             b"References: <p1@example.org>\r\n <p2@example.org>"],
            b"x" * 10 + b"\r\n")),
    (3, msg([b"From: Alice Adams <alice@example.org>",
             b"To: Zoe <zoe@example.org>", b"Subject: Project plan",
             b"Date: Thu, 11 Jan 2024 09:00:00 +0000",
             b"Message-ID: <p1@example.org>"], b"x" * 100 + b"\r\n")),
]


def place(server, messages=MESSAGES, user="testuser1"):
    md = server.maildir(user)
    for i, (days, content) in enumerate(messages):
        path = md / "cur" / f"{1704800000 + i}.M{i}P100.moattest:2,S"
        path.write_bytes(content)
        t = BASE + days * DAY
        os.utime(path, (t, t))
    server.chown_home(server.users[user])


@pytest.fixture
def box(moat_server):
    place(moat_server)
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    return moat_server, c


def sort_nums(r, word="SORT"):
    lines = r.untagged_with(word)
    assert len(lines) == 1, r
    return [int(n) for n in lines[0].split()[2:]]


def sort(c, program):
    r = c.command(f"SORT {program}")
    assert r.ok, (program, r)
    return sort_nums(r)


def thread(c, args):
    r = c.command(f"THREAD {args}")
    assert r.ok, (args, r)
    lines = r.untagged_with("THREAD")
    assert len(lines) == 1, r
    return lines[0].decode()[len("* THREAD"):].strip()


def uids(c):
    r = c.command("FETCH 1:* (UID)")
    return {seq: int(items["UID"]) for seq, items in r.fetches().items()}


def test_capability(box):
    server, c = box
    r = c.command("CAPABILITY")
    caps = r.untagged_with("CAPABILITY")[0].split()
    for cap in (b"SORT", b"SORT=DISPLAY", b"ESORT", b"THREAD=REFERENCES",
                b"THREAD=ORDEREDSUBJECT"):
        assert cap in caps, r


def test_each_key(box):
    server, c = box
    assert sort(c, "(ARRIVAL) UTF-8 ALL") == [2, 3, 1, 6, 5, 4]
    assert sort(c, "(DATE) UTF-8 ALL") == [3, 1, 2, 4, 6, 5]
    assert sort(c, "(SUBJECT) UTF-8 ALL") == [5, 3, 4, 1, 2, 6]
    assert sort(c, "(FROM) UTF-8 ALL") == [1, 6, 2, 5, 3, 4]
    assert sort(c, "(TO) UTF-8 ALL") == [5, 2, 4, 3, 1, 6]
    assert sort(c, "(CC) UTF-8 ALL") == [2, 4, 5, 6, 3, 1]
    assert sort(c, "(DISPLAYFROM) UTF-8 ALL") == [1, 6, 2, 4, 5, 3]
    assert sort(c, "(DISPLAYTO) UTF-8 ALL") == [5, 3, 2, 4, 1, 6]
    sizes = [len(m[1]) for m in MESSAGES]
    expect = sorted(range(1, 7), key=lambda n: (sizes[n - 1], n))
    assert sort(c, "(SIZE) UTF-8 ALL") == expect
    # lower case keys and charset
    assert sort(c, "(date) utf-8 all") == [3, 1, 2, 4, 6, 5]


def test_reverse_and_several_keys(box):
    server, c = box
    assert sort(c, "(REVERSE DATE) UTF-8 ALL") == [5, 6, 4, 2, 1, 3]
    # REVERSE does not reverse the implicit sequence order
    assert sort(c, "(REVERSE SUBJECT) UTF-8 ALL") == [1, 2, 6, 3, 4, 5]
    assert sort(c, "(SUBJECT REVERSE DATE) US-ASCII ALL") == \
        [5, 4, 3, 6, 2, 1]
    assert sort(c, "(FROM REVERSE DATE) UTF-8 ALL") == [6, 1, 2, 5, 3, 4]
    assert sort(c, "(CC SUBJECT DATE) UTF-8 ALL") == [5, 4, 2, 6, 3, 1]
    sizes = [len(m[1]) for m in MESSAGES]
    expect = sorted(range(1, 7), key=lambda n: (-sizes[n - 1], n))
    assert sort(c, "(REVERSE SIZE) UTF-8 ALL") == expect


def test_search_criteria_and_uid(box):
    server, c = box
    assert sort(c, "(DATE) UTF-8 FROM alice") == [1, 6]
    assert sort(c, "(SUBJECT) US-ASCII 2:4") == [3, 4, 2]
    assert sort(c, '(DATE) UTF-8 TEXT "not in any message"') == []
    r = c.command('SORT (DATE) UTF-8 SUBJECT "not there"')
    assert r.ok and r.untagged_with("SORT") == [b"* SORT"], r
    u = uids(c)
    r = c.command("UID SORT (DATE) UTF-8 ALL")
    assert r.ok and sort_nums(r) == [u[n] for n in (3, 1, 2, 4, 6, 5)], r
    r = c.command(f"UID SORT (REVERSE ARRIVAL) UTF-8 UID {u[2]}:{u[4]}")
    assert r.ok and sort_nums(r) == [u[4], u[3], u[2]], r


def test_esort(box):
    server, c = box
    u = uids(c)
    r = c.command("SORT RETURN () (ARRIVAL) UTF-8 ALL")
    assert r.ok, r
    assert r.untagged_with("ESEARCH")[0].decode().endswith(
        ") ALL 2:3,1,6,5,4"), r
    r = c.command("UID SORT RETURN (MIN MAX COUNT) (DATE) UTF-8 ALL")
    line = r.untagged_with("ESEARCH")[0].decode()
    assert re.search(rf"\) UID MIN {u[3]} MAX {u[5]} COUNT 6$", line), r
    r = c.command("SORT RETURN (COUNT) (DATE) UTF-8 FROM nobody")
    assert r.untagged_with("ESEARCH")[0].decode().endswith(") COUNT 0"), r
    # SAVE (RFC 5182) then "$"
    r = c.command("SORT RETURN (SAVE) (DATE) UTF-8 FROM alice")
    assert r.ok and not r.untagged_with("ESEARCH"), r
    r = c.command("SEARCH $")
    assert r.ok and r.untagged_with("SEARCH") == [b"* SEARCH 1 6"], r


def test_thread_references(box):
    server, c = box
    assert thread(c, "REFERENCES UTF-8 ALL") == "(3 4)((1 2 5)(6))"
    assert thread(c, "REFERENCES US-ASCII NOT FROM dave") == \
        "(3 4)((1 2)(6))"
    u = uids(c)
    r = c.command("UID THREAD REFERENCES US-ASCII 1:2")
    assert r.ok, r
    assert r.untagged_with("THREAD")[0].decode() == \
        f"* THREAD ({u[1]} {u[2]})"
    r = c.command('THREAD REFERENCES UTF-8 SUBJECT "nothing like it"')
    assert r.ok and r.untagged_with("THREAD") == [b"* THREAD"], r


def test_thread_orderedsubject(box):
    server, c = box
    assert thread(c, "ORDEREDSUBJECT UTF-8 ALL") == "(3 4)(1 (2)(6))(5)"
    assert thread(c, "orderedsubject utf-8 1:3") == "(3)(1 2)"


def test_errors(box):
    server, c = box
    for cmd in ("SORT (DATE) KOI8-R ALL", "THREAD REFERENCES X-UNKNOWN ALL",
                "UID SORT (SUBJECT) ISO-8859-1 ALL"):
        r = c.command(cmd)
        assert r.status == "NO" and b"[BADCHARSET" in r.line, (cmd, r)
    for cmd in ("SORT (FOO) UTF-8 ALL", "SORT DATE UTF-8 ALL",
                "SORT (DATE) UTF-8", "SORT () UTF-8 ALL",
                "SORT (REVERSE) UTF-8 ALL", "SORT (DATE REVERSE) UTF-8 ALL",
                "SORT (REVERSE REVERSE DATE) UTF-8 ALL",
                "SORT (DATE) UTF-8 FOO", "SORT", "SORT RETURN (BOGUS) "
                "(DATE) UTF-8 ALL", "THREAD FOO UTF-8 ALL",
                "THREAD REFERENCES UTF-8", "THREAD (REFERENCES) UTF-8 ALL",
                "THREAD"):
        r = c.command(cmd)
        assert r.status == "BAD", (cmd, r)
    assert c.command("CLOSE").ok
    r = c.command("SORT (DATE) UTF-8 ALL")
    assert r.status in ("BAD", "NO"), r
    r = c.command("THREAD REFERENCES UTF-8 ALL")
    assert r.status in ("BAD", "NO"), r


def message_files(server):
    md = server.maildir("testuser1")
    return [p for d in ("cur", "new") for p in (md / d).iterdir()]


def test_keys_from_cache(box):
    """The second SORT and THREAD read no message file: with the files
    unreadable they answer the same."""
    server, c = box
    programs = ["SORT (SUBJECT) UTF-8 ALL", "SORT (DISPLAYFROM) UTF-8 ALL",
                "SORT (DATE) UTF-8 ALL", "THREAD REFERENCES UTF-8 ALL",
                "THREAD ORDEREDSUBJECT UTF-8 ALL"]
    first = [c.command(p).untagged for p in programs]
    files = message_files(server)
    for p in files:
        os.chmod(p, 0)
    try:
        c2 = server.login("testuser1")
        assert c2.command("EXAMINE INBOX").ok
        second = [c2.command(p).untagged for p in programs]
    finally:
        for p in files:
            os.chmod(p, 0o600)
    assert first == second
