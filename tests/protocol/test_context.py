"""CONTEXT=SEARCH (RFC 5267 4): the CONTEXT hint (4.2), RETURN (UPDATE)
with ADDTO and REMOVEFROM as this and other sessions append, change
flags and expunge (4.3, 4.3.2-4.3.4, the section's examples), refusing
updates with NOUPDATE (4.3.1), CANCELUPDATE (4.3.5), PARTIAL with UPDATE
(4.4), the end of updates at UNSELECT, QRESYNC's VANISHED and UIDONLY.
A random model test keeps a client's view of the result from the
updates alone and compares it with a fresh search after every round.
Updates are waited for as conditions (the next tagged reply, or a line
during IDLE), never with sleeps."""

import os
import random
import re
import time

import pytest

from moatserver import IS_ROOT

WAKE_TIMEOUT = 10.0

UPDATE_RE = re.compile(
    rb'^\* ESEARCH \(TAG "([^"]*)"\)( UID)?((?: (?:ADDTO|REMOVEFROM) '
    rb'\([^)]*\))+)$')
ITEM_RE = re.compile(rb"(ADDTO|REMOVEFROM) \(([^)]*)\)")


def msg(n, subject="hello", body="text"):
    return (f"From: a@example.org\r\nSubject: {subject} {n}\r\n\r\n"
            f"{body} {n}\r\n").encode()


