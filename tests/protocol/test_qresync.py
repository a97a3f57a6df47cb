"""QRESYNC (RFC 7162 3.2): ENABLE QRESYNC, SELECT/EXAMINE (QRESYNC ...)
with VANISHED (EARLIER) for exactly the expunged UIDs and FETCH for
exactly the changed ones, UID FETCH (CHANGEDSINCE VANISHED), VANISHED
instead of EXPUNGE, HIGHESTMODSEQ after EXPUNGE, CLOSED, the fallback
when the history is gone (3.2.5.2) and the error paths."""

import os
import re

import pytest

from test_condstore import fill, ok, highestmodseq, flags


def uidvalidity(r):
    for line in r.untagged:
        m = re.search(rb"\[UIDVALIDITY (\d+)\]", line)
        if m:
            return int(m.group(1))
    return None


def uid_set(text):
    out = set()
    for part in text.split(","):
        if ":" in part:
            a, b = part.split(":")
            out.update(range(min(int(a), int(b)), max(int(a), int(b)) + 1))
        else:
            out.add(int(part))
    return out


def vanished(r, earlier=True):
    """The UIDs of the VANISHED (EARLIER) (or plain VANISHED) lines."""
    prefix = b"* VANISHED (EARLIER) " if earlier else b"* VANISHED "
    out = set()
    for line in r.untagged:
        if line.startswith(prefix):
            rest = line[len(prefix):].decode()
            if not earlier and rest.startswith("("):
                continue
            out |= uid_set(rest)
    return out


def uid_fetches(r):
    """{uid: items} of the FETCH responses."""
    return {int(i["UID"]): i for i in r.fetches().values() if "UID" in i}


@pytest.fixture
def box(moat_server):
    c = moat_server.login("testuser1")
    fill(c, 10)
    ok(c, "ENABLE QRESYNC")
    r = ok(c, "SELECT INBOX")
    return moat_server, c, uidvalidity(r), highestmodseq(r)


def other_session(server):
    o = server.login("testuser1")
    ok(o, "SELECT INBOX")
    return o


def expunge_uids(o, uids):
    ok(o, f"UID STORE {','.join(map(str, uids))} +FLAGS.SILENT (\\Deleted)")
    ok(o, f"UID EXPUNGE {','.join(map(str, uids))}")


def test_qresync_needs_enable(moat_server):
    """3.2.3, 3.2.5: QRESYNC without ENABLE QRESYNC is BAD, and the
    mailbox selected before stays selected."""
    c = moat_server.login()
    fill(c, 2)
    ok(c, "SELECT INBOX")
    r = c.command("SELECT INBOX (QRESYNC (1 1))")
    assert r.status == "BAD", r
    assert ok(c, "FETCH 1 FLAGS")


@pytest.mark.parametrize("param", [
    "(QRESYNC)", "(QRESYNC ())", "(QRESYNC (1))", "(QRESYNC (0 1))",
    "(QRESYNC (1 0))", "(QRESYNC (x 1))", "(QRESYNC (1 1 1:*))",
    "(QRESYNC (1 1 1:5 (1:2)))", "(QRESYNC (1 1 1:5 (1 2) x))",
    "(QRESYNC (4294967296 1))", "(QRESYNC (1 9223372036854775808))",
    "(UNKNOWN)", "(QRESYNC (1 1) QRESYNC (1 1))", "()x", "CONDSTORE"])
def test_qresync_syntax_errors(box, param):
    server, c, uv, hm = box
    r = c.command(f"SELECT INBOX {param}")
    assert r.status == "BAD", r
    assert ok(c, "FETCH 1 FLAGS")    # still selected


def test_uidvalidity_mismatch(box):
    """3.2.5: another UIDVALIDITY: nothing but the usual answer."""
    server, c, uv, hm = box
    o = other_session(server)
    expunge_uids(o, [3])
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv + 1} 1 1:10))")
    assert vanished(r) == set() and r.fetches() == {}, r
    assert highestmodseq(r) is not None


