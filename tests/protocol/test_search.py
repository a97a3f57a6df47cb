"""SEARCH and UID SEARCH (RFC 3501 / RFC 9051 6.4.4), ESEARCH RETURN options
(RFC 4731), SEARCHRES "$" (RFC 5182) and OLDER/YOUNGER (RFC 5032)."""

import base64
import email
import email.policy
import os
import pathlib
import re
import time

import pytest

from moatserver import REPO

CORPUS = pathlib.Path(REPO) / ".." / "shared" / "corpus" / "mime"

DAY = 86400
# 2024-01-10 12:00 UTC: internal dates are whole days around it, at noon
# so the server's zone does not move them to another day.
BASE = 1704888000


def msg(frm, subject, body, date="Wed, 10 Jan 2024 10:00:00 +0000", extra=b""):
    return (b"From: " + frm + b"\r\nTo: team@example.org\r\n"
            b"Subject: " + subject + b"\r\nDate: " + date.encode() + b"\r\n"
            + extra + b"\r\n" + body)


UTF8_BODY = base64.b64encode("Grüße aus München, übrigens.\r\n".encode())
MESSAGES = [
    # (flags suffix, internal date offset in days, content)
    ("FS", -9, msg(b"John Smith <smith@example.org>", b"Quarterly report",
                   b"Numbers are up.\r\n", "Mon, 1 Jan 2024 09:00:00 +0000")),
    ("F", 0, msg(b"Ann Jones <jones@example.org>", b"Lunch?",
                 b"Are you free at noon?\r\n")),
    ("S", 1, msg(b"=?ISO-8859-1?Q?Ren=E9e_M=FCller?= <renee@example.org>",
                 b"=?UTF-8?B?w5xiZXIgZGFzIFByb2pla3Q=?=",
                 b"Kurze Notiz.\r\n", "Thu, 11 Jan 2024 23:30:00 -0800")),
    ("", 2, msg(b"news@example.org", b"Weekly digest", UTF8_BODY + b"\r\n",
                extra=b"MIME-Version: 1.0\r\n"
                      b"Content-Type: text/plain; charset=utf-8\r\n"
                      b"Content-Transfer-Encoding: base64\r\n")),
    ("RS", 3, msg(b"Smith <smith@example.org>", b"Re: Quarterly report",
                  b"Thanks! " + b"x" * 3000 + b"\r\n")),
]


def place(server, messages=MESSAGES, user="testuser1"):
    md = server.maildir(user)
    for i, (flags, days, content) in enumerate(messages):
        path = md / "cur" / f"{1704800000 + i}.M{i}P100.moattest:2,{flags}"
        path.write_bytes(content)
        t = BASE + days * DAY
        os.utime(path, (t, t))
    server.chown_home(server.users[user])


@pytest.fixture
def box(moat_server):
    place(moat_server)
    c = moat_server.login("testuser1")
    r = c.command("SELECT INBOX")
    assert r.ok, r
    return moat_server, c


def search_nums(r):
    """The numbers of the one untagged SEARCH response."""
    lines = r.untagged_with("SEARCH")
    assert len(lines) == 1, r
    return [int(n) for n in lines[0].split()[2:]]


def esearch(r):
    lines = [l for l in r.untagged if l.upper().startswith(b"* ESEARCH")]
    assert len(lines) == 1, r
    return lines[0].decode()


def check(c, program, expected):
    r = c.command(f"SEARCH {program}")
    assert r.ok, (program, r)
    assert search_nums(r) == expected, (program, r)


# ---- RFC 3501 6.4.4 examples ------------------------------------------------

def test_rfc3501_examples(box):
    server, c = box
    # FLAGGED SINCE 1-Feb-1994 NOT FROM "Smith": message 2 only
    check(c, 'FLAGGED SINCE 1-Feb-1994 NOT FROM "Smith"', [2])
    r = c.command('SEARCH TEXT "string not in mailbox"')
    assert r.ok and r.untagged_with("SEARCH") == [b"* SEARCH"], r
    # the literal example, CHARSET UTF-8 and 8-bit text
    tag = c.next_tag()
    word = "München".encode()
    c.send(f"{tag} SEARCH CHARSET UTF-8 TEXT {{{len(word)}}}\r\n".encode())
    assert c.read_tagged(tag).status == "+"
    r = c.continue_with(tag, word + b"\r\n")
    assert r.ok and search_nums(r) == [4], r


