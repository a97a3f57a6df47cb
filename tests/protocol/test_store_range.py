"""STORE on ranges (RFC 9051 6.4.6): the messages of one command are
renamed and committed to the index together (index/mailbox.h,
mailbox_msgs_change_flags, in batches of MAILBOX_CHANGE_BATCH_MAX = 128);
the answer must equal what one message at a time gives, and an OK must
mean the change is in the index: a killed imap process loses nothing."""

import os
import re
import signal

from moatserver import wait_for

# More than one batch (index/mailbox.h MAILBOX_CHANGE_BATCH_MAX = 128).
COUNT = 150


def msg(n):
    return (f"From: a@example.org\r\nSubject: message {n}\r\n"
            f"Message-ID: <{n}@range.example>\r\n\r\nBody {n}.\r\n").encode()


def flags_of(r):
    """{seq: set of flags without \\Recent} from the FETCH responses."""
    return {seq: {f for f in items["FLAGS"] if f.lower() != "\\recent"}
            for seq, items in r.fetches().items() if "FLAGS" in items}


def ok(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    return r


def fill(server, n=COUNT):
    c = server.login("testuser1")
    for i in range(1, n + 1):
        assert c.append("INBOX", msg(i)).ok
    ok(c, "SELECT INBOX")
    return c


def file_letters(server):
    """{Message-ID number: the flag letters of its file name}."""
    cur = server.maildir("testuser1") / "cur"
    out = {}
    for name in os.listdir(cur):
        m = re.search(rb"Message-ID: <(\d+)@", (cur / name).read_bytes())
        out[int(m.group(1))] = name.split(":2,", 1)[1]
    return out


def test_store_range_answers_every_message(moat_server):
    c = fill(moat_server)
    r = ok(c, f"STORE 1:{COUNT} +FLAGS (\\Flagged $Range)")
    assert flags_of(r) == {s: {"\\Flagged", "$Range"}
                           for s in range(1, COUNT + 1)}, r
    r = ok(c, "STORE 2:140 -FLAGS (\\Flagged)")
    got = flags_of(r)
    assert sorted(got) == list(range(2, 141))
    assert all(f == {"$Range"} for f in got.values())
    # .SILENT says nothing; FLAGS replaces
    r = ok(c, "STORE 100:149 FLAGS.SILENT (\\Seen)")
    assert r.fetches() == {}, r
    got = flags_of(ok(c, "FETCH 1:* FLAGS"))
    for seq in range(1, COUNT + 1):
        want = ({"\\Seen"} if 100 <= seq <= 149 else
                {"\\Flagged", "$Range"} if seq in (1, COUNT) else {"$Range"})
        assert got[seq] == want, (seq, got[seq])
    # the files carry the same flags (the keyword is letter a)
    letters = file_letters(moat_server)
    for seq in range(1, COUNT + 1):
        want = ("S" if 100 <= seq <= 149 else
                "Fa" if seq in (1, COUNT) else "a")
        assert letters[seq] == want, (seq, letters[seq])


def test_store_range_other_session_sees_all(moat_server):
    c = fill(moat_server)
    c2 = moat_server.login("testuser1")
    ok(c2, "SELECT INBOX")
    ok(c, f"STORE 1:{COUNT} +FLAGS.SILENT (\\Answered)")
    r = ok(c2, "NOOP")
    got = flags_of(r)
    assert sorted(got) == list(range(1, COUNT + 1)), r
    assert all(f == {"\\Answered"} for f in got.values())


def test_store_range_survives_a_killed_process(moat_server):
    """An OK means the flags are committed: SIGKILL right after it, then
    a new process (a new index handle) shows every one of them."""
    c = fill(moat_server)
    [pid] = moat_server.wait_children("imap", 1)
    ok(c, f"STORE 1:{COUNT} +FLAGS.SILENT (\\Flagged \\Draft $Kept)")
    os.kill(pid, signal.SIGKILL)
    c.wait_closed(30)
    assert wait_for(lambda: not moat_server.child_pids("imap"), 30)
    c = moat_server.login("testuser1")
    ok(c, "SELECT INBOX")
    got = flags_of(ok(c, "FETCH 1:* FLAGS"))
    assert sorted(got) == list(range(1, COUNT + 1))
    assert all(f == {"\\Flagged", "\\Draft", "$Kept"} for f in got.values()), got


def test_store_range_unchangedsince(moat_server):
    """RFC 7162 3.1.3: across the batches, only the messages changed
    after the modseq fail; they are in MODIFIED, the rest change."""
    c = fill(moat_server)
    top = max(int(m) for line in ok(c, "FETCH 1:* (MODSEQ)").untagged
              for m in re.findall(rb"MODSEQ \((\d+)\)", line))
    ok(c, "STORE 5,130 +FLAGS.SILENT (\\Seen)")
    r = ok(c, f"STORE 1:{COUNT} (UNCHANGEDSINCE {top}) +FLAGS.SILENT (\\Flagged)")
    assert b"[MODIFIED 5,130]" in r.line, r
    got = flags_of(ok(c, "FETCH 1:* FLAGS"))
    for seq in range(1, COUNT + 1):
        want = {"\\Seen"} if seq in (5, 130) else {"\\Flagged"}
        assert got[seq] == want, (seq, got[seq])


def test_store_unchangedsince_all_fail_not_told_twice(moat_server):
    """Every message fails UNCHANGEDSINCE: the reply tells their flags,
    and the next sync does not tell them again."""
    c = fill(moat_server, 5)
    other = moat_server.login("testuser1")
    ok(other, "SELECT INBOX")
    top = max(int(m) for line in ok(c, "FETCH 1:* (MODSEQ)").untagged
              for m in re.findall(rb"MODSEQ \((\d+)\)", line))
    ok(other, "STORE 2:3 +FLAGS (\\Answered)")
    r = ok(c, f"STORE 2:3 (UNCHANGEDSINCE {top}) +FLAGS.SILENT (\\Flagged)")
    assert b"[MODIFIED 2:3]" in r.line, r
    assert flags_of(r) == {2: {"\\Answered"}, 3: {"\\Answered"}}, r
    r = ok(c, "NOOP")
    assert flags_of(r) == {}, r