def test_qresync_exact_changes(box):
    """3.2.5.1 (the A03 example): VANISHED (EARLIER) for exactly the
    known UIDs expunged since the modseq, FETCH (UID FLAGS MODSEQ) for
    exactly the changed ones, after the status lines; [CLOSED] first."""
    server, c, uv, hm = box
    o = other_session(server)
    ok(o, "UID STORE 2,7 +FLAGS (\\Seen)")
    expunge_uids(o, [4, 5, 9])
    ok(o, "UID STORE 8 +FLAGS ($Work)")
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm}))")
    assert b"[CLOSED]" in r.untagged[0], r
    assert vanished(r) == {4, 5, 9}, r
    f = uid_fetches(r)
    assert sorted(f) == [2, 7, 8], r
    assert flags(f[2]) == {"\\Seen"} and "$Work" in flags(f[8])
    assert all(int(i["MODSEQ"][0]) > hm for i in f.values())
    # VANISHED (EARLIER) after every status line, before the FETCHes
    pos = [i for i, l in enumerate(r.untagged) if b"VANISHED" in l][0]
    assert pos > max(i for i, l in enumerate(r.untagged)
                     if b"HIGHESTMODSEQ" in l or b"EXISTS" in l)
    assert all(b"FETCH" not in l for l in r.untagged[:pos])
    assert b"* 7 EXISTS" in r.untagged
    # sequence numbers of the FETCHes are those of the new state
    assert r.fetches()[2]["UID"] == "2" and r.fetches()[5]["UID"] == "7"
    # nothing since the new HIGHESTMODSEQ
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {highestmodseq(r)}))")
    assert vanished(r) == set() and r.fetches() == {}, r


def test_qresync_modseq_above_highest(box):
    """A modseq above HIGHESTMODSEQ is no error: nothing changed after it
    (Dovecot answers the same)."""
    server, c, uv, hm = box
    expunge_uids(other_session(server), [2])
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm + 1000} 1:10))")
    assert vanished(r) == set() and r.fetches() == {}, r
    assert highestmodseq(r) < hm + 1000


def test_qresync_known_uids_restrict(box):
    """3.2.5.1: only the known UIDs are reported."""
    server, c, uv, hm = box
    o = other_session(server)
    ok(o, "UID STORE 1,6 +FLAGS (\\Flagged)")
    expunge_uids(o, [2, 8])
    r = ok(c, f"EXAMINE INBOX (QRESYNC ({uv} {hm} 1:5))")
    assert vanished(r) == {2}, r
    assert sorted(uid_fetches(r)) == [1], r
    r = ok(c, f"EXAMINE INBOX (QRESYNC ({uv} {hm} 6,8,20:30))")
    assert vanished(r) == {8}, r
    assert sorted(uid_fetches(r)) == [6], r


def test_qresync_modseq_between_changes(box):
    """Only what happened after the given modseq, however many changes
    came before it."""
    server, c, uv, hm = box
    o = other_session(server)
    expunge_uids(o, [1])
    ok(o, "UID STORE 2 +FLAGS (\\Seen)")
    mid = highestmodseq(ok(c, "SELECT INBOX"))
    expunge_uids(o, [3])
    ok(o, "UID STORE 4 +FLAGS (\\Seen)")
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {mid}))")
    assert vanished(r) == {3} and sorted(uid_fetches(r)) == [4], r
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm}))")
    assert vanished(r) == {1, 3} and sorted(uid_fetches(r)) == [2, 4], r


def test_qresync_new_messages_are_changes(box):
    """Messages appended after the modseq have a higher modseq: within
    1:<UIDNEXT-1> they come as FETCHes (the A03 example's semantics)."""
    server, c, uv, hm = box
    fill(server.login("testuser1"), 2)
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm}))")
    assert sorted(uid_fetches(r)) == [11, 12], r
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm} 1:10))")
    assert uid_fetches(r) == {}, r