def test_flag_keys(box):
    server, c = box
    check(c, "ALL", [1, 2, 3, 4, 5])
    check(c, "FLAGGED", [1, 2])
    check(c, "UNFLAGGED", [3, 4, 5])
    check(c, "SEEN", [1, 3, 5])
    check(c, "UNSEEN", [2, 4])
    check(c, "ANSWERED", [5])
    check(c, "UNANSWERED", [1, 2, 3, 4])
    check(c, "DELETED", [])
    check(c, "UNDELETED", [1, 2, 3, 4, 5])
    check(c, "DRAFT", [])
    check(c, "UNDRAFT", [1, 2, 3, 4, 5])
    # \Recent belongs to one session: whatever it is, OLD is its complement
    recent = search_nums(c.command("SEARCH RECENT"))
    old = search_nums(c.command("SEARCH OLD"))
    assert sorted(recent + old) == [1, 2, 3, 4, 5]
    new = search_nums(c.command("SEARCH NEW"))
    assert new == [n for n in recent if n in (2, 4)]
    check(c, "KEYWORD $Junk", [])
    check(c, "UNKEYWORD $Junk", [1, 2, 3, 4, 5])


def test_sets_and_logic(box):
    server, c = box
    check(c, "2:4", [2, 3, 4])
    check(c, "*", [5])
    check(c, "4:*", [4, 5])
    check(c, "1,3,5", [1, 3, 5])
    check(c, "UID 2:3", [2, 3])
    check(c, "UID 4:*", [4, 5])
    check(c, "UID 999", [])
    check(c, "NOT 2:4", [1, 5])
    check(c, "OR 1 5", [1, 5])
    check(c, "OR SEEN FLAGGED", [1, 2, 3, 5])
    check(c, "(SEEN FLAGGED)", [1])
    check(c, "NOT (SEEN FLAGGED)", [2, 3, 4, 5])
    check(c, "OR (1 SEEN) (NOT SEEN 4:5)", [1, 4])
    r = c.command("UID SEARCH 2:3")
    assert r.ok and search_nums(r) == [2, 3], r


def test_sizes_and_dates(box):
    server, c = box
    check(c, "LARGER 1000", [5])
    sizes = [len(m[2]) for m in MESSAGES]
    check(c, f"SMALLER {min(sizes)}", [])
    check(c, f"SMALLER {sizes[1] + 1}",
          [i + 1 for i, s in enumerate(sizes) if s <= sizes[1]])
    check(c, f"LARGER {sizes[1]}",
          [i + 1 for i, s in enumerate(sizes) if s > sizes[1]])
    check(c, "BEFORE 10-Jan-2024", [1])
    check(c, "ON 10-Jan-2024", [2])
    check(c, 'ON "11-Jan-2024"', [3])
    check(c, "SINCE 12-Jan-2024", [4, 5])
    # Date: header, in its own zone (-0800 keeps message 3 on the 11th)
    check(c, "SENTON 1-Jan-2024", [1])
    check(c, "SENTON 11-Jan-2024", [3])
    check(c, "SENTBEFORE 10-Jan-2024", [1])
    check(c, "SENTSINCE 11-Jan-2024", [3])
    # WITHIN: internal dates are in January 2024, long ago
    check(c, "YOUNGER 3600", [])
    check(c, "OLDER 3600", [1, 2, 3, 4, 5])


def test_header_and_text_keys(box):
    server, c = box
    check(c, 'FROM "smith"', [1, 5])
    check(c, 'FROM "SMITH@EXAMPLE.ORG"', [1, 5])
    check(c, "TO team", [1, 2, 3, 4, 5])
    check(c, "CC team", [])
    check(c, "BCC team", [])
    check(c, 'SUBJECT "quarterly REPORT"', [1, 5])
    check(c, 'HEADER Subject "lunch"', [2])
    check(c, 'HEADER X-Missing ""', [])
    check(c, 'HEADER Date ""', [1, 2, 3, 4, 5])
    # RFC 2047 encoded words are decoded; matching ignores case
    r = c.command('SEARCH CHARSET UTF-8 FROM "RENÉE MÜLLER"'.encode())
    assert r.ok and search_nums(r) == [3], r
    r = c.command('SEARCH CHARSET ISO-8859-1 SUBJECT "über"'.encode("latin-1"))
    assert r.ok and search_nums(r) == [3], r
    # base64 UTF-8 body
    r = c.command('SEARCH CHARSET UTF-8 BODY "GRÜSSE"'.encode())
    assert r.ok and search_nums(r) == [], r
    r = c.command('SEARCH CHARSET UTF-8 BODY "GRÜßE aus"'.encode())
    assert r.ok and search_nums(r) == [4], r
    check(c, "BODY noon", [2])
    check(c, "BODY lunch", [])
    check(c, "TEXT lunch", [2])
    check(c, 'TEXT "x-missing"', [])
    check(c, "OR BODY noon SUBJECT digest", [2, 4])
    # BODY never reads the header, TEXT does, also next to BODY keys and
    # after another TEXT key matched in an earlier field
    check(c, "BODY smith", [])
    check(c, "BODY noon TEXT lunch", [2])
    check(c, "OR BODY lunch TEXT lunch", [2])
    check(c, "TEXT jones TEXT lunch", [2])
    check(c, "TEXT lunch TEXT jones", [2])
    check(c, 'TEXT "subject: lunch"', [2])
    check(c, "TEXT smith BODY thanks", [5])


