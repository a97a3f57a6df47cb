"""UIDONLY (RFC 9586), section by section: ENABLE (3.1); FETCH, STORE,
SEARCH, COPY, MOVE (and SORT, THREAD: 3.8) refused with UIDREQUIRED
(3, 3.2); UIDFETCH responses for UID FETCH and UID STORE (3.3);
VANISHED for EXPUNGE and UID EXPUNGE (3.4); no sequence-set key in UID
SEARCH (3.5); other sessions' changes as UIDFETCH and VANISHED, EXISTS
unchanged, COPYUID on UID MOVE (3.6); MODSEQ in UIDFETCH, no QRESYNC
seq-match-data (3.7). The mailbox's UIDs differ from its sequence
numbers, so a response that sent the wrong one is caught."""

import re

import pytest

from moatimap import parse_value

UIDFETCH_RE = re.compile(rb"^\* (\d+) UIDFETCH ")


def ok(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    return r


def uidfetches(lines):
    """{uid: {ITEM: value}} of the UIDFETCH lines; no FETCH may be there."""
    result = {}
    for line in lines:
        assert not re.match(rb"^\* \d+ FETCH ", line), line
        m = UIDFETCH_RE.match(line)
        if not m:
            continue
        value, _ = parse_value(line, m.end())
        items = {str(value[i]).upper(): value[i + 1]
                 for i in range(0, len(value), 2)}
        result.setdefault(int(m.group(1)), {}).update(items)
    return result


def flags_of(value):
    """The flags, without \\Recent (the first SELECT's)."""
    return sorted(str(f) for f in value if str(f) != "\\Recent")


@pytest.fixture
def box(moat_server):
    """INBOX with UIDs 3..7 at sequence numbers 1..5, UIDONLY enabled."""
    c = moat_server.login()
    for i in range(7):
        assert c.append("INBOX", f"Subject: m{i}\r\n\r\nbody {i}\r\n".encode()).ok
    ok(c, "SELECT INBOX")
    ok(c, "UID STORE 1:2 +FLAGS.SILENT (\\Deleted)")
    ok(c, "EXPUNGE")
    r = ok(c, "ENABLE UIDONLY")
    assert r.untagged == [b"* ENABLED UIDONLY"]
    return c


def test_capability_and_enable(moat_server):
    """3.1: advertised; ENABLE answers ENABLED once."""
    c = moat_server.login()
    assert b"UIDONLY" in ok(c, "CAPABILITY").untagged[0].split()
    assert ok(c, "ENABLE UIDONLY").untagged == [b"* ENABLED UIDONLY"]
    assert ok(c, "ENABLE UIDONLY").untagged == [b"* ENABLED"]


@pytest.mark.parametrize("cmd", [
    "FETCH 10000:14589 (UID FLAGS)",      # the example of section 3
    "FETCH 1 FLAGS", "FETCH * (UID)",
    "STORE 1 +FLAGS (\\Seen)", "SEARCH ALL", "COPY 1 INBOX",
    "MOVE 1 INBOX", "SORT (DATE) UTF-8 ALL",
    "THREAD REFERENCES UTF-8 ALL",
])
def test_sequence_commands_refused(box, cmd):
    """3, 3.2, 3.8: BAD with UIDREQUIRED, nothing done."""
    r = box.command(cmd)
    assert r.status == "BAD" and r.code == "UIDREQUIRED", r
    assert not r.untagged, r
    r = ok(box, "UID FETCH 1:* (FLAGS)")
    assert all("\\Seen" not in flags_of(f["FLAGS"])
               for f in uidfetches(r.untagged).values())
    assert ok(box, "UID SEARCH ALL").untagged == [b"* SEARCH 3 4 5 6 7"]


def test_uid_fetch_gives_uidfetch(box):
    """3.3: "* uid UIDFETCH (...)", the UID item only when asked for."""
    r = ok(box, "UID FETCH 1:* (FLAGS)")
    got = uidfetches(r.untagged)
    assert sorted(got) == [3, 4, 5, 6, 7]
    assert all(set(items) == {"FLAGS"} for items in got.values())
    r = ok(box, "UID FETCH 4:5 (UID FLAGS RFC822.SIZE)")
    got = uidfetches(r.untagged)
    assert sorted(got) == [4, 5]
    assert all(str(items["UID"]) == str(uid) for uid, items in got.items())
    # BODY[] and the \Seen it sets
    r = ok(box, "UID FETCH 6 (BODY[TEXT])")
    got = uidfetches(r.untagged)
    assert got[6]["BODY[TEXT]"] == b"body 5\r\n"
    assert "\\Seen" in flags_of(got[6]["FLAGS"])


def test_uid_store_gives_uidfetch(box):
    r = ok(box, "UID STORE 5 +FLAGS (\\Flagged)")
    got = uidfetches(r.untagged)
    assert list(got) == [5] and flags_of(got[5]["FLAGS"]) == ["\\Flagged"]
    r = ok(box, "UID STORE 3:4 FLAGS.SILENT (\\Answered)")
    assert uidfetches(r.untagged) == {}


def test_expunge_gives_vanished(box):
    """3.4, with the example: EXPUNGE and UID EXPUNGE answer VANISHED."""
    ok(box, "UID STORE 4,6 +FLAGS.SILENT (\\Deleted)")
    r = ok(box, "EXPUNGE")
    assert [l for l in r.untagged if not l.endswith(b"RECENT")] == \
        [b"* VANISHED 4,6"], r
    ok(box, "UID STORE 7 +FLAGS.SILENT (\\Deleted)")
    r = ok(box, "UID EXPUNGE 7")
    assert [l for l in r.untagged if not l.endswith(b"RECENT")] == \
        [b"* VANISHED 7"], r
    r = ok(box, "UID SEARCH ALL")
    assert r.untagged == [b"* SEARCH 3 5"]


def test_uid_search_sequence_set_refused(box):
    """3.5: a sequence-set key is BAD; ALL, UID and "$" work."""
    for keys in ["1:2", "NOT 1", "OR 1 2", "ALL 3"]:
        r = box.command(f"UID SEARCH {keys}")
        assert r.status == "BAD" and r.code == "UIDREQUIRED", r
        r = box.command(f"UID SORT (ARRIVAL) UTF-8 {keys}")
        assert r.status == "BAD" and r.code == "UIDREQUIRED", r
        r = box.command(f"UID THREAD ORDEREDSUBJECT UTF-8 {keys}")
        assert r.status == "BAD" and r.code == "UIDREQUIRED", r
    assert ok(box, "UID SEARCH UID 4:5").untagged == [b"* SEARCH 4 5"]
    ok(box, "UID SEARCH RETURN (SAVE) UID 6:7")
    assert ok(box, "UID SEARCH $").untagged == [b"* SEARCH 6 7"]
    assert ok(box, "UID SORT (REVERSE SUBJECT) UTF-8 ALL").untagged == \
        [b"* SORT 7 6 5 4 3"]


def test_other_sessions_changes(moat_server, box):
    """3.6: flag changes come as UIDFETCH, expunges as VANISHED, new
    mail as EXISTS (unchanged); in IDLE too."""
    other = moat_server.login()
    ok(other, "SELECT INBOX")
    ok(other, "STORE 2 +FLAGS.SILENT (\\Flagged)")    # UID 4
    ok(other, "STORE 4 +FLAGS.SILENT (\\Deleted)")    # UID 6
    ok(other, "EXPUNGE")
    assert other.append("INBOX", b"Subject: new\r\n\r\nnew\r\n").ok
    r = ok(box, "NOOP")
    got = uidfetches(r.untagged)
    assert list(got) == [4] and flags_of(got[4]["FLAGS"]) == ["\\Flagged"]
    assert b"* VANISHED 6" in r.untagged
    assert b"* 5 EXISTS" in r.untagged
    assert not any(l.endswith(b"EXPUNGE") for l in r.untagged)
    # in IDLE
    tag = box.next_tag()
    box.send(f"{tag} IDLE\r\n")
    assert box.read_line().startswith(b"+")
    ok(other, "STORE 1 +FLAGS.SILENT (\\Answered)")   # UID 3
    line = box.read_line_within(30)
    assert line is not None and UIDFETCH_RE.match(line), line
    assert uidfetches([line])[3]
    box.send("DONE\r\n")
    assert box.read_tagged(tag).ok


def test_uid_move_copyuid_and_vanished(box):
    """3.6, with the example: COPYUID, then VANISHED."""
    ok(box, "CREATE Kept")
    r = ok(box, "UID MOVE 5 Kept")
    codes = [l for l in r.untagged if l.startswith(b"* OK [COPYUID ")]
    assert len(codes) == 1 and codes[0].split()[4] == b"5", r
    assert b"* VANISHED 5" in r.untagged
    r = ok(box, "UID COPY 3:4 Kept")
    assert b"[COPYUID " in r.line


def test_condstore_modseq_in_uidfetch(box):
    """3.7: MODSEQ comes in UIDFETCH."""
    r = ok(box, "UID FETCH 3 (MODSEQ)")
    got = uidfetches(r.untagged)
    assert list(got) == [3] and "MODSEQ" in got[3]
    r = ok(box, "UID STORE 3 +FLAGS (\\Seen)")
    got = uidfetches(r.untagged)
    assert "MODSEQ" in got[3]


def test_qresync_without_seq_match_data(moat_server):
    """3.7: SELECT (QRESYNC ...) answers with UIDFETCH; its fourth
    parameter (seq-match-data) is BAD once UIDONLY is on."""
    c = moat_server.login()
    for i in range(4):
        assert c.append("INBOX", f"Subject: q{i}\r\n\r\nq\r\n".encode()).ok
    r = ok(c, "ENABLE QRESYNC UIDONLY")
    r = ok(c, "SELECT INBOX")
    uidvalidity = int(re.search(rb"UIDVALIDITY (\d+)",
                                b" ".join(r.untagged)).group(1))
    ok(c, "UID STORE 2 +FLAGS (\\Flagged)")
    ok(c, "UID STORE 3 +FLAGS.SILENT (\\Deleted)")
    ok(c, "UID EXPUNGE 3")
    r = c.command(f"SELECT INBOX (QRESYNC ({uidvalidity} 1 1:4 (1:2 1:2)))")
    assert r.status == "BAD", r
    r = ok(c, f"SELECT INBOX (QRESYNC ({uidvalidity} 1 1:4))")
    assert b"* VANISHED (EARLIER) 3" in r.untagged
    got = uidfetches(r.untagged)
    assert 2 in got and flags_of(got[2]["FLAGS"]) == ["\\Flagged"]


def test_before_enable_nothing_changes(moat_server):
    c = moat_server.login()
    assert c.append("INBOX", b"Subject: x\r\n\r\ny\r\n").ok
    ok(c, "SELECT INBOX")
    r = ok(c, "FETCH 1 (FLAGS)")
    assert r.untagged[0].startswith(b"* 1 FETCH (")
    r = ok(c, "UID FETCH 1 (FLAGS)")
    assert r.untagged[0].startswith(b"* 1 FETCH (UID 1 ")
