"""CONDSTORE (RFC 7162 3.1): enabling, HIGHESTMODSEQ, FETCH MODSEQ and
CHANGEDSINCE, STORE UNCHANGEDSINCE and MODIFIED, SEARCH/SORT MODSEQ,
STATUS HIGHESTMODSEQ, and their error paths. The RFC's examples are
replayed with this server's numbers."""

import re

import pytest


def msg(n):
    return (f"From: a@example.org\r\nSubject: message {n}\r\n"
            f"Date: Mon, 1 Jan 2024 00:00:{n % 60:02d} +0000\r\n\r\n"
            f"Body {n}.\r\n").encode()


def fill(c, n, mailbox="INBOX"):
    for i in range(1, n + 1):
        assert c.append(mailbox, msg(i)).ok


def ok(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    return r


def highestmodseq(r):
    for line in r.untagged + [r.line]:
        m = re.search(rb"\[HIGHESTMODSEQ (\d+)\]", line)
        if m:
            return int(m.group(1))
    return None


def modseqs(r):
    """{seq: modseq} of the FETCH responses."""
    return {seq: int(items["MODSEQ"][0]) for seq, items in r.fetches().items()
            if "MODSEQ" in items}


def flags(items):
    return {f for f in items["FLAGS"] if f.lower() != "\\recent"}


@pytest.fixture
def five(moat_server):
    c = moat_server.login("testuser1")
    fill(c, 5)
    return moat_server, c


def test_capability_advertised(moat_server):
    c = moat_server.login()
    r = ok(c, "CAPABILITY")
    caps = r.untagged[0].split()
    assert b"CONDSTORE" in caps and b"QRESYNC" in caps and b"ENABLE" in caps


def test_select_condstore_highestmodseq(five):
    """RFC 7162 example 18: SELECT (CONDSTORE) says HIGHESTMODSEQ."""
    server, c = five
    r = ok(c, "SELECT INBOX")
    assert highestmodseq(r) is None, r   # not before an enabling command
    r = ok(c, "SELECT INBOX (CONDSTORE)")
    hm = highestmodseq(r)
    assert hm is not None and hm >= 5, r
    # from now on every SELECT says it (3.1.2.1)
    r = ok(c, "EXAMINE INBOX")
    assert highestmodseq(r) == hm


def test_enable_condstore(five):
    server, c = five
    r = ok(c, "ENABLE CONDSTORE")
    assert b"* ENABLED CONDSTORE" in r.untagged, r
    r = ok(c, "ENABLE CONDSTORE")      # already on: nothing new
    assert b"* ENABLED" in r.untagged, r
    r = ok(c, "SELECT INBOX")
    assert highestmodseq(r) is not None


def test_enable_qresync_implies_condstore(five):
    server, c = five
    r = ok(c, "ENABLE QRESYNC")
    assert b"* ENABLED QRESYNC" in r.untagged, r
    r = ok(c, "SELECT INBOX")
    assert highestmodseq(r) is not None
    r = ok(c, "ENABLE QRESYNC CONDSTORE")
    assert r.untagged == [b"* ENABLED"], r


def test_fetch_modseq_example_13(five):
    """RFC 7162 example 13; FETCH MODSEQ enables CONDSTORE and the first
    enabling command with a mailbox selected says HIGHESTMODSEQ."""
    server, c = five
    ok(c, "SELECT INBOX")
    r = ok(c, "FETCH 1:3 (MODSEQ)")
    ms = modseqs(r)
    assert sorted(ms) == [1, 2, 3] and all(m > 0 for m in ms.values()), r
    assert highestmodseq(r) is not None, r
    # appends get ascending modseqs (3.1)
    assert ms[1] < ms[2] < ms[3]
    r = ok(c, "FETCH 1 (MODSEQ)")
    assert highestmodseq(r) is None   # only the first time


def test_store_changes_modseq_only_when_flags_change(five):
    """3.1: a flag change gets a new modseq, setting a set flag does not
    (3.1.11); with CONDSTORE a .SILENT STORE still says the MODSEQ."""
    server, c = five
    ok(c, "SELECT INBOX (CONDSTORE)")
    before = modseqs(ok(c, "FETCH 2 MODSEQ"))[2]
    r = ok(c, "STORE 2 +FLAGS.SILENT (\\Flagged)")
    after = modseqs(r)[2]
    assert after > before
    items = r.fetches()[2]
    assert "FLAGS" not in items and items["UID"] == "2", r
    r = ok(c, "STORE 2 +FLAGS (\\Flagged)")
    assert modseqs(r)[2] == after, r
    r = ok(c, "STORE 2 -FLAGS (\\Seen)")
    assert modseqs(r)[2] == after, r


def test_each_store_gets_its_own_modseq(five):
    """3.1: two STOREs never share a modseq; later ones are greater."""
    server, c = five
    ok(c, "SELECT INBOX (CONDSTORE)")
    seen = []
    for flag in ["\\Seen", "\\Flagged", "\\Answered", "$Work"]:
        r = ok(c, f"STORE 1:2 +FLAGS.SILENT ({flag})")
        seen.append(max(modseqs(r).values()))
    assert seen == sorted(set(seen)), seen


def test_fetch_changedsince_example_12(five):
    """RFC 7162 example 12: only the messages changed after the value."""
    server, c = five
    ok(c, "SELECT INBOX")
    base = highestmodseq(ok(c, "ENABLE CONDSTORE"))
    if base is None:
        base = highestmodseq(ok(c, "SELECT INBOX"))
    ok(c, "STORE 2 +FLAGS (\\Seen)")
    ok(c, "STORE 4 +FLAGS (\\Deleted)")
    r = ok(c, f"UID FETCH 1:* (FLAGS) (CHANGEDSINCE {base})")
    f = r.fetches()
    assert sorted(f) == [2, 4], r
    assert flags(f[2]) == {"\\Seen"} and flags(f[4]) == {"\\Deleted"}
    assert all("MODSEQ" in items and "UID" in items for items in f.values())
    r = ok(c, f"FETCH 1:* (FLAGS) (CHANGEDSINCE {modseqs(r)[4]})")
    assert r.fetches() == {}, r


def test_changedsince_enables_condstore(five):
    server, c = five
    ok(c, "SELECT INBOX")
    r = ok(c, "FETCH 1:* (FLAGS) (CHANGEDSINCE 1)")
    assert highestmodseq(r) is not None, r
    assert len(r.fetches()) == 4 and all("MODSEQ" in i for i in
                                         r.fetches().values())


@pytest.mark.parametrize("mod", [
    "(CHANGEDSINCE 0)", "(CHANGEDSINCE)", "(CHANGEDSINCE x)",
    "(CHANGEDSINCE 9223372036854775808)", "(CHANGEDSINCE 1 CHANGEDSINCE 2)",
    "(UNKNOWN 1)", "()", "(VANISHED)", "(CHANGEDSINCE 1 VANISHED)"])
def test_fetch_modifier_errors(five, mod):
    """Bad CHANGEDSINCE values (mod-sequence-value is 1..2^63-1) and
    VANISHED without UID FETCH / ENABLE QRESYNC are BAD (3.2.6)."""
    server, c = five
    ok(c, "SELECT INBOX")
    r = c.command(f"FETCH 1:* (FLAGS) {mod}")
    assert r.status == "BAD", r


def test_vanished_errors(five):
    server, c = five
    ok(c, "SELECT INBOX")
    # without ENABLE QRESYNC
    r = c.command("UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)")
    assert r.status == "BAD", r
    ok(c, "ENABLE QRESYNC")
    ok(c, "SELECT INBOX")
    # not in FETCH, and never without CHANGEDSINCE
    assert c.command("FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)").status == "BAD"
    assert c.command("UID FETCH 1:* (FLAGS) (VANISHED)").status == "BAD"
    assert ok(c, "UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)")


def test_modseq_above_highest(five):
    """A modseq above HIGHESTMODSEQ is no error: nothing changed after it
    (CHANGEDSINCE), every message passes UNCHANGEDSINCE, SEARCH finds
    nothing."""
    server, c = five
    hm = highestmodseq(ok(c, "SELECT INBOX (CONDSTORE)"))
    big = hm + 1000
    assert ok(c, f"FETCH 1:* (FLAGS) (CHANGEDSINCE {big})").fetches() == {}
    r = ok(c, f"SEARCH MODSEQ {big}")
    assert r.untagged == [b"* SEARCH"], r
    r = ok(c, f"STORE 1 (UNCHANGEDSINCE {big}) +FLAGS (\\Seen)")
    assert "MODIFIED" not in r.text.decode(), r


def test_unchangedsince_example_3(five):
    """RFC 7162 example 3: all pass, a FETCH with MODSEQ (and UID) for each
    even with .SILENT."""
    server, c = five
    hm = highestmodseq(ok(c, "SELECT INBOX (CONDSTORE)"))
    r = ok(c, f"UID STORE 4,2,5 (UNCHANGEDSINCE {hm}) +FLAGS.SILENT (\\Deleted)")
    f = r.fetches()
    assert sorted(f) == [2, 4, 5], r
    assert all(int(i["MODSEQ"][0]) > hm and "FLAGS" not in i for i in f.values())
    assert b"MODIFIED" not in r.line


def test_unchangedsince_modified_example_6(five):
    """RFC 7162 examples 6 and 10: a message changed after UNCHANGEDSINCE
    is left alone and listed in [MODIFIED]; the server tells its flags."""
    server, c = five
    hm = highestmodseq(ok(c, "SELECT INBOX (CONDSTORE)"))
    other = server.login("testuser1")
    ok(other, "SELECT INBOX")
    ok(other, "STORE 3 +FLAGS (\\Answered)")
    ok(other, "STORE 5 +FLAGS (\\Seen)")
    r = c.command(f"STORE 3,1,5 (UNCHANGEDSINCE {hm}) +FLAGS.SILENT (\\Deleted)")
    assert r.ok, r
    assert r.code == "MODIFIED 3,5", r
    f = r.fetches()
    assert "\\Deleted" not in flags(f[3]) and "\\Answered" in flags(f[3])
    assert "\\Deleted" not in flags(f[5]) and "\\Seen" in flags(f[5])
    assert int(f[1]["MODSEQ"][0]) > hm
    # UID STORE lists UIDs
    ok(c, "EXPUNGE")    # message 1 goes: numbers and UIDs differ
    r = c.command(f"UID STORE 3 (UNCHANGEDSINCE {hm}) -FLAGS (\\Answered)")
    assert r.ok and r.code == "MODIFIED 3", r


def test_unchangedsince_zero_example_8(five):
    """RFC 7162 example 8: UNCHANGEDSINCE 0 always fails."""
    server, c = five
    ok(c, "SELECT INBOX")
    r = c.command("STORE 2 (UNCHANGEDSINCE 0) +FLAGS.SILENT ($MDNSent)")
    assert r.ok and r.code == "MODIFIED 2", r
    r = ok(c, "FETCH 2 FLAGS")
    assert "$MDNSent" not in flags(r.fetches()[2])


@pytest.mark.parametrize("mod", [
    "(UNCHANGEDSINCE)", "(UNCHANGEDSINCE -1)", "(UNCHANGEDSINCE 1 2)",
    "(UNCHANGEDSINCE 9223372036854775808)", "(CHANGEDSINCE 1)", "()"])
def test_store_modifier_errors(five, mod):
    server, c = five
    ok(c, "SELECT INBOX")
    r = c.command(f"STORE 1 {mod} +FLAGS (\\Seen)")
    assert r.status == "BAD", r
    assert "\\Seen" not in flags(ok(c, "FETCH 1 FLAGS").fetches()[1])


def test_unchangedsince_with_expunged_example_11(five):
    """RFC 7162 example 11: a message another session expunged that this
    one still shows gives NO; the others are stored."""
    server, c = five
    hm = highestmodseq(ok(c, "SELECT INBOX (CONDSTORE)"))
    other = server.login("testuser1")
    ok(other, "SELECT INBOX")
    ok(other, "STORE 4 +FLAGS.SILENT (\\Deleted)")
    ok(other, "EXPUNGE")
    r = c.command(f"STORE 1:5 (UNCHANGEDSINCE {hm + 10}) +FLAGS (\\Seen)")
    assert r.status == "NO", r
    assert sorted(r.fetches()) == [1, 2, 3, 5], r
    r = ok(c, "NOOP")
    assert b"* 4 EXPUNGE" in r.untagged, r


def test_search_modseq_examples_15_16(five):
    """RFC 7162 examples 15 and 16, and 3.1.6: (MODSEQ n) at the end."""
    server, c = five
    hm = highestmodseq(ok(c, "SELECT INBOX (CONDSTORE)"))
    r = ok(c, "STORE 2,5 +FLAGS (\\Draft)")
    ms = modseqs(r)
    r = ok(c, f'SEARCH MODSEQ "/flags/\\\\draft" all {hm + 1}')
    assert r.untagged == [f"* SEARCH 2 5 (MODSEQ {ms[5]})".encode()], r
    r = ok(c, f"UID SEARCH MODSEQ {hm + 1}")
    assert r.untagged == [f"* SEARCH 2 5 (MODSEQ {ms[5]})".encode()], r
    r = ok(c, f"SEARCH OR NOT MODSEQ {ms[5] + 1} LARGER 50000")
    assert r.untagged[0].startswith(b"* SEARCH 1 2 3 4 5 (MODSEQ"), r
    r = ok(c, f"SEARCH MODSEQ {ms[5] + 1}")
    assert r.untagged == [b"* SEARCH"], r


def test_search_modseq_enables(five):
    server, c = five
    ok(c, "SELECT INBOX")
    r = ok(c, "SEARCH MODSEQ 1")
    assert highestmodseq(r) is not None, r
    assert re.match(rb"^\* SEARCH 1 2 3 4 5 \(MODSEQ \d+\)$", r.untagged[-1])


@pytest.mark.parametrize("key", [
    "MODSEQ", "MODSEQ x", "MODSEQ \"/flags/\\\\seen\" 5",
    "MODSEQ \"/flags/\\\\seen\" bogus 5", "MODSEQ \"/other\" all 5",
    "MODSEQ 9223372036854775808"])
def test_search_modseq_errors(five, key):
    server, c = five
    ok(c, "SELECT INBOX")
    r = c.command(f"SEARCH {key}")
    assert r.status == "BAD", r


def test_esearch_and_esort_modseq_examples_19_20(five):
    """RFC 7162 examples 19 and 20: MODSEQ in ESEARCH for SEARCH and SORT."""
    server, c = five
    ok(c, "SELECT INBOX (CONDSTORE)")
    ms = modseqs(ok(c, "STORE 1:3,5 +FLAGS (\\Seen)"))
    low = min(ms.values())
    r = ok(c, f"SEARCH RETURN (ALL) MODSEQ {low}")
    assert r.untagged[-1].endswith(f"ALL 1:3,5 MODSEQ {ms[5]}".encode()), r
    r = ok(c, f"SORT RETURN (ALL) (REVERSE DATE) UTF-8 MODSEQ {low}")
    assert r.untagged[-1].endswith(f"ALL 5,3,2,1 MODSEQ {ms[5]}".encode()), r
    r = ok(c, f"SORT (ARRIVAL) UTF-8 MODSEQ {low}")
    assert r.untagged[-1] == f"* SORT 1 2 3 5 (MODSEQ {ms[5]})".encode(), r
    r = ok(c, f"SEARCH RETURN (COUNT) MODSEQ {ms[5] + 1}")
    assert b"MODSEQ" not in r.untagged[-1], r


def test_status_highestmodseq_example_17(five):
    """RFC 7162 example 17 and 3.1.7; a STATUS of another mailbox."""
    server, c = five
    ok(c, "CREATE other")
    fill(c, 2, "other")
    r = ok(c, "STATUS INBOX (UIDNEXT MESSAGES HIGHESTMODSEQ)")
    m = re.search(rb"HIGHESTMODSEQ (\d+)", r.untagged[0])
    assert m and int(m.group(1)) >= 5, r
    hm = int(m.group(1))
    r = ok(c, "SELECT INBOX")
    assert highestmodseq(r) == hm, r   # STATUS HIGHESTMODSEQ enabled it
    ok(c, "STORE 1 +FLAGS (\\Seen)")
    r = ok(c, "STATUS INBOX (HIGHESTMODSEQ)")
    assert int(re.search(rb"HIGHESTMODSEQ (\d+)", r.untagged[-1]).group(1)) > hm


def test_unsolicited_fetch_has_uid_and_modseq_example_14(five):
    """RFC 7162 example 14 and 3.2.4: another session's change comes with
    UID and MODSEQ to a CONDSTORE-aware session."""
    server, c = five
    ok(c, "SELECT INBOX (CONDSTORE)")
    other = server.login("testuser1")
    ok(other, "SELECT INBOX")
    r = ok(other, "STORE 4 +FLAGS.SILENT (\\Deleted)")
    assert r.fetches() == {}, r       # that session is not CONDSTORE-aware
    r = ok(c, "NOOP")
    f = r.fetches()
    assert f[4]["UID"] == "4" and "\\Deleted" in flags(f[4]), r
    assert "MODSEQ" in f[4]


def test_implicit_seen_has_modseq(five):
    """3.2.4: a FETCH that sets \\Seen reports UID and MODSEQ."""
    server, c = five
    ok(c, "SELECT INBOX (CONDSTORE)")
    r = ok(c, "FETCH 3 BODY[TEXT]")
    f = r.fetches()[3]
    assert "\\Seen" in flags(f) and f["UID"] == "3" and "MODSEQ" in f, r


def test_highestmodseq_while_expunges_wait(five):
    """RFC 7162 3.2 and 6: a FETCH MODSEQ while an expunge is not yet
    reported comes with a HIGHESTMODSEQ below the expunge."""
    server, c = five
    ok(c, "SELECT INBOX (CONDSTORE)")
    other = server.login("testuser1")
    ok(other, "SELECT INBOX (CONDSTORE)")
    ok(other, "STORE 2 +FLAGS.SILENT (\\Deleted)")
    ok(other, "EXPUNGE")
    ms = modseqs(ok(other, "STORE 1 +FLAGS (\\Flagged)"))
    r = ok(c, "FETCH 1 (MODSEQ)")         # may not report the expunge
    assert not any(b"EXPUNGE" in l for l in r.untagged), r
    assert modseqs(r)[1] == ms[1]
    hm = highestmodseq(r)
    assert hm is not None and hm < ms[1], r
    r = ok(c, "NOOP")
    assert b"* 2 EXPUNGE" in r.untagged, r


def test_unchangedsince_two_sessions_one_wins(five):
    """3.1.3: two sessions storing with the same UNCHANGEDSINCE: for each
    message exactly one of them changes it, the other gets MODIFIED."""
    server, c = five
    hm = highestmodseq(ok(c, "SELECT INBOX (CONDSTORE)"))
    other = server.login("testuser1")
    ok(other, "SELECT INBOX (CONDSTORE)")
    # both commands are sent before either answer is read
    c.send(f"x1 STORE 1:5 (UNCHANGEDSINCE {hm}) +FLAGS.SILENT ($A)\r\n".encode())
    other.send(f"y1 STORE 1:5 (UNCHANGEDSINCE {hm}) +FLAGS.SILENT ($B)\r\n".encode())
    ra, rb = c.read_tagged("x1"), other.read_tagged("y1")
    assert ra.ok and rb.ok, (ra, rb)
    failed_a = uid_set(ra.code[len("MODIFIED "):]) if ra.code else set()
    failed_b = uid_set(rb.code[len("MODIFIED "):]) if rb.code else set()
    assert failed_a | failed_b == {1, 2, 3, 4, 5}, (ra, rb)
    assert not failed_a & failed_b, (ra, rb)
    f = ok(c, "FETCH 1:5 FLAGS").fetches()
    for seq in range(1, 6):
        got = flags(f[seq]) & {"$A", "$B"}
        assert got == ({"$B"} if seq in failed_a else {"$A"}), f


def uid_set(text):
    out = set()
    for part in text.split(","):
        a, _, b = part.partition(":")
        out.update(range(int(a), int(b or a) + 1))
    return out


def test_list_status_highestmodseq(five):
    """RFC 5819 with RFC 7162 3.1.7: LIST ... RETURN (STATUS (HIGHESTMODSEQ))."""
    server, c = five
    r = ok(c, 'LIST "" INBOX RETURN (STATUS (MESSAGES HIGHESTMODSEQ))')
    line = [l for l in r.untagged if l.startswith(b"* STATUS")][0]
    assert re.search(rb"MESSAGES 5 HIGHESTMODSEQ \d+", line), r


def test_silent_store_shows_foreign_change(five):
    """A .SILENT STORE whose message another session changed meanwhile
    answers with FLAGS: its MODSEQ covers that change too, and a client
    taking the MODSEQ alone would never learn of it."""
    server, c = five
    ok(c, "SELECT INBOX (CONDSTORE)")
    other = server.login("testuser1")
    ok(other, "SELECT INBOX")
    ok(other, "STORE 1 +FLAGS.SILENT (\\Flagged)")
    r = ok(c, "STORE 1 +FLAGS.SILENT (\\Seen)")
    f = r.fetches()[1]
    assert flags(f) == {"\\Seen", "\\Flagged"} and "MODSEQ" in f, r
    # without a foreign change .SILENT stays without FLAGS
    r = ok(c, "STORE 2 +FLAGS.SILENT (\\Seen)")
    assert "FLAGS" not in r.fetches()[2], r


def test_esearch_modseq_min_max_rfc4731(five):
    """RFC 4731 3.2: with MIN and/or MAX alone, MODSEQ is that of the
    returned messages; with COUNT or ALL, the highest of all matches."""
    server, c = five
    ok(c, "SELECT INBOX (CONDSTORE)")
    ms = {}
    for seq in (4, 2, 3):       # message 3 gets the highest modseq
        ms.update(modseqs(ok(c, f"STORE {seq} +FLAGS (\\Draft)")))
    low = min(ms.values())
    r = ok(c, f"SEARCH RETURN (MIN) MODSEQ {low}")
    assert r.untagged[-1].endswith(f"MIN 2 MODSEQ {ms[2]}".encode()), r
    r = ok(c, f"SEARCH RETURN (MAX) MODSEQ {low}")
    assert r.untagged[-1].endswith(f"MAX 4 MODSEQ {ms[4]}".encode()), r
    r = ok(c, f"SEARCH RETURN (MIN MAX) MODSEQ {low}")
    assert r.untagged[-1].endswith(
        f"MIN 2 MAX 4 MODSEQ {max(ms[2], ms[4])}".encode()), r
    r = ok(c, f"SEARCH RETURN (MIN COUNT) MODSEQ {low}")
    assert r.untagged[-1].endswith(f"MIN 2 COUNT 3 MODSEQ {ms[3]}".encode()), r
    r = ok(c, f"SORT RETURN (MIN) (ARRIVAL) UTF-8 MODSEQ {low}")
    assert r.untagged[-1].endswith(f"MIN 2 MODSEQ {ms[2]}".encode()), r
