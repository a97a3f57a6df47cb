"""PARTIAL (RFC 9394): paged ESEARCH results (3.1, with the section's
examples scaled to the mailbox), negative ranges from the newest, ranges
past the end (a shorter set, or NIL), the SAVE combinations of 3.2
(table 1), ESORT's PARTIAL in sort order, the UID FETCH modifier (3.3,
with CHANGEDSINCE: 3.4), and the syntax errors (4), each checked against
a model of the result list."""

import re

import pytest

N = 60          # messages; UIDs 11..70 (ten expunged first)
DELETED = {15, 16, 17, 40}   # UIDs with \Deleted among the rest


def ok(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    return r


def expand(s):
    """A sequence-set as a list (ranges in the order given)."""
    out = []
    for part in s.split(","):
        if ":" in part:
            a, b = (int(x) for x in part.split(":"))
            out.extend(range(a, b + 1) if a <= b else range(a, b - 1, -1))
        else:
            out.append(int(part))
    return out


def esearch(r):
    lines = [l for l in r.untagged if l.startswith(b"* ESEARCH")]
    assert len(lines) == 1, r
    return lines[0].decode()


def partial_of(line):
    """(range text, list or None) of the PARTIAL item of an ESEARCH."""
    m = re.search(r"PARTIAL \((\S+) (\S+)\)", line)
    assert m, line
    return m.group(1), None if m.group(2) == "NIL" else expand(m.group(2))


def window(results, lo, hi):
    """The model: RFC 9394 3.1 positions lo..hi (1-based; negative from
    the end), clipped."""
    a, b = sorted((abs(lo), abs(hi)))
    if lo < 0:
        n = len(results)
        sel = results[max(n - b, 0):max(n - a + 1, 0)]
    else:
        sel = results[a - 1:b]
    return sel or None


@pytest.fixture
def box(moat_server):
    c = moat_server.login()
    # one MULTIAPPEND (RFC 3502) of them all, non-synchronizing literals
    cmd = b"APPEND INBOX"
    for i in range(N + 10):
        msg = f"Subject: s{(i * 37) % 23:02d}\r\n\r\nb{i}\r\n".encode()
        cmd += b" {%d+}\r\n" % len(msg) + msg
    assert c.command(cmd).ok
    ok(c, "SELECT INBOX")
    ok(c, "UID STORE 1:10 +FLAGS.SILENT (\\Deleted)")
    ok(c, "EXPUNGE")
    ok(c, "UID STORE %s +FLAGS.SILENT (\\Deleted)" %
       ",".join(str(u) for u in sorted(DELETED)))
    return c


UNDELETED = [u for u in range(11, 71) if u not in DELETED]


def test_capability(moat_server):
    c = moat_server.login()
    assert b"PARTIAL" in ok(c, "CAPABILITY").untagged[0].split()


@pytest.mark.parametrize("rng", ["1:10", "10:1", "11:20", "50:100", "56:56",
                                 "57:100", "100:200", "-1:-10", "-10:-1",
                                 "-50:-60", "-56:-56", "-57:-100",
                                 "-1:-100", "1:100"])
def test_uid_search_partial(box, rng):
    """3.1: the positions asked for, ascending UIDs, the range echoed;
    NIL when no result is in the range."""
    r = ok(box, f"UID SEARCH RETURN (PARTIAL {rng}) UNDELETED")
    line = esearch(r)
    assert line.startswith(f'* ESEARCH (TAG "{r.tag}") UID PARTIAL (')
    echoed, got = partial_of(line)
    lo, hi = (int(x) for x in rng.replace(":-", ":").split(":"))
    a, b = sorted((abs(lo), abs(hi)))
    assert echoed == (f"-{a}:-{b}" if lo < 0 else f"{a}:{b}")
    want = window(UNDELETED, -a if lo < 0 else a, -b if lo < 0 else b)
    assert got == want


def test_rfc_examples_scaled(box):
    """The examples of 3.1 with 56 results instead of 23764: the last
    100 (all of them), a range spanning the end, the first ones, and one
    beyond the end (NIL); pipelined like A02..A04."""
    r = ok(box, "UID SEARCH RETURN (PARTIAL -1:-100) UNDELETED UNKEYWORD $Junk")
    assert partial_of(esearch(r)) == ("-1:-100", UNDELETED)
    box.send("A02 UID SEARCH RETURN (PARTIAL 50:70) UNDELETED\r\n"
             "A03 UID SEARCH RETURN (PARTIAL 1:5) UNDELETED\r\n"
             "A04 UID SEARCH RETURN (PARTIAL 70:80) UNDELETED\r\n")
    got = {t: partial_of(esearch(box.read_tagged(t))) for t in
           ("A02", "A03", "A04")}
    assert got["A02"] == ("50:70", UNDELETED[49:])
    assert got["A03"] == ("1:5", UNDELETED[:5])
    assert got["A04"] == ("70:80", None)


def test_search_partial_by_sequence_and_with_others(box):
    """Sequence numbers too; MIN, MAX, COUNT alongside; an empty result."""
    seqs = [u - 10 for u in UNDELETED]
    r = ok(box, "SEARCH RETURN (MIN PARTIAL -1:-3 COUNT MAX) UNDELETED")
    line = esearch(r)
    assert f" MIN {seqs[0]} " in line and f" MAX {seqs[-1]} " in line
    assert f" COUNT {len(seqs)} " in line
    assert partial_of(line) == ("-1:-3", seqs[-3:])
    r = ok(box, "UID SEARCH RETURN (PARTIAL 1:10) KEYWORD nosuch")
    assert partial_of(esearch(r)) == ("1:10", None)


@pytest.mark.parametrize("opts,saved", [
    ("SAVE PARTIAL 2:4", "window"),
    ("SAVE PARTIAL 2:4 MIN", "window+min"),
    ("SAVE PARTIAL -2:-4 MAX", "window+max"),
    ("SAVE MIN PARTIAL 10:12 MAX", "window+min+max"),
    ("SAVE PARTIAL 2:4 COUNT", "all"),
    ("SAVE PARTIAL 2:4 COUNT MIN", "all"),
])
def test_save_combinations(box, opts, saved):
    """3.2 table 1: what "$" holds after SAVE with PARTIAL."""
    ok(box, f"UID SEARCH RETURN ({opts}) UNDELETED")
    r = ok(box, "UID SEARCH $")
    got = [int(x) for x in r.untagged[0].split()[2:]]
    m = re.search(r"PARTIAL (-?\d+):(-?\d+)", opts)
    lo, hi = int(m.group(1)), int(m.group(2))
    want = set(window(UNDELETED, lo, hi))
    if "min" in saved:
        want.add(UNDELETED[0])
    if "max" in saved:
        want.add(UNDELETED[-1])
    if saved == "all":
        want = set(UNDELETED)
    assert got == sorted(want)


def sorted_model(c):
    """UIDs in (SUBJECT) order, from a plain UID SORT."""
    r = ok(c, "UID SORT (SUBJECT) UTF-8 UNDELETED")
    return [int(x) for x in r.untagged[0].split()[2:]]


@pytest.mark.parametrize("rng", ["1:5", "-1:-5", "20:30", "50:80", "-50:-80",
                                 "80:90"])
def test_esort_partial(box, rng):
    """ESORT with PARTIAL: positions in sort order (not UID order), the
    set written in that order."""
    order = sorted_model(box)
    r = ok(box, f"UID SORT RETURN (PARTIAL {rng}) (SUBJECT) UTF-8 UNDELETED")
    echoed, got = partial_of(esearch(r))
    lo, hi = (int(x) for x in rng.replace(":-", ":").split(":"))
    assert got == window(order, lo, hi)
    # and with SAVE: "$" holds the window
    ok(box, f"UID SORT RETURN (SAVE PARTIAL {rng}) (SUBJECT) UTF-8 UNDELETED")
    r = ok(box, "UID SEARCH $")
    saved = [int(x) for x in r.untagged[0].split()[2:]]
    assert saved == sorted(window(order, lo, hi) or [])


def test_uid_fetch_partial(box):
    """3.3, both examples: the last 3 and the first 5 of a UID range."""
    r = ok(box, "UID FETCH 25:60 (UID FLAGS) (PARTIAL -1:-3)")
    got = sorted(int(f["UID"]) for f in r.fetches().values())
    assert got == [58, 59, 60]
    r = ok(box, "UID FETCH 25:60 (UID FLAGS) (PARTIAL 1:5)")
    got = sorted(int(f["UID"]) for f in r.fetches().values())
    assert got == [25, 26, 27, 28, 29]
    r = ok(box, "UID FETCH 1:* (UID) (PARTIAL 100:200)")
    assert r.fetches() == {}


def test_uid_fetch_partial_changedsince(box):
    """3.4: the window first, then CHANGEDSINCE within it; either order
    of the modifiers."""
    r = ok(box, "UID FETCH 1:* (MODSEQ)")
    top = max(int(f["MODSEQ"][0]) for f in r.fetches().values())
    ok(box, "UID STORE 20,65,69 +FLAGS.SILENT (\\Flagged)")
    for mods in ("PARTIAL -1:-30 CHANGEDSINCE %d", "CHANGEDSINCE %d PARTIAL -1:-30"):
        r = ok(box, f"UID FETCH 1:* (UID FLAGS) ({mods % top})")
        got = sorted(int(f["UID"]) for f in r.fetches().values())
        assert got == [65, 69], r


@pytest.mark.parametrize("cmd", [
    "UID SEARCH RETURN (PARTIAL) ALL",
    "UID SEARCH RETURN (PARTIAL 1:*) ALL",
    "UID SEARCH RETURN (PARTIAL 0:5) ALL",
    "UID SEARCH RETURN (PARTIAL -1:5) ALL",
    "UID SEARCH RETURN (PARTIAL 1:-5) ALL",
    "UID SEARCH RETURN (PARTIAL 1) ALL",
    "UID SEARCH RETURN (PARTIAL 1:4294967296) ALL",
    "UID SEARCH RETURN (PARTIAL 1:5 PARTIAL 6:7) ALL",
    "UID SEARCH RETURN (PARTIAL 1:5 ALL) ALL",
    "UID SEARCH RETURN (ALL PARTIAL 1:5) ALL",
    "UID SORT RETURN (PARTIAL 1:5 ALL) (SUBJECT) UTF-8 ALL",
    "UID SORT RETURN (PARTIAL x) (SUBJECT) UTF-8 ALL",
    "FETCH 1:* (FLAGS) (PARTIAL 1:5)",
    "UID FETCH 1:* (FLAGS) (PARTIAL)",
    "UID FETCH 1:* (FLAGS) (PARTIAL 1:5 PARTIAL 1:5)",
    "UID FETCH 1:* (FLAGS) (PARTIAL -0:-5)",
])
def test_syntax_errors(box, cmd):
    """4 (partial-range: nz-number, both ends of one sign, no "*"); one of
    PARTIAL and ALL (3.1); the FETCH modifier only in UID FETCH (3.3)."""
    r = box.command(cmd)
    assert r.status == "BAD", r
    assert not r.untagged, r