# ---- errors -------------------------------------------------------------------

@pytest.mark.parametrize("program", [
    "", "FOO", "SUBJECT", "BEFORE 1-Foo-2024", "BEFORE 2024-01-01",
    "LARGER x", "UID", "UID a:b", "0", "NOT", "OR SEEN", "()",
    "OLDER 0", "CHARSET", "CHARSET UTF-8", "RETURN (FOO) ALL",
    "RETURN ALL", "SEEN CHARSET UTF-8",
])
def test_syntax_errors_are_bad(box, program):
    server, c = box
    r = c.command(f"SEARCH {program}".rstrip())
    assert r.status == "BAD", (program, r)
    assert not r.untagged_with("SEARCH"), r
    # the session goes on
    assert c.command("NOOP").ok


def test_badcharset(box):
    server, c = box
    r = c.command("SEARCH CHARSET X-NO-SUCH-CHARSET TEXT x")
    assert r.status == "NO", r
    assert r.code == "BADCHARSET (US-ASCII UTF-8)", r
    for cs in ("US-ASCII", "utf-8", "ISO-8859-1", "KOI8-R", "windows-1252"):
        r = c.command(f"SEARCH CHARSET {cs} TEXT report")
        assert r.ok and search_nums(r) == [1, 5], (cs, r)


def test_search_needs_selected(moat_server):
    c = moat_server.login("testuser1")
    r = c.command("SEARCH ALL")
    assert r.status in ("BAD", "NO"), r


# ---- ESEARCH (RFC 4731) ---------------------------------------------------------

def test_esearch_return(box):
    server, c = box
    r = c.command("SEARCH RETURN (MIN MAX COUNT ALL) SEEN", tag="e1")
    assert r.ok, r
    line = esearch(r)
    assert line.startswith('* ESEARCH (TAG "e1")'), line
    items = line.split(")", 1)[1].split()
    got = dict(zip(items[::2], items[1::2]))
    assert got == {"MIN": "1", "MAX": "5", "COUNT": "3", "ALL": "1,3,5"}, line
    assert not r.untagged_with("SEARCH"), r

    r = c.command("UID SEARCH RETURN () ALL", tag="e2")
    assert esearch(r) == '* ESEARCH (TAG "e2") UID ALL 1:5', r
    r = c.command("SEARCH RETURN (COUNT) FLAGGED", tag="e3")
    assert esearch(r) == '* ESEARCH (TAG "e3") COUNT 2', r
    # nothing found: only COUNT is returned
    r = c.command("SEARCH RETURN (MIN MAX ALL COUNT) DELETED", tag="e4")
    assert esearch(r) == '* ESEARCH (TAG "e4") COUNT 0', r
    r = c.command("SEARCH RETURN (MIN) 2:4", tag="e5")
    assert esearch(r) == '* ESEARCH (TAG "e5") MIN 2', r
    r = c.command("SEARCH RETURN (ALL) 1,2,4:5", tag="e6")
    assert esearch(r) == '* ESEARCH (TAG "e6") ALL 1:2,4:5', r


# ---- SEARCHRES (RFC 5182) ---------------------------------------------------------

def test_searchres(box):
    server, c = box
    r = c.command("SEARCH RETURN (SAVE) FLAGGED")
    assert r.ok, r
    # SAVE alone: no ESEARCH (and no SEARCH) response
    assert not r.untagged_with("ESEARCH") and not r.untagged_with("SEARCH"), r
    check(c, "$", [1, 2])
    check(c, "NOT $", [3, 4, 5])
    check(c, "OR $ ANSWERED", [1, 2, 5])
    r = c.command("UID SEARCH UID $ SEEN")
    assert r.ok and search_nums(r) == [1], r
    # "$" in a SEARCH that saves uses the old value
    r = c.command("SEARCH RETURN (SAVE COUNT) OR $ 5", tag="s1")
    assert esearch(r) == '* ESEARCH (TAG "s1") COUNT 3', r
    check(c, "$", [1, 2, 5])
    # MIN and MAX without ALL/COUNT save only those
    r = c.command("SEARCH RETURN (SAVE MIN MAX) SEEN", tag="s2")
    assert esearch(r) == '* ESEARCH (TAG "s2") MIN 1 MAX 5', r
    check(c, "$", [1, 5])
    # a failed SEARCH ... SAVE empties "$"
    r = c.command("SEARCH RETURN (SAVE) FOO")
    assert r.status == "BAD", r
    check(c, "$", [])
    # and selecting again forgets it
    assert c.command("SEARCH RETURN (SAVE) ALL").ok
    check(c, "$", [1, 2, 3, 4, 5])
    assert c.command("SELECT INBOX").ok
    check(c, "$", [])