def test_uid_fetch_vanished_example(box):
    """3.2.6 example: UID FETCH (CHANGEDSINCE VANISHED) sends VANISHED
    (EARLIER) for the set's expunged UIDs before the FETCHes."""
    server, c, uv, hm = box
    o = other_session(server)
    expunge_uids(o, [5, 6])
    ok(o, "UID STORE 3,8 +FLAGS (\\Answered)")
    ok(c, "NOOP")       # this session learns of the expunges
    r = ok(c, f"UID FETCH 1:* (FLAGS) (CHANGEDSINCE {hm} VANISHED)")
    assert vanished(r) == {5, 6}, r
    assert sorted(uid_fetches(r)) == [3, 8], r
    first_fetch = min(i for i, l in enumerate(r.untagged) if b"FETCH" in l)
    assert all(b"VANISHED" not in l for l in r.untagged[first_fetch:])
    r = ok(c, f"UID FETCH 4:7 (FLAGS) (CHANGEDSINCE {hm} VANISHED)")
    assert vanished(r) == {5, 6} and uid_fetches(r) == {}, r


def test_uid_fetch_vanished_leaves_out_unreported(box):
    """An expunge this session has not reported yet comes as VANISHED
    after the command, not as VANISHED (EARLIER) of it."""
    server, c, uv, hm = box
    o = other_session(server)
    expunge_uids(o, [2])
    r = ok(c, f"UID FETCH 1:4 (FLAGS) (CHANGEDSINCE {hm} VANISHED)")
    assert vanished(r) == set(), r
    assert vanished(r, earlier=False) == {2}, r


def test_vanished_instead_of_expunge(box):
    """3.2.10 example: EXPUNGE answers VANISHED, and the tagged OK has
    the new HIGHESTMODSEQ (3.2.7); other sessions' expunges too."""
    server, c, uv, hm = box
    ok(c, "UID STORE 5,7,10 +FLAGS.SILENT (\\Deleted)")
    r = ok(c, "EXPUNGE")
    assert not any(b"EXPUNGE" in l for l in r.untagged), r
    assert vanished(r, earlier=False) == {5, 7, 10}, r
    new_hm = highestmodseq(r)
    assert new_hm is not None and new_hm > hm and b"HIGHESTMODSEQ" in r.line
    # a later expunge lists only the new ones
    ok(c, "UID STORE 1 +FLAGS.SILENT (\\Deleted)")
    r = ok(c, "UID EXPUNGE 1:3")
    assert vanished(r, earlier=False) == {1}, r
    assert b"HIGHESTMODSEQ" in r.line
    # nothing expunged: no code
    r = ok(c, "EXPUNGE")
    assert b"HIGHESTMODSEQ" not in r.line, r
    o = other_session(server)
    expunge_uids(o, [2, 3])
    r = ok(c, "NOOP")
    assert vanished(r, earlier=False) == {2, 3}, r
    assert b"* 4 EXISTS" not in r.untagged    # VANISHED counts down itself


def test_close_sends_no_highestmodseq(box):
    """3.2.8: CLOSE expunges silently, without HIGHESTMODSEQ."""
    server, c, uv, hm = box
    ok(c, "STORE 1 +FLAGS.SILENT (\\Deleted)")
    r = ok(c, "CLOSE")
    assert r.untagged == [] and b"HIGHESTMODSEQ" not in r.line, r
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm}))")
    assert vanished(r) == {1}, r


def test_closed_response_code(moat_server):
    """3.2.11: [CLOSED] when a SELECT replaces a selected mailbox, even
    without an enabling command; not after CLOSE or UNSELECT."""
    c = moat_server.login()
    ok(c, "SELECT INBOX")
    r = ok(c, "EXAMINE INBOX")
    assert b"[CLOSED]" in r.untagged[0], r
    ok(c, "UNSELECT")
    r = ok(c, "SELECT INBOX")
    assert not any(b"[CLOSED]" in l for l in r.untagged), r


def test_seqmatch_ignored_with_history(box):
    """5.3: with the history at hand the sequence match data changes
    nothing."""
    server, c, uv, hm = box
    o = other_session(server)
    expunge_uids(o, [2, 9])
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm} 1:10 (1,5,8 1,5,8)))")
    assert vanished(r) == {2, 9}, r


def force_checkpoint(server, c, user="testuser1", max_rounds=400):
    """Flag changes until moat.index is rewritten (a checkpoint, every
    64 KiB of log): the index then holds a modseq above the changes."""
    path = os.path.join(server.maildir(user), "moat.index")
    before = os.stat(path).st_ino
    for i in range(max_rounds):
        ok(c, "STORE 1:* +FLAGS.SILENT (\\Flagged)")
        ok(c, "STORE 1:* -FLAGS.SILENT (\\Flagged)")
        if os.stat(path).st_ino != before:
            return
    raise AssertionError("no checkpoint")


