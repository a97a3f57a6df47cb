"""Another Maildir tool's flag changes (renames in cur/) while a mailbox
is selected reach the session without a readdir of cur/: the user's
imap process watches cur/ (index/maildir-watch.c), keeps the renames it
saw and applies them to the index by base name
(index/maildir-sync-renames.c). strace shows no getdents64 of cur/ for
the sync that reports them; anything else (here: a file put into cur/)
still reads the directory, and the flags are the names' either way."""

import os
import re

import strace_tracer
from test_store_range import flags_of, ok

COUNT = 60
LETTERS = {"S": "\\Seen", "F": "\\Flagged", "R": "\\Answered",
           "D": "\\Draft", "T": "\\Deleted"}


def msg(n):
    return (f"From: a@example.org\r\nSubject: renamed {n}\r\n"
            f"Message-ID: <{n}@renames.example>\r\n\r\nBody {n}.\r\n").encode()


def fill(server):
    c = server.login("testuser1")
    for i in range(1, COUNT + 1):
        assert c.append("INBOX", msg(i)).ok
    ok(c, "SELECT INBOX")
    return c


def files_by_number(server):
    """{Message-ID number: file name in cur/}."""
    cur = server.maildir("testuser1") / "cur"
    out = {}
    for name in os.listdir(cur):
        m = re.search(rb"Message-ID: <(\d+)@", (cur / name).read_bytes())
        out[int(m.group(1))] = name
    return out


def rename_to(server, name, info):
    """Give the file the info part info, as mutt or a sync tool would."""
    cur = server.maildir("testuser1") / "cur"
    new = name.split(":2,", 1)[0] + ":2," + info
    os.rename(cur / name, cur / new)
    return new


def expected_flags(server):
    return {n: {LETTERS[ch] for ch in name.split(":2,", 1)[1] if ch in LETTERS}
            for n, name in files_by_number(server).items()}


def cur_readdirs(calls):
    return [line for _, name, line in calls
            if name == "getdents64" and re.search(r"/cur>", line)]


def fetched_by_number(c):
    """{Message-ID number: flags} of every message (the session's
    sequence numbers are the APPEND order)."""
    return {seq: flags for seq, flags in
            flags_of(ok(c, f"FETCH 1:{COUNT} FLAGS")).items()}


def test_renames_seen_without_readdir(moat_server, tmp_path):
    c = fill(moat_server)
    ok(c, "NOOP")
    [pid] = moat_server.wait_children("imap", 1)
    files = files_by_number(moat_server)
    infos = ["S", "FS", "RS", "F", "DS", "T", ""]
    changed = {}
    for k, n in enumerate(range(3, COUNT + 1, 5)):
        files[n] = rename_to(moat_server, files[n], infos[k % len(infos)])
        changed[n] = True
    # one renamed twice: its last name counts
    files[3] = rename_to(moat_server, files[3], "FRS")
    trace = strace_tracer.Strace(pid, tmp_path / "strace.out", "getdents64")
    try:
        r = ok(c, "NOOP")
    finally:
        calls = trace.stop()
    assert cur_readdirs(calls) == [], "\n".join(x[2] for x in calls)
    want = expected_flags(moat_server)
    reported = flags_of(r)
    for n in changed:
        if want[n] != set():
            assert reported.get(n) == want[n], (n, r)
    assert fetched_by_number(c) == want
    # a second session reads the same from the index
    c2 = moat_server.login("testuser1")
    ok(c2, "EXAMINE INBOX")
    assert fetched_by_number(c2) == want


def test_other_change_reads_cur(moat_server, tmp_path):
    """A file that appears in cur/ is no rename: the sync reads cur/,
    and renames with it are still right."""
    c = fill(moat_server)
    ok(c, "NOOP")
    [pid] = moat_server.wait_children("imap", 1)
    files = files_by_number(moat_server)
    rename_to(moat_server, files[2], "FS")
    cur = moat_server.maildir("testuser1") / "cur"
    (cur / "1800000000.M1P1Q1.example:2,S").write_bytes(
        b"From: b@example.org\r\nSubject: other\r\n"
        b"Message-ID: <999@renames.example>\r\n\r\nOther.\r\n")
    trace = strace_tracer.Strace(pid, tmp_path / "strace.out", "getdents64")
    try:
        r = ok(c, "NOOP")
    finally:
        calls = trace.stop()
    assert cur_readdirs(calls) != [], "\n".join(x[2] for x in calls)
    assert r.untagged_with("EXISTS"), r
    got = flags_of(ok(c, f"FETCH 1:{COUNT + 1} FLAGS"))
    assert got[2] == {"\\Seen", "\\Flagged"}
    assert got[COUNT + 1] == {"\\Seen"}