def test_searchres_fetch(box):
    """FETCH and UID FETCH take "$" (imap_search_seqset())."""
    server, c = box
    r = c.command("FETCH $ (UID)")
    assert r.ok and r.fetches() == {}, r
    assert c.command("UID SEARCH RETURN (SAVE) UID 2,4:5 NOT 5").ok
    r = c.command("FETCH $ (UID)")
    assert r.ok and sorted(r.fetches()) == [2, 4], r
    r = c.command("UID FETCH $ (FLAGS)")
    assert r.ok and sorted(r.fetches()) == [2, 4], r


# ---- sessions --------------------------------------------------------------------

def test_no_expunge_during_search(box):
    server, c = box
    c2 = server.login("testuser1")
    assert c2.command("SELECT INBOX").ok
    r = c2.command("STORE 2 +FLAGS.SILENT (\\Deleted)")
    if r.status != "OK":
        pytest.skip("STORE not available")
    r = c2.command("EXPUNGE")
    if r.status != "OK":
        pytest.skip("EXPUNGE not available")
    r = c.command("SEARCH ALL")
    assert r.ok, r
    assert not r.untagged_with("EXPUNGE"), r
    # the view keeps its numbers until an EXPUNGE may be sent
    assert search_nums(r) in ([1, 2, 3, 4, 5], [1, 3, 4, 5]), r
    r = c.command("NOOP")
    assert r.untagged_with("EXPUNGE"), r
    check(c, "ALL", [1, 2, 3, 4])


def test_big_search_is_sliced(moat_server):
    """A long body search on one connection must not hold up another."""
    body = (b"lorem ipsum dolor sit amet " * 40 + b"\r\n") * 150
    many = [("", 0, msg(b"bulk@example.org", f"bulk {i}".encode(),
                        body + (b"needle\r\n" if i % 500 == 7 else b"")))
            for i in range(1500)]
    place(moat_server, many)
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    c2 = moat_server.login("testuser1")
    assert c2.command("SELECT INBOX").ok

    start = time.monotonic()
    c.send(b"b1 SEARCH BODY needle\r\n")
    time.sleep(0.05)
    t0 = time.monotonic()
    assert c2.command("NOOP").ok
    noop_time = time.monotonic() - t0
    r = c.read_tagged("b1")
    total = time.monotonic() - start
    assert r.ok and search_nums(r) == [8, 508, 1008], r
    if total > 1.0:
        # the NOOP was answered between slices, not after the search
        assert noop_time < total / 2, (noop_time, total)


def test_long_results(moat_server):
    """Answers longer than one output piece (16 KiB) arrive whole."""
    n = 4000
    place(moat_server, [("S" if i % 3 == 0 else "", 0,
                         msg(b"a@example.org", b"tiny", b"x\r\n"))
                        for i in range(n)])
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    check(c, "ALL", list(range(1, n + 1)))
    check(c, "SEEN", list(range(1, n + 1, 3)))
    r = c.command("UID SEARCH RETURN (ALL COUNT) NOT SEEN", tag="l1")
    line = esearch(r)
    head = '* ESEARCH (TAG "l1") UID COUNT %d ALL ' % (n - len(range(1, n + 1, 3)))
    assert line.startswith(head), line[:80]
    expect = ",".join(f"{i}:{i + 1}" for i in range(2, n + 1, 3) if i + 1 <= n)
    assert line[len(head):] == expect, line[-80:]
    r = c.command("SEARCH RETURN (ALL) OR 1:1000 2000:*", tag="l2")
    assert esearch(r) == '* ESEARCH (TAG "l2") ALL 1:1000,2000:4000', r


# ---- the MIME corpus -------------------------------------------------------------

def corpus_files(limit=400):
    files = sorted(p for p in CORPUS.rglob("*.eml") if p.is_file())
    return files[:limit]