def test_history_gone_fallback_example(moat_server):
    """3.2.5.2: when the history does not reach back to the client's
    modseq, VANISHED (EARLIER) lists every known UID not in the mailbox,
    from the last matching sequence-match pair on."""
    c = moat_server.login("testuser1")
    fill(c, 30)
    ok(c, "ENABLE QRESYNC")
    r = ok(c, "SELECT INBOX")
    uv, hm = uidvalidity(r), highestmodseq(r)
    # only UIDs divisible by 3 stay
    gone = [u for u in range(1, 31) if u % 3]
    ok(c, f"UID STORE {','.join(map(str, gone))} +FLAGS.SILENT (\\Deleted)")
    ok(c, "EXPUNGE")
    force_checkpoint(moat_server, c)
    ok(c, "UNSELECT")
    # both histories lost: VANISHED falls back, the FETCHes come from a
    # look at every record
    for name in ("moat.index.modseq", "moat.index.changes"):
        path = os.path.join(moat_server.maildir("testuser1"), name)
        assert os.path.exists(path)
        os.unlink(path)
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm} 1:30))")
    assert vanished(r) == set(gone), r
    # pairs (5 -> 15), (8 -> 24) match, (9 -> 26) does not: from 25 on
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm} 1:30 (5,8,9 15,24,26)))")
    assert vanished(r) == {u for u in gone if u >= 25}, r
    # changed messages: all 10 (modseq below what the index knows)
    assert len(uid_fetches(r)) == 10


def test_history_survives_rotation(moat_server):
    """The expunge modseqs outlive log rotation and a new process: the
    answer stays exact for old modseqs."""
    c = moat_server.login("testuser1")
    fill(c, 20)
    ok(c, "ENABLE QRESYNC")
    r = ok(c, "SELECT INBOX")
    uv, hm = uidvalidity(r), highestmodseq(r)
    ok(c, "UID STORE 3,4,11 +FLAGS.SILENT (\\Deleted)")
    ok(c, "EXPUNGE")
    force_checkpoint(moat_server, c)
    force_checkpoint(moat_server, c)
    maildir = moat_server.maildir("testuser1")
    assert os.path.exists(os.path.join(maildir, "moat.index.modseq"))
    c.close()
    c = moat_server.login("testuser1")
    ok(c, "ENABLE QRESYNC")
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm}))")
    assert vanished(r) == {3, 4, 11}, r


def drop_messages(server, n, user="testuser1"):
    """n messages written straight into cur/ (another Maildir writer),
    named so that the sorted names give message i the UID i."""
    cur = server.maildir(user) / "cur"
    for i in range(1, n + 1):
        (cur / f"m{i:06d}.x.host:2,").write_bytes(
            f"Subject: {i}\r\n\r\nbody {i}\r\n".encode())
    server.chown_home(server.users[user])


def test_long_vanished_is_split(moat_server):
    """A VANISHED (EARLIER) of many ranges comes in lines of about 8 KiB
    (RFC 7162 4)."""
    n = 4000
    drop_messages(moat_server, n)
    c = moat_server.login("testuser1")
    ok(c, "ENABLE QRESYNC")
    r = ok(c, "SELECT INBOX")
    uv, hm = uidvalidity(r), highestmodseq(r)
    gone = list(range(1, n + 1, 2))
    md = moat_server.maildir("testuser1") / "cur"
    # another Maildir writer marks them (a rescan gives them modseqs)
    for name in os.listdir(md):
        if int(name.split(".")[0][1:]) % 2:
            os.rename(md / name, md / (name + "T"))
    r = ok(c, "EXPUNGE")
    assert vanished(r, earlier=False) == set(gone)
    r = ok(c, f"SELECT INBOX (QRESYNC ({uv} {hm} 1:{n}))")
    lines = [l for l in r.untagged if l.startswith(b"* VANISHED (EARLIER)")]
    assert len(lines) > 1 and all(len(l) < 8300 for l in lines), lines
    assert vanished(r) == set(gone)
