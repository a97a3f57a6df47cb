"""A SEARCH or FETCH that reads consecutive messages' files in a cold
folder asks the kernel for the next ones ahead of their turn
(index/mailbox-read-ahead.c: open, posix_fadvise WILLNEED, close, made
by the process's read-ahead thread), so the reads overlap the parsing. Where cheap keys decide most messages,
or the files are in the page cache, it reads nothing ahead. strace of
the user's imap process counts the fadvise64 calls; the answers are
checked too. The test makes the files cold by evicting them from the
page cache (fsync, then POSIX_FADV_DONTNEED)."""
import os
import re

import strace_tracer
from moatserver import wait_for
from test_search import check, place, search_nums

COUNT = 60


def msg(n):
    body = b"needle\r\n" if n % 10 == 3 else b"hay\r\n"
    return (b"From: a@example.org\r\nSubject: ahead %d\r\n"
            b"Date: Mon, 1 Jan 2024 09:00:00 +0000\r\n\r\n" % n) + body


def evict(server):
    cur = server.maildir("testuser1") / "cur"
    for name in os.listdir(cur):
        fd = os.open(cur / name, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def fadvises(calls):
    return [line for _, name, line in calls if name == "fadvise64"]


def selected(moat_server, flags=lambda n: "", cold=True):
    """A session on INBOX of COUNT messages; cold: none of their files in
    the page cache."""
    place(moat_server, [(flags(n), 0, msg(n)) for n in range(1, COUNT + 1)])
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    if cold:
        evict(moat_server)
    return c


def traced(moat_server, c, tmp_path, command, want=0):
    """The response to command and the imap process's fadvise64 calls
    while it ran. The read-ahead thread may still be working through its
    queue when the answer arrives: with want, wait (up to 30 s) until it
    made that many calls. Every call is the thread's, none the event
    loop's (the main thread, tid == pid)."""
    [pid] = moat_server.wait_children("imap", 1)
    trace = strace_tracer.Strace(pid, tmp_path / "strace.out", "fadvise64")
    r = c.command(command)
    if want:
        wait_for(lambda: len(fadvises(trace.calls())) >= want, 30)
    calls = trace.stop()
    assert all(tid not in (None, pid) for tid, name, _ in calls
               if name == "fadvise64"), calls
    return r, fadvises(calls)


def traced_search(moat_server, c, tmp_path, program, want, ahead=0):
    r, calls = traced(moat_server, c, tmp_path, f"SEARCH {program}", ahead)
    assert r.ok and search_nums(r) == want, (program, r)
    return calls


def fetched(r):
    lines = r.untagged_with("FETCH")
    assert r.ok and len(lines) == COUNT, r
    return lines


NEEDLES = [n for n in range(1, COUNT + 1) if n % 10 == 3]


def test_dense_search_reads_ahead(moat_server, tmp_path):
    c = selected(moat_server)
    calls = traced_search(moat_server, c, tmp_path, "BODY needle", NEEDLES,
                          ahead=COUNT - 2)
    # from the second message on, every later one is read ahead once
    assert len(calls) >= COUNT - 2, calls
    assert all(re.search(r"POSIX_FADV_WILLNEED", line) for line in calls)


def test_warm_search_reads_nothing_ahead(moat_server, tmp_path):
    c = selected(moat_server, cold=False)
    check(c, "BODY needle", NEEDLES)   # now every file is in the page cache
    calls = traced_search(moat_server, c, tmp_path, "BODY needle", NEEDLES)
    assert calls == [], calls


def test_sparse_search_reads_nothing_ahead(moat_server, tmp_path):
    # every other message is \Seen: UNSEEN decides half of them without
    # their files, so no two consecutive messages are read
    c = selected(moat_server, flags=lambda n: "S" if n % 2 == 0 else "")
    calls = traced_search(moat_server, c, tmp_path, "UNSEEN BODY needle",
                          NEEDLES)
    assert calls == [], calls


def test_cold_fetch_reads_ahead(moat_server, tmp_path):
    c = selected(moat_server)
    r, calls = traced(moat_server, c, tmp_path,
                      "FETCH 1:* (ENVELOPE BODYSTRUCTURE)", COUNT - 2)
    assert any(b"ahead 60" in line for line in fetched(r)), r
    assert len(calls) >= COUNT - 2, calls
    # warm now, and the texts are cached: nothing is read ahead
    r, calls = traced(moat_server, c, tmp_path,
                      "FETCH 1:* (BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
    fetched(r)
    assert calls == [], calls


def test_cold_size_count_reads_ahead(moat_server, tmp_path):
    # names without ,W=: RFC822.SIZE counts each file's line ends once
    c = selected(moat_server)
    r, calls = traced(moat_server, c, tmp_path, "FETCH 1:* (RFC822.SIZE)",
                      COUNT - 2)
    sizes = {len(msg(n).replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
             for n in range(1, COUNT + 1)}
    got = {int(re.search(rb"RFC822\.SIZE (\d+)", line).group(1))
           for line in fetched(r)}
    assert got == sizes, (got, sizes)
    assert len(calls) >= COUNT - 2, calls


def test_cold_thread_reads_ahead_on_the_thread(moat_server, tmp_path):
    # the first THREAD parses every header (index/mail-sort-keys.c): the
    # files after the first are asked for ahead, each once
    c = selected(moat_server)
    r, calls = traced(moat_server, c, tmp_path,
                      "THREAD REFERENCES US-ASCII ALL", COUNT - 1)
    assert r.ok and len(r.untagged_with("THREAD")) == 1, r
    names = [re.search(r"<([^>]*)>", line).group(1) for line in calls]
    assert len(names) == len(set(names)) >= COUNT - 1, calls
    # the keys are cached now: the second reads nothing ahead
    r, calls = traced(moat_server, c, tmp_path,
                      "THREAD REFERENCES US-ASCII ALL")
    assert r.ok and calls == [], calls
