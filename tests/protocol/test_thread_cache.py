"""The kept THREAD answer (imap/imap-thread-cache.h, imap_thread_cache_size):
a second THREAD of a folder in the same state is answered from memory, and
any change of the folder (flags, appends, expunges), another algorithm,
UID or not, another program, a program that depends on more than the
folder's state, or a session that numbers its messages otherwise gets an
answer computed again, the same one a fresh computation gives."""

import re

import pytest

from moatserver import wait_for
from test_sort_thread import box, thread, msg  # noqa: F401 (box: a fixture)

DEBUG_RE = re.compile(r"THREAD: (\d+) messages, (the answer kept|\d+ key hits)")
ALL = "REFERENCES UTF-8 ALL"


def kinds(server, count):
    """The first count THREAD debug lines: "kept" or "computed"."""
    def lines():
        found = ["kept" if m.group(2).startswith("the answer") else "computed"
                 for m in DEBUG_RE.finditer(server.log_path.read_text(
                     errors="replace"))]
        return found if len(found) >= count else None
    found = wait_for(lines, 30)
    assert found, "missing THREAD debug lines:\n" + server.logs()
    return found


@pytest.mark.moat_settings(log_debug="yes")
def test_second_thread_is_kept(box):
    server, c = box
    first = thread(c, ALL)
    assert first == "(3 4)((1 2 5)(6))"
    assert thread(c, ALL) == first
    # another session in the same state: kept too
    c2 = server.login("testuser1")
    assert c2.command("EXAMINE INBOX").ok
    assert thread(c2, ALL) == first
    # case of the keys does not matter
    assert thread(c, "references utf-8 all") == first
    assert kinds(server, 4) == ["computed", "kept", "kept", "kept"]


@pytest.mark.moat_settings(log_debug="yes")
def test_what_is_keyed_apart(box):
    server, c = box
    answers = [thread(c, ALL), thread(c, "ORDEREDSUBJECT UTF-8 ALL")]
    r = c.command(f"UID THREAD {ALL}")
    assert r.ok
    # each computed: the algorithm and UID are part of the key
    assert answers == ["(3 4)((1 2 5)(6))", "(3 4)(1 (2)(6))(5)"]
    assert thread(c, "REFERENCES UTF-8 UNDELETED") == answers[0]
    # programs with arguments are never kept
    for _ in range(2):
        assert thread(c, "REFERENCES UTF-8 NOT FROM dave") == \
            "(3 4)((1 2)(6))"
    assert kinds(server, 6) == ["computed"] * 6


@pytest.mark.moat_settings(log_debug="yes")
def test_changes_are_seen(box):
    server, c = box
    assert thread(c, ALL) == "(3 4)((1 2 5)(6))"
    assert thread(c, "REFERENCES UTF-8 UNDELETED") == "(3 4)((1 2 5)(6))"
    # a flag change: UNDELETED's answer changes, ALL's is computed again
    assert c.command("STORE 5 +FLAGS.SILENT (\\Deleted)").ok
    assert thread(c, "REFERENCES UTF-8 UNDELETED") == "(3 4)((1 2)(6))"
    assert thread(c, ALL) == "(3 4)((1 2 5)(6))"
    # an expunge renumbers
    assert c.command("EXPUNGE").ok
    assert thread(c, ALL) == "(3 4)((1 2)(5))"
    # an append from another session joins a thread
    c2 = server.login("testuser1")
    reply = msg([b"From: eve@example.org", b"Subject: Re: Lunch",
                 b"Message-ID: <l3@example.org>",
                 b"In-Reply-To: <l2@example.org>",
                 b"References: <l1@example.org> <l2@example.org>"])
    assert c2.append("INBOX", reply).ok
    assert c.command("NOOP").ok
    assert thread(c, ALL) == "(3 4 6)((1 2)(5))"
    assert thread(c, ALL) == "(3 4 6)((1 2)(5))"
    assert kinds(server, 7) == ["computed"] * 6 + ["kept"]


@pytest.mark.moat_settings(log_debug="yes")
def test_session_numbering_its_own(box):
    # session c keeps the answer; another session expunges message 1;
    # once c's view has caught up (a FETCH's end, which reports no
    # expunge), its THREAD is computed in c's own numbering, as a
    # program that is never kept (OR ...) computes it; a new session
    # numbers without message 1 and gets its own answer
    server, c = box
    assert thread(c, ALL) == "(3 4)((1 2 5)(6))"
    c2 = server.login("testuser1")
    assert c2.command("SELECT INBOX").ok
    assert c2.command("STORE 1 +FLAGS.SILENT (\\Deleted)").ok
    assert c2.command("EXPUNGE").ok
    assert c.command("FETCH 1 (UID)").ok
    after = thread(c, ALL)
    assert after == thread(c, "REFERENCES UTF-8 OR ALL ALL")
    assert after != "(3 4)((1 2 5)(6))"
    c3 = server.login("testuser1")
    assert c3.command("EXAMINE INBOX").ok
    assert thread(c3, ALL) == thread(c3, "REFERENCES UTF-8 OR ALL ALL")
    assert thread(c3, ALL) == "(2 3)(5 1 4)"
    # c's three and c3's first two computed; c3's last one kept
    assert kinds(server, 6) == ["computed"] * 5 + ["kept"]


@pytest.mark.parametrize("size", [
    pytest.param("0", marks=pytest.mark.moat_settings(
        log_debug="yes", imap_thread_cache_size="0"), id="off"),
    pytest.param("16", marks=pytest.mark.moat_settings(
        log_debug="yes", imap_thread_cache_size="16"), id="too-big-to-keep"),
])
def test_not_kept(box, size):
    server, c = box
    for _ in range(2):
        assert thread(c, ALL) == "(3 4)((1 2 5)(6))"
    assert kinds(server, 2) == ["computed", "computed"]