def decoded_subject(data):
    m = email.message_from_bytes(data, policy=email.policy.default)
    if m.defects:
        return None
    try:
        subject = str(m["subject"] or "")
    except Exception:
        return None
    return subject


def plain_body(data):
    m = email.message_from_bytes(data, policy=email.policy.default)
    # a malformed header (no blank line, ...) is where servers differ
    if m.defects or m.is_multipart() or m.get_content_type() != "text/plain":
        return None
    try:
        return m.get_content()
    except Exception:
        return None


def pick_word(text):
    """A distinctive ASCII-or-not word of at least 6 letters, or None."""
    for w in re.findall(r"\w{6,}", text):
        if not w.isdigit():
            return w
    return None


@pytest.mark.skipif(not CORPUS.is_dir(), reason="no ../shared/corpus/mime")
def test_corpus(moat_server):
    files = corpus_files()
    contents = [p.read_bytes() for p in files]
    place(moat_server, [("", 0, data) for data in contents])
    c = moat_server.login("testuser1")
    r = c.command("SELECT INBOX")
    assert r.ok, r
    n = len(contents)
    r = c.command("SEARCH RETURN (COUNT) ALL", tag="c0")
    assert esearch(r) == f'* ESEARCH (TAG "c0") COUNT {n}', r
    # a word in no message: every message's text is read and decoded
    check(c, "TEXT zqxjkvbwordnowhere", [])
    check(c, "BODY zqxjkvbwordnowhere", [])

    checked = 0
    for seq, data in enumerate(contents, 1):
        if checked >= 40:
            break
        subject = decoded_subject(data)
        word = pick_word(subject or "")
        if word is None or "\n" in subject or "=?" in subject:
            continue
        lit = word.encode()
        tag = c.next_tag()
        c.send(f"{tag} SEARCH CHARSET UTF-8 SUBJECT {{{len(lit)}+}}\r\n".encode()
               + lit + b"\r\n")
        r = c.read_tagged(tag)
        assert r.ok, r
        assert seq in search_nums(r), (files[seq - 1], word, r)
        checked += 1
    assert checked > 10

    checked = 0
    for seq, data in enumerate(contents, 1):
        if checked >= 40:
            break
        body = plain_body(data)
        word = pick_word(body or "")
        if word is None:
            continue
        lit = word.encode()
        tag = c.next_tag()
        c.send(f"{tag} SEARCH CHARSET UTF-8 BODY {{{len(lit)}+}}\r\n".encode()
               + lit + b"\r\n")
        r = c.read_tagged(tag)
        assert r.ok, r
        assert seq in search_nums(r), (files[seq - 1], word, r)
        checked += 1
    assert checked > 10


def test_capabilities(moat_server):
    c = moat_server.login("testuser1")
    r = c.command("CAPABILITY")
    caps = set(r.untagged[0].decode().split()[2:])
    assert {"ESEARCH", "SEARCHRES", "WITHIN"} <= caps, r


def test_esearch_long_tag(box):
    """The ESEARCH correlator carries the whole tag, however long."""
    server, c = box
    tag = "t" * 30000
    c.send(f"{tag} SEARCH RETURN (COUNT ALL) ALL\r\n".encode())
    line = c.read_line()
    # a long tag goes as a literal (tag-string = string)
    assert line == (f'* ESEARCH (TAG {{{len(tag)}}}\r\n{tag}) COUNT 5 '
                    'ALL 1:5').encode()
    # (the tagged reply line itself is bounded by imap-client.c)
    c.read_line()
    assert c.command("NOOP").ok


def test_saved_result_in_store_copy_and_move(moat_server):
    """SEARCHRES: "$" works in STORE, COPY and MOVE too (RFC 5182 2.1)."""
    c = moat_server.login("testuser1")
    for n in range(4):
        body = f"Subject: s{n}\r\n\r\nbody {n}\r\n".encode()
        tag = c.next_tag()
        c.send(f"{tag} APPEND INBOX {{{len(body)}+}}\r\n".encode() + body + b"\r\n")
        assert c.read_tagged(tag).ok
    assert c.command("CREATE Saved").ok
    assert c.command("SELECT INBOX").ok
    assert c.command("SEARCH RETURN (SAVE) SUBJECT s2").ok
    r = c.command("STORE $ +FLAGS (\\Flagged)")
    assert r.ok and any(b"\\Flagged" in line for line in r.untagged), r
    assert c.command("COPY $ Saved").ok
    r = c.command("MOVE $ Saved")
    assert r.ok and any(b"EXPUNGE" in line for line in r.untagged), r
    r = c.command("STATUS Saved (MESSAGES)")
    assert any(b"MESSAGES 2" in line for line in r.untagged), r