def ok(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    return r


def expand(s):
    out = []
    for part in s.split(","):
        if ":" in part:
            a, b = (int(x) for x in part.split(":"))
            out.extend(range(min(a, b), max(a, b) + 1))
        else:
            out.append(int(part))
    return out


def updates(lines, tag=None):
    """[(tag, uid, [(item, position, [numbers])])] of the update lines."""
    out = []
    for line in lines:
        m = UPDATE_RE.match(line)
        if not m or (tag is not None and m.group(1).decode() != tag):
            continue
        items = []
        for item, payload in ITEM_RE.findall(m.group(3)):
            words = payload.decode().split(" ")
            assert len(words) % 2 == 0, line
            for i in range(0, len(words), 2):
                items.append((item.decode(), int(words[i]),
                              expand(words[i + 1])))
        out.append((m.group(1).decode(), bool(m.group(2)), items))
    return out


def changes(lines, tag):
    """(added, removed) numbers of tag's updates in lines, in order."""
    added, removed = [], []
    for _, _, items in updates(lines, tag):
        for item, pos, nums in items:
            assert pos == 0
            (added if item == "ADDTO" else removed).extend(nums)
    return added, removed


def esearch_lines(r):
    return [l for l in r.untagged if l.startswith(b"* ESEARCH")]


def all_of(r):
    """The ALL set of the command's own ESEARCH (not an update)."""
    lines = [l for l in esearch_lines(r) if not UPDATE_RE.match(l)]
    assert len(lines) == 1, r
    m = re.search(rb" ALL (\S+)", lines[0])
    return expand(m.group(1).decode()) if m else []


def uid_search(c, keys):
    return all_of(ok(c, f"UID SEARCH RETURN (ALL) {keys}"))


@pytest.fixture
def two(moat_server):
    c = moat_server.login("testuser1")
    for i in range(1, 11):
        assert c.append("INBOX", msg(i)).ok
    ok(c, "SELECT INBOX")
    c2 = moat_server.login("testuser1")
    ok(c2, "SELECT INBOX")
    return moat_server, c, c2


def test_capability(moat_server):
    c = moat_server.login()
    caps = ok(c, "CAPABILITY").untagged[0].split()
    for cap in (b"CONTEXT=SEARCH", b"CONTEXT=SORT", b"ESEARCH", b"ESORT",
                b"SORT"):
        assert cap in caps


def test_context_hint(two):
    """4.2: CONTEXT is a hint; the answer is as without it."""
    _, c, _ = two
    ok(c, "STORE 3 +FLAGS ($Junk)")
    r = c.command("SEARCH RETURN (CONTEXT COUNT) UNDELETED UNKEYWORD $Junk",
                  tag="A01")
    assert r.ok
    assert esearch_lines(r) == [b'* ESEARCH (TAG "A01") COUNT 9']
    # CONTEXT alone answers as RETURN () does: ALL
    r = ok(c, "SEARCH RETURN (CONTEXT) UNKEYWORD $Junk")
    assert all_of(r) == [1, 2, 4, 5, 6, 7, 8, 9, 10]
    # UPDATE alone asks for no data (as Dovecot answers it)
    r = ok(c, "UID SEARCH RETURN (UPDATE) UNKEYWORD $Junk")
    assert r.untagged == [f'* ESEARCH (TAG "{r.tag}") UID'.encode()]
    r = ok(c, "SORT RETURN (UPDATE) (SUBJECT) UTF-8 ALL")
    assert r.untagged == [f'* ESEARCH (TAG "{r.tag}")'.encode()]
    r = ok(c, "SORT RETURN (CONTEXT) (SIZE) UTF-8 UNKEYWORD $Junk")
    assert all_of(r) == [1, 2, 4, 5, 6, 7, 8, 9, 10]


def test_update_example_and_tag_reuse(two):
    """4.3 and 4.3.3's examples: COUNT at first, then only ADDTO when
    messages come to match; another UPDATE with the tag is a BAD."""
    _, c, c2 = two
    r = c.command("UID SEARCH RETURN (UPDATE COUNT) DELETED KEYWORD $Junk",
                  tag="B01")
    assert r.ok
    assert esearch_lines(r) == [b'* ESEARCH (TAG "B01") UID COUNT 0']
    r = c.command("SORT RETURN (UPDATE) (DATE) UTF-8 FLAGGED", tag="B01")
    assert r.status == "BAD"
    r = c.command("SEARCH RETURN (UPDATE) FLAGGED", tag="B01")
    assert r.status == "BAD"
    # without UPDATE the tag may come again (it is the client's problem)
    assert c.command("SEARCH FLAGGED", tag="B01").ok
    ok(c2, "STORE 7:8 +FLAGS (\\Deleted $Junk)")
    r = ok(c, "NOOP")
    # after the FETCHes that caused it, as one set in mailbox order
    lines = r.untagged
    i = lines.index(b'* ESEARCH (TAG "B01") UID ADDTO (0 7:8)')
    assert any(l.startswith(b"* 8 FETCH") for l in lines[:i]), lines
    assert changes(lines, "B01") == ([7, 8], [])
    # a change that does not alter the result sends nothing
    ok(c2, "STORE 8 +FLAGS (\\Seen)")
    r = ok(c, "NOOP")
    assert updates(r.untagged) == []
    ok(c2, "STORE 7 -FLAGS ($Junk)")
    assert changes(ok(c, "NOOP").untagged, "B01") == ([], [7])


def test_expunge_removefrom_before_expunge(two):
    """4.3.4: REMOVEFROM before the EXPUNGE, with the number the message
    had; for UID SEARCH the UID."""
    _, c, c2 = two
    ok(c, "STORE 2,4,6 +FLAGS (\\Flagged)")
    r = ok(c, "SEARCH RETURN (UPDATE ALL) FLAGGED")
    assert all_of(r) == [2, 4, 6]
    seq_tag = r.tag
    r = ok(c, "UID SEARCH RETURN (UPDATE) FLAGGED")
    uid_tag = r.tag
    ok(c2, "STORE 4,5 +FLAGS.SILENT (\\Deleted)")
    ok(c2, "EXPUNGE")
    r = ok(c, "NOOP")
    lines = r.untagged
    rm = lines.index(f'* ESEARCH (TAG "{seq_tag}") REMOVEFROM (0 4)'.encode())
    assert lines.index(b"* 4 EXPUNGE") > rm, lines
    # 5 did not match: no REMOVEFROM for it
    assert changes(lines, seq_tag) == ([], [4])
    assert changes(lines, uid_tag) == ([], [4])
    assert lines.count(b"* 4 EXPUNGE") == 2
    # the result lives on with the numbers moved
    ok(c2, "STORE 1 +FLAGS (\\Flagged)")
    assert changes(ok(c, "NOOP").untagged, seq_tag) == ([1], [])
    ok(c2, "STORE 6 -FLAGS (\\Flagged)")    # UID 8, was seq 6 before
    r = ok(c, "NOOP")
    assert changes(r.untagged, seq_tag) == ([], [])
    ok(c2, "STORE 4 -FLAGS (\\Flagged)")    # UID 6
    r = ok(c, "NOOP")
    assert changes(r.untagged, seq_tag) == ([], [4])
    assert changes(r.untagged, uid_tag) == ([], [6])


def test_new_messages_after_exists(two):
    """4.3.3: an ADDTO of new messages comes after their EXISTS; one
    that does not match adds nothing."""
    _, c, c2 = two
    r = ok(c, "SEARCH RETURN (UPDATE COUNT) SUBJECT wanted")
    tag = r.tag
    assert c2.append("INBOX", msg(11, subject="wanted")).ok
    assert c2.append("INBOX", msg(12)).ok
    assert c2.append("INBOX", msg(13, subject="wanted")).ok
    lines = ok(c, "NOOP").untagged
    ex = lines.index(b"* 13 EXISTS")
    add = lines.index(f'* ESEARCH (TAG "{tag}") ADDTO (0 11,13)'.encode())
    assert add > ex, lines
    # this session's own APPEND too (its EXISTS comes with the OK)
    r = c.append("INBOX", msg(14, subject="Wanted"))
    assert r.ok
    assert changes(r.untagged, tag) == ([14], [])


def test_own_store_and_seen(two):
    """This session's own STORE (also .SILENT) and the \\Seen a body
    FETCH sets change the result too."""
    _, c, _ = two
    r = ok(c, "UID SEARCH RETURN (UPDATE) UNSEEN")
    tag = r.tag
    r = ok(c, "STORE 1:3 +FLAGS (\\Seen)")
    assert changes(r.untagged, tag) == ([], [1, 2, 3])
    r = ok(c, "STORE 2 -FLAGS.SILENT (\\Seen)")
    assert changes(r.untagged, tag) == ([2], [])
    r = ok(c, "FETCH 5 BODY[TEXT]")
    assert changes(r.untagged, tag) == ([], [5])
    # BODY.PEEK sets nothing
    r = ok(c, "FETCH 6 BODY.PEEK[TEXT]")
    assert updates(r.untagged) == []
    assert uid_search(c, "UNSEEN") == [2, 4, 6, 7, 8, 9, 10]


def test_updates_during_idle(two):
    """4.3.2: updates may come at any time; during IDLE they come with
    the FETCH or EXISTS that caused them."""
    _, c, c2 = two
    r = ok(c, "UID SEARCH RETURN (UPDATE) FLAGGED")
    tag = r.tag
    itag = c.next_tag()
    c.send(f"{itag} IDLE\r\n")
    assert c.read_line().startswith(b"+ ")
    ok(c2, "STORE 9 +FLAGS (\\Flagged)")
    want = f'* ESEARCH (TAG "{tag}") UID ADDTO (0 9)'.encode()
    deadline = time.monotonic() + WAKE_TIMEOUT
    seen = []
    while want not in seen:
        line = c.read_line_within(max(0.0, deadline - time.monotonic()))
        assert line is not None, f"no update within {WAKE_TIMEOUT}s: {seen}"
        seen.append(line)
    c.send("DONE\r\n")
    assert c.read_tagged(itag).ok


def test_cancelupdate(two):
    """4.3.5: no updates after CANCELUPDATE; several tags at once; an
    unknown tag is a NO that cancels nothing; syntax errors are BAD."""
    _, c, c2 = two
    a = ok(c, "SEARCH RETURN (UPDATE) FLAGGED").tag
    b = ok(c, "SEARCH RETURN (UPDATE) DELETED").tag
    d = ok(c, "SEARCH RETURN (UPDATE) SEEN").tag
    assert c.command("CANCELUPDATE").status == "BAD"
    assert c.command("CANCELUPDATE (x)").status == "BAD"
    r = c.command(f'CANCELUPDATE "{a}" "nosuch"')
    assert r.status == "NO"
    r = c.command(f'CANCELUPDATE "{a}" "{b}"', tag="B04")
    assert r.ok and r.line == b"B04 OK No further updates."
    ok(c2, "STORE 1 +FLAGS (\\Flagged \\Deleted \\Seen)")
    r = ok(c, "NOOP")
    assert [u[0] for u in updates(r.untagged)] == [d]
    assert c.command(f'CANCELUPDATE "{a}"').status == "NO"
    # the tag is free again
    r = c.command("SEARCH RETURN (UPDATE) FLAGGED", tag=a)
    assert r.ok
    # CANCELUPDATE needs a selected mailbox
    ok(c, "UNSELECT")
    assert c.command(f'CANCELUPDATE "{d}"').status == "BAD"


@pytest.mark.moat_settings(imap_max_update_contexts="2")
def test_limit_noupdate(two):
    """4.3.1: past the limit an untagged NO [NOUPDATE "tag"], the other
    options still answered, and the OK; a cancelled context frees a
    place."""
    _, c, c2 = two
    ok(c, "STORE 1 +FLAGS ($Junk)")
    t1 = ok(c, "UID SEARCH RETURN (UPDATE) FLAGGED").tag
    ok(c, "UID SEARCH RETURN (UPDATE) DELETED")
    r = c.command("UID SEARCH RETURN (UPDATE COUNT) KEYWORD $Junk",
                  tag="B02")
    assert r.ok
    assert r.untagged == [b'* ESEARCH (TAG "B02") UID COUNT 1',
                          b'* NO [NOUPDATE "B02"] Too many update contexts.']
    ok(c2, "STORE 2 +FLAGS ($Junk)")
    assert changes(ok(c, "NOOP").untagged, "B02") == ([], [])
    ok(c, f'CANCELUPDATE "{t1}"')
    r = c.command("UID SEARCH RETURN (UPDATE COUNT) KEYWORD $Junk",
                  tag="B03")
    assert r.ok and not any(b"NOUPDATE" in l for l in r.untagged)
    ok(c2, "STORE 3 +FLAGS ($Junk)")
    assert changes(ok(c, "NOOP").untagged, "B03") == ([3], [])


def test_sequence_set_program_updated(two):
    """Message numbers in the program are those of the command's time
    (RFC 5267 4.3): they keep naming those messages after an expunge
    renumbers them, "*" is the last message then, and new messages are
    not in the set. UID sets and $ are updated as they are."""
    _, c, c2 = two
    r = ok(c, "SEARCH RETURN (UPDATE) 1:5 FLAGGED")
    tag = r.tag
    assert not any(b"NOUPDATE" in l for l in r.untagged), r
    star = ok(c, "UID SORT RETURN (UPDATE) (ARRIVAL) UTF-8 9:* FLAGGED").tag
    ok(c2, "STORE 3 +FLAGS (\\Flagged)")
    assert changes(ok(c, "NOOP").untagged, tag) == ([3], [])
    ok(c2, "STORE 1 +FLAGS.SILENT (\\Deleted)")
    ok(c2, "EXPUNGE")
    ok(c, "NOOP")
    # UID 6 is message 5 now, but was 6 when the search came
    ok(c2, "STORE 5 +FLAGS (\\Flagged)")
    lines = ok(c, "NOOP").untagged
    assert changes(lines, tag) == ([], [])
    # UID 5 (message 4 now) was message 5 then
    ok(c2, "STORE 4 +FLAGS (\\Flagged)")
    assert changes(ok(c, "NOOP").untagged, tag) == ([4], [])
    # UID 10 was message 10, "*" then; UID 9 was 9
    ok(c2, "STORE 8:9 +FLAGS (\\Flagged)")
    lines = ok(c, "NOOP").untagged
    assert updates(lines, star) == [(star, True, [("ADDTO", 1, [9]),
                                                  ("ADDTO", 2, [10])])]
    # a new message is none of them
    assert c2.append("INBOX", msg(11), flags=["\\Flagged"]).ok
    lines = ok(c, "NOOP").untagged
    assert b"* 10 EXISTS" in lines
    assert updates(lines) == [], lines
    r = ok(c, "SEARCH RETURN (UPDATE) UID 1:5 FLAGGED")
    assert not any(b"NOUPDATE" in l for l in r.untagged)
    ok(c, "SEARCH RETURN (SAVE) UID 2:3")
    r = ok(c, "UID SEARCH RETURN (UPDATE) $ FLAGGED")
    tag = r.tag
    assert not any(b"NOUPDATE" in l for l in r.untagged)
    r = ok(c, "STORE 1:4 -FLAGS (\\Flagged)")
    assert changes(r.untagged, tag) == ([], [3])


def test_partial_with_update(two):
    """4.4: PARTIAL answers its window; the updates cover all results,
    also those outside it."""
    _, c, c2 = two
    r = ok(c, "UID SEARCH RETURN (UPDATE PARTIAL 1:3) UNFLAGGED")
    tag = r.tag
    assert esearch_lines(r) == [
        f'* ESEARCH (TAG "{tag}") UID PARTIAL (1:3 1:3)'.encode()]
    ok(c2, "STORE 9 +FLAGS (\\Flagged)")
    assert changes(ok(c, "NOOP").untagged, tag) == ([], [9])
    r = ok(c, "UID SEARCH RETURN (PARTIAL -1:-2 UPDATE) UNFLAGGED")
    assert esearch_lines(r)[0].endswith(b"PARTIAL (-1:-2 8,10)")


def test_updates_end_with_the_mailbox(two):
    """4.3: updates cease when the mailbox is no longer selected."""
    _, c, c2 = two
    tag = ok(c, "SEARCH RETURN (UPDATE) FLAGGED").tag
    ok(c, "SELECT INBOX")
    ok(c2, "STORE 1 +FLAGS (\\Flagged)")
    assert updates(ok(c, "NOOP").untagged) == []
    # and the tag is free again
    r = c.command("SEARCH RETURN (UPDATE) FLAGGED", tag=tag)
    assert r.ok
    ok(c, "UNSELECT")
    ok(c, "SELECT INBOX")
    ok(c2, "STORE 2 +FLAGS (\\Flagged)")
    assert updates(ok(c, "NOOP").untagged) == []


def test_qresync_vanished(moat_server):
    """With QRESYNC the expunge is a VANISHED; the REMOVEFROM of a
    sequence-number search still comes before it."""
    c = moat_server.login()
    for i in range(1, 6):
        assert c.append("INBOX", msg(i)).ok
    ok(c, "ENABLE QRESYNC")
    ok(c, "SELECT INBOX")
    c2 = moat_server.login()
    ok(c2, "SELECT INBOX")
    ok(c, "STORE 2:4 +FLAGS (\\Flagged)")
    seq_tag = ok(c, "SEARCH RETURN (UPDATE) FLAGGED").tag
    uid_tag = ok(c, "UID SEARCH RETURN (UPDATE) FLAGGED").tag
    ok(c2, "STORE 3:5 +FLAGS.SILENT (\\Deleted)")
    ok(c2, "EXPUNGE")
    lines = ok(c, "NOOP").untagged
    van = lines.index(b"* VANISHED 3:5")
    assert changes(lines, seq_tag) == ([], [3, 3])
    assert changes(lines, uid_tag) == ([], [3, 4])
    for i, l in enumerate(lines):
        if UPDATE_RE.match(l) and l.startswith(f'* ESEARCH (TAG "{seq_tag}"'
                                               .encode()):
            assert i < van, lines


def test_uidonly(moat_server):
    """UIDONLY (RFC 9586): UID SEARCH updates in UIDs; SEARCH is refused
    as ever."""
    c = moat_server.login()
    for i in range(1, 4):
        assert c.append("INBOX", msg(i)).ok
    ok(c, "ENABLE UIDONLY")
    ok(c, "SELECT INBOX")
    tag = ok(c, "UID SEARCH RETURN (UPDATE) UNSEEN").tag
    r = ok(c, "UID STORE 2 +FLAGS (\\Seen)")
    assert changes(r.untagged, tag) == ([], [2])
    assert c.command("SEARCH RETURN (UPDATE) UNSEEN").status == "BAD"


def test_modseq_with_partial(two):
    """RFC 4731 3.2 with RFC 9394: with PARTIAL (also with MIN) the
    MODSEQ is the highest of all matches, not of the window."""
    _, c, _ = two
    # the newest change is outside every window below
    ok(c, "STORE 1 +FLAGS (\\Answered)")
    ok(c, "STORE 9 +FLAGS (\\Flagged)")
    r = ok(c, "FETCH 9 (MODSEQ)")
    high = int(re.search(rb"MODSEQ \((\d+)\)", b" ".join(r.untagged))
               .group(1))
    low = int(re.search(rb"MODSEQ \((\d+)\)", b" ".join(
        ok(c, "FETCH 1 (MODSEQ)").untagged)).group(1))
    assert low < high
    for ret in ("PARTIAL 1:2", "PARTIAL 1:2 MIN", "MIN PARTIAL 1:1 UPDATE"):
        r = ok(c, f"UID SEARCH RETURN ({ret}) MODSEQ 1")
        line = esearch_lines(r)[0]
        assert line.endswith(b" MODSEQ %d" % high), (ret, line)
        r = ok(c, f"UID SORT RETURN ({ret.replace(' UPDATE', '')}) "
               "(ARRIVAL) UTF-8 MODSEQ 1")
        line = esearch_lines(r)[0]
        assert line.endswith(b" MODSEQ %d" % high), (ret, line)


KEYS = ["FLAGGED", "UNSEEN", "OR FLAGGED DELETED", "NOT KEYWORD k1",
        "SUBJECT odd", "LARGER 60"]
SORTS = ["(SUBJECT)", "(REVERSE ARRIVAL)", "(SIZE)", "(REVERSE SUBJECT SIZE)"]


def apply_updates(model, line, uid):
    """Apply one update line to model {tag: [numbers in order]} as a
    client must (RFC 5267 4.3.2-4.3.4: pairs in order; position 0 keeps
    mailbox order); checks each change is possible. Returns the items
    applied."""
    applied = []
    for t, is_uid, items in updates([line]):
        assert is_uid == uid, line
        res = model[t]
        for item, pos, nums in items:
            if item == "ADDTO":
                assert not (set(nums) & set(res)), (line, res)
                if pos == 0:
                    res.extend(nums)
                    res.sort()
                else:
                    assert 1 <= pos <= len(res) + 1, (line, res)
                    res[pos - 1:pos - 1] = nums
            elif pos == 0:
                assert set(nums) <= set(res), (line, res)
                model[t] = res = [x for x in res if x not in nums]
            else:
                assert res[pos - 1:pos - 1 + len(nums)] == nums, (line, res)
                del res[pos - 1:pos - 1 + len(nums)]
            applied.append(item)
    return applied


@pytest.mark.parametrize("uid", [True, False], ids=["uid", "seq"])
@pytest.mark.parametrize("sort", [False, True], ids=["search", "sort"])
def test_model(two, uid, sort):
    """Random appends, flag changes and expunges by both sessions; the
    client's result kept from the updates (positions, numbers moved by
    EXPUNGE, each REMOVEFROM before the EXPUNGE of its message) equals a
    new SEARCH or SORT after every round."""
    _, c, c2 = two
    rnd = random.Random(5267 + 2 * uid + sort)
    prefix = "UID " if uid else ""
    cmds = {}
    model = {}
    for i, keys in enumerate(KEYS):
        if sort:
            cmd = f"{prefix}SORT RETURN (%s) {SORTS[i % len(SORTS)]} UTF-8 {keys}"
        else:
            cmd = f"{prefix}SEARCH RETURN (%s) {keys}"
        r = ok(c, cmd % "UPDATE ALL")
        assert not any(b"NOUPDATE" in l for l in r.untagged), r
        cmds[r.tag] = cmd % "ALL"
        model[r.tag] = all_of(r)
    n = 10
    applied = []
    for rnd_no in range(40):
        actor = rnd.choice([c, c2])
        lines = []

        def run(cmd):
            r = actor.command(cmd)
            assert r.ok, r
            if actor is c:
                lines.extend(r.untagged)

        op = rnd.random()
        if op < 0.25:
            n += 1
            subj = rnd.choice(["odd", "even", "Re: odd", "zzz"])
            body = "x" * rnd.randrange(1, 40)
            r = actor.append("INBOX", msg(n, subject=subj, body=body),
                             flags=rnd.choice([None, ["\\Flagged"],
                                               ["\\Seen", "k1"]]))
            assert r.ok
            if actor is c:
                lines.extend(r.untagged)
        elif op < 0.8:
            flag = rnd.choice(["\\Flagged", "\\Seen", "\\Deleted", "k1"])
            lo = rnd.randrange(1, 8)
            run(f"UID STORE {lo}:{lo + rnd.randrange(5)},"
                f"{rnd.randrange(1, n + 1)} {rnd.choice('+-')}FLAGS ({flag})")
        else:
            run("UID STORE %d:%d +FLAGS.SILENT (\\Deleted)" %
                tuple(sorted((rnd.randrange(1, n + 1),
                              rnd.randrange(1, n + 1)))))
            run("EXPUNGE")
        lines.extend(ok(c, "NOOP").untagged)
        for line in lines:
            m = re.match(rb"^\* (\d+) EXPUNGE$", line)
            if m and not uid:
                e = int(m.group(1))
                for t in model:
                    # 4.3.4: its REMOVEFROM came first
                    assert e not in model[t], (cmds[t], line, lines)
                    model[t] = [s - 1 if s > e else s for s in model[t]]
                continue
            applied += apply_updates(model, line, uid)
        for t, cmd in cmds.items():
            want = all_of(ok(c, cmd))
            assert model[t] == want, (rnd_no, cmd, lines)
    # the rounds did change the results both ways
    assert applied.count("ADDTO") >= 5 and applied.count("REMOVEFROM") >= 5


def test_sort_update_positions(two):
    """CONTEXT=SORT (4.3.3, 4.3.4): ADDTO and REMOVEFROM carry the
    position in sort order; an expunge's REMOVEFROM comes before its
    EXPUNGE with the number the message had."""
    server, c, c2 = two
    # subjects "hello 1".."hello 10" sort as 1, 10, 2, 3, ...
    r = ok(c, "SORT RETURN (UPDATE ALL) (SUBJECT) UTF-8 FLAGGED")
    tag = r.tag
    assert all_of(r) == []
    ok(c2, "STORE 3 +FLAGS (\\Flagged)")
    assert updates(ok(c, "NOOP").untagged, tag) == [
        (tag, False, [("ADDTO", 1, [3])])]
    ok(c2, "STORE 10,1 +FLAGS (\\Flagged)")
    r = ok(c, "NOOP")
    model = {tag: [3]}
    for line in r.untagged:
        apply_updates(model, line, False)
    assert model[tag] == [1, 10, 3]
    ok(c2, "STORE 1 +FLAGS.SILENT (\\Deleted)")
    ok(c2, "EXPUNGE")
    lines = ok(c, "NOOP").untagged
    rm = lines.index(f'* ESEARCH (TAG "{tag}") REMOVEFROM (1 1)'.encode())
    assert lines.index(b"* 1 EXPUNGE") > rm
    r = ok(c, "UID SORT RETURN (UPDATE) (REVERSE SUBJECT) UTF-8 ALL")
    utag = r.tag
    assert c2.append("INBOX", msg(0)).ok   # "hello 0" sorts last reversed
    lines = ok(c, "NOOP").untagged
    assert updates(lines, utag) == [(utag, True, [("ADDTO", 10, [11])])]
    # 4.3.1's example: UID SORT with UPDATE COUNT
    r = c.command("UID SORT RETURN (UPDATE COUNT) UTF-8 KEYWORD $Junk",
                  tag="B02")
    assert r.status == "BAD"   # no sort criteria: a syntax error
    r = c.command("UID SORT RETURN (UPDATE COUNT) (ARRIVAL) UTF-8 "
                  "KEYWORD $Junk", tag="B02")
    assert r.ok and r.untagged == [b'* ESEARCH (TAG "B02") UID COUNT 0']


def test_long_updates_are_cut(moat_server):
    """An update of thousands of scattered messages comes as several
    complete ESEARCH responses of about 8 KiB, for SEARCH (sets) and
    SORT (position pairs), and the client's result is right."""
    c = moat_server.login()
    total = 4000
    # as another Maildir writer would (APPENDing them costs a minute
    # under the sanitizers)
    md = moat_server.maildir("testuser1")
    user = moat_server.users["testuser1"]
    for i in range(total):
        name = f"{1700000000 + i}.M{i}P1.host"
        p = md / "cur" / (name + ":2,")
        p.write_bytes(f"Subject: m{i}\r\n\r\nb\r\n".encode())
        if IS_ROOT:
            os.chown(p, user["uid"], user["gid"])
    ok(c, "SELECT INBOX")
    c2 = moat_server.login()
    ok(c2, "SELECT INBOX")
    stag = ok(c, "UID SEARCH RETURN (UPDATE) FLAGGED").tag
    otag = ok(c, "UID SORT RETURN (UPDATE) (REVERSE ARRIVAL) UTF-8 "
                 "FLAGGED").tag
    odd = list(range(1, total + 1, 2))
    ok(c2, "UID STORE %s +FLAGS.SILENT (\\Flagged)" %
       ",".join(str(u) for u in odd))
    lines = ok(c, "NOOP").untagged
    model = {stag: [], otag: []}
    counts = {stag: 0, otag: 0}
    for line in lines:
        u = updates([line])
        if not u:
            continue
        assert len(line) < 8192 + 64, len(line)
        counts[u[0][0]] += 1
        apply_updates(model, line, True)
    assert counts[stag] >= 2 and counts[otag] >= 2, counts
    assert model[stag] == odd
    # INTERNALDATE ties (same second) fall back to mailbox order
    assert model[otag] == all_of(ok(c, "UID SORT RETURN (ALL) "
                                       "(REVERSE ARRIVAL) UTF-8 FLAGGED"))


# ---- RFC 5465 7: UPDATE (fetch-att ...) of SEARCH and SORT

BOSS = (b"From: myboss@example.org\r\nTo: bob@example.org\r\n"
        b"Subject: Re: good morning\r\n\r\nhi\r\n")


def fetch_lines(lines, seq=None):
    pat = rb"^\* %s FETCH " % (str(seq).encode() if seq else rb"\d+")
    return [i for i, l in enumerate(lines) if re.match(pat, l)]


def test_update_fetch_example(two):
    """RFC 5465 7's example: RETURN (COUNT UPDATE (UID BODY[...])); a new
    message that joins the result gets the FETCH after its EXISTS and
    before the ESEARCH that adds it. No NOTIFY SET is needed: the
    option is the SEARCH's. A new message that does not match gets
    nothing."""
    _, c, c2 = two
    r = c.command('SEARCH RETURN (COUNT UPDATE (UID BODY[HEADER.FIELDS '
                  '(TO FROM SUBJECT)])) FROM "boss"', tag="a00")
    assert r.ok
    assert esearch_lines(r) == [b'* ESEARCH (TAG "a00") COUNT 0']
    assert c2.append("INBOX", msg(11)).ok
    assert c2.append("INBOX", BOSS).ok
    lines = ok(c, "NOOP").untagged
    ex = lines.index(b"* 12 EXISTS")
    add = lines.index(b'* ESEARCH (TAG "a00") ADDTO (0 12)')
    assert fetch_lines(lines) == [i for i in fetch_lines(lines)
                                  if ex < i < add], lines
    f = [parse_fetch_items(lines[i]) for i in fetch_lines(lines, 12)]
    body = [x for x in f if "BODY[HEADER.FIELDS (TO FROM SUBJECT)]" in x]
    assert len(body) == 1, lines
    assert body[0]["UID"] == "12"
    hdr = body[0]["BODY[HEADER.FIELDS (TO FROM SUBJECT)]"]
    assert b"From: myboss@example.org" in hdr and b"Subject: Re:" in hdr
    assert b"To: bob@example.org" in hdr
    # message 11 did not join: no FETCH of it
    assert fetch_lines(lines, 11) == [], lines


def parse_fetch_items(line):
    from moatimap import parse_fetch
    return parse_fetch(line)[1]


def test_update_fetch_not_for_flag_changes(two):
    """RFC 5465 7: no FETCH of the fetch-atts when a message joins
    through a flag change (the FLAGS FETCH of the change itself comes as
    always); UID SEARCH and the UID added to the atts."""
    _, c, c2 = two
    r = ok(c, "UID SEARCH RETURN (UPDATE (RFC822.SIZE)) FLAGGED")
    tag = r.tag
    ok(c2, "STORE 4 +FLAGS (\\Flagged)")
    lines = ok(c, "NOOP").untagged
    assert changes(lines, tag) == ([4], [])
    for i in fetch_lines(lines):
        assert b"RFC822.SIZE" not in lines[i], lines
    # a new flagged message does get it, with its UID
    assert c2.append("INBOX", msg(11), flags=["\\Flagged"]).ok
    lines = ok(c, "NOOP").untagged
    ex = lines.index(b"* 11 EXISTS")
    add = lines.index(f'* ESEARCH (TAG "{tag}") UID ADDTO (0 11)'.encode())
    sized = [i for i in fetch_lines(lines, 11) if b"RFC822.SIZE" in lines[i]]
    assert len(sized) == 1 and ex < sized[0] < add, lines
    assert parse_fetch_items(lines[sized[0]])["UID"] == "11"


def test_update_fetch_sort_own_append_and_idle(two):
    """SORT too; this session's own APPEND adds to the result (the
    FETCH comes with the APPEND's reply); during IDLE the FETCH comes
    between the EXISTS and the ESEARCH as well."""
    _, c, c2 = two
    r = ok(c, "SORT RETURN (UPDATE (FLAGS)) (SUBJECT) UTF-8 SUBJECT wanted")
    tag = r.tag
    r = c.append("INBOX", msg(11, subject="wanted"))
    assert r.ok
    lines = r.untagged
    ex = lines.index(b"* 11 EXISTS")
    add = lines.index(f'* ESEARCH (TAG "{tag}") ADDTO (1 11)'.encode())
    assert [i for i in fetch_lines(lines, 11) if ex < i < add], lines
    itag = c.next_tag()
    c.send(f"{itag} IDLE\r\n")
    assert c.read_line().startswith(b"+ ")
    assert c2.append("INBOX", msg(12)).ok
    assert c2.append("INBOX", msg(13, subject="wanted")).ok
    want = f'* ESEARCH (TAG "{tag}") ADDTO (2 13)'.encode()
    deadline = time.monotonic() + WAKE_TIMEOUT
    seen = []
    while want not in seen:
        line = c.read_line_within(max(0.0, deadline - time.monotonic()))
        assert line is not None, f"no update within {WAKE_TIMEOUT}s: {seen}"
        seen.append(line)
    c.send("DONE\r\n")
    assert c.read_tagged(itag).ok
    ex = seen.index(b"* 13 EXISTS")
    f13 = fetch_lines(seen, 13)
    assert len(f13) == 1 and ex < f13[0] < len(seen) - 1, seen
    assert fetch_lines(seen, 12) == [], seen


def test_update_fetch_syntax(two):
    """RFC 5465 8: modifier-update = "UPDATE" ["(" fetch-att ...")"]: an
    empty list or an attribute FETCH refuses is a BAD, and no context
    is left behind (the tag may be used again)."""
    _, c, _ = two
    for bad in ("UPDATE ()", "UPDATE (NOSUCHATT)", "UPDATE (UID) UPDATE (UID)",
                "UPDATE (BODY[NOSUCH])"):
        r = c.command(f"SEARCH RETURN ({bad}) ALL", tag="S1")
        assert r.status == "BAD", (bad, r)
        r = c.command(f"SORT RETURN ({bad}) (ARRIVAL) UTF-8 ALL", tag="S1")
        assert r.status == "BAD", (bad, r)
    r = c.command("SEARCH RETURN (UPDATE (UID)) ALL", tag="S1")
    assert r.ok and r.untagged == [b'* ESEARCH (TAG "S1")']


def test_update_fetch_with_notify(two):
    """With a NOTIFY set whose MessageNew has fetch-atts both FETCHes
    come after the EXISTS; the context's precedes its ESEARCH."""
    _, c, c2 = two
    r = ok(c, "NOTIFY SET (selected (MessageNew (UID FLAGS) "
              "MessageExpunge))")
    r = ok(c, "UID SEARCH RETURN (UPDATE (UID RFC822.SIZE)) SUBJECT wanted")
    tag = r.tag
    assert c2.append("INBOX", msg(11, subject="wanted")).ok
    lines = []
    want = f'* ESEARCH (TAG "{tag}") UID ADDTO (0 11)'.encode()
    deadline = time.monotonic() + WAKE_TIMEOUT
    while want not in lines or not any(
            b"FLAGS" in lines[i] and b"RFC822.SIZE" not in lines[i]
            for i in fetch_lines(lines, 11)):
        line = c.read_line_within(max(0.0, deadline - time.monotonic()))
        assert line is not None, f"nothing within {WAKE_TIMEOUT}s: {lines}"
        lines.append(line)
    ex = lines.index(b"* 11 EXISTS")
    sized = [i for i in fetch_lines(lines, 11) if b"RFC822.SIZE" in lines[i]]
    assert len(sized) == 1 and ex < sized[0] < lines.index(want), lines


def test_update_fetch_many_new(moat_server):
    """Thousands of new messages with scattered matches: the FETCH goes
    in several sequence sets, each message once, all before the
    ESEARCH."""
    c = moat_server.login()
    ok(c, "SELECT INBOX")
    tag = ok(c, "UID SEARCH RETURN (UPDATE (UID)) SUBJECT odd").tag
    total = 4000
    md = moat_server.maildir("testuser1")
    user = moat_server.users["testuser1"]
    for i in range(total):
        name = f"{1700000000 + i}.M{i}P1.host"
        p = md / "cur" / (name + ":2,")
        subject = "odd" if i % 2 == 0 else "even"
        p.write_bytes(f"Subject: {subject} {i}\r\n\r\nb\r\n".encode())
        if IS_ROOT:
            os.chown(p, user["uid"], user["gid"])
    lines = ok(c, "NOOP").untagged
    ex = lines.index(f"* {total} EXISTS".encode())
    first_update = min(i for i, l in enumerate(lines) if UPDATE_RE.match(l))
    fetched = []
    for i in fetch_lines(lines):
        assert ex < i < first_update, (i, ex, first_update)
        fetched.append(int(parse_fetch_items(lines[i])["UID"]))
    odd = list(range(1, total + 1, 2))
    assert fetched == odd
    assert changes(lines, tag) == (odd, [])
