"""Expunges between the sessions of one user (RFC 2180 4.1-4.4): one
process serves them all, so a message one session expunges stays readable
in the others (same data, same flags) until they are told of the EXPUNGE;
a message whose file another program removed is NO [EXPUNGEISSUED]; a file
that cannot be read for another reason is NO [SERVERBUG]."""

import os
import re

import pytest

from moatserver import wait_for

GONE = b"NO [EXPUNGEISSUED] Some of the requested messages no longer exist"


def msg(n):
    return (f"From: a{n}@example.org\r\nSubject: message {n}\r\n"
            f"Message-ID: <m{n}@example.org>\r\n\r\nBody of {n}.\r\n").encode()


def expunges(r):
    return [int(m.group(1)) for line in r.untagged
            for m in [re.match(rb"^\* (\d+) EXPUNGE$", line)] if m]


def two_sessions(server, n=3, cmd="SELECT"):
    """a and b with INBOX (n messages, \\Flagged) selected; b in cmd."""
    a = server.login("testuser1")
    for i in range(1, n + 1):
        assert a.append("INBOX", msg(i), flags=["\\Flagged"]).ok
    assert a.command("SELECT INBOX").ok
    b = server.login("testuser1")
    assert b.command(f"{cmd} INBOX").ok
    return a, b


def expunge(a, seq):
    assert a.command(f"STORE {seq} +FLAGS.SILENT (\\Deleted)").ok
    r = a.command("EXPUNGE")
    assert r.ok and expunges(r) == [seq], r


def cur_files(server):
    cur = server.maildir("testuser1") / "cur"
    return sorted(os.listdir(cur))


@pytest.mark.parametrize("cmd", ["SELECT", "EXAMINE"])
def test_fetch_after_other_session_expunged(moat_server, cmd):
    a, b = two_sessions(moat_server, cmd=cmd)
    expunge(a, 2)
    # gone from the Maildir at once
    assert len(cur_files(moat_server)) == 2
    r = b.command("FETCH 2 (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE "
                  "BODYSTRUCTURE BODY.PEEK[] BODY.PEEK[HEADER.FIELDS "
                  "(SUBJECT)])")
    assert r.ok, r
    items = r.fetches()[2]
    assert items["UID"] == "2"
    assert "\\Flagged" in items["FLAGS"]
    assert items["BODY[]"] == msg(2)
    assert int(items["RFC822.SIZE"]) == len(msg(2))
    assert items["BODY[HEADER.FIELDS (SUBJECT)]"] == b"Subject: message 2\r\n\r\n"
    assert items["ENVELOPE"][1] == b"message 2"
    # a FETCH by sequence number sends no EXPUNGE; a range works too
    r = b.command("FETCH 1:3 (UID BODY.PEEK[TEXT])")
    assert r.ok and not expunges(r), r
    assert [r.fetches()[s]["BODY[TEXT]"] for s in (1, 2, 3)] == [
        b"Body of 1.\r\n", b"Body of 2.\r\n", b"Body of 3.\r\n"]
    # UID FETCH finds it too, then reports the EXPUNGE
    r = b.command("UID FETCH 2 (UID BODY.PEEK[TEXT])")
    assert r.ok, r
    assert expunges(r) == [2], r
    r = b.command("FETCH 2 (UID BODY.PEEK[TEXT])")
    assert r.ok and r.fetches()[2]["UID"] == "3", r


def test_told_by_noop(moat_server):
    a, b = two_sessions(moat_server)
    expunge(a, 1)
    r = b.command("NOOP")
    assert r.ok and expunges(r) == [1], r
    r = b.command("FETCH 1:2 UID")
    assert r.ok, r
    assert {s: i["UID"] for s, i in r.fetches().items()} == {1: "2", 2: "3"}


def test_seen_of_expunged_message(moat_server):
    """FETCH BODY[] of a message another session expunged: the data
    comes, its \\Seen can no longer be set, and the reply is OK."""
    a, b = two_sessions(moat_server)
    expunge(a, 3)
    r = b.command("FETCH 3 BODY[]")
    assert r.ok, r
    assert r.fetches()[3]["BODY[]"] == msg(3)


def test_store_on_expunged_message(moat_server):
    """RFC 2180 4.2: .SILENT is OK; otherwise a tagged NO, and the
    messages that exist are stored."""
    a, b = two_sessions(moat_server)
    expunge(a, 2)
    r = b.command("STORE 2 +FLAGS.SILENT (\\Seen)")
    assert r.ok, r
    r = b.command("STORE 1:2 +FLAGS (\\Answered)")
    assert r.line.endswith(GONE), r
    assert set(r.fetches()) == {1}, r
    r = b.command("NOOP")
    assert expunges(r) == [2], r
    r = a.command("FETCH 1 FLAGS")
    assert "\\Answered" in r.fetches()[1]["FLAGS"], r


@pytest.mark.parametrize("cmd", ["COPY", "MOVE"])
def test_copy_after_other_session_expunged(moat_server, cmd):
    """RFC 2180 4.4.2: the messages the session numbers are copied,
    the one another session expunged included."""
    a, b = two_sessions(moat_server)
    assert b.command("CREATE Target").ok
    expunge(a, 2)
    r = b.command(f"{cmd} 1:3 Target")
    assert r.ok, r
    if cmd == "MOVE":
        assert sorted(expunges(r)) == [1, 1, 1], r
    r = b.command("SELECT Target")
    assert r.ok, r
    r = b.command("FETCH 1:* (FLAGS BODY.PEEK[])")
    bodies = [r.fetches()[s]["BODY[]"] for s in sorted(r.fetches())]
    assert bodies == [msg(1), msg(2), msg(3)], r
    assert all("\\Flagged" in i["FLAGS"] for i in r.fetches().values())
    r = a.command("NOOP")
    assert a.command("SELECT INBOX").ok
    r = a.command("FETCH 1:* UID")
    expected = {} if cmd == "MOVE" else {1: "1", 2: "3"}
    assert {s: i["UID"] for s, i in r.fetches().items()} == expected, r


def delete_file_of(server, uid_index):
    """Removes a message file behind moat's back (another program)."""
    files = cur_files(server)
    path = server.maildir("testuser1") / "cur" / files[uid_index]
    os.unlink(path)
    return path


@pytest.mark.moat_settings(log_debug="yes")
def test_file_removed_by_another_program(moat_server):
    a, b = two_sessions(moat_server)
    delete_file_of(moat_server, 1)
    r = b.command("FETCH 1:3 (UID BODY.PEEK[TEXT])")
    assert r.line.endswith(GONE), r
    assert set(r.fetches()) == {1, 3}, r
    # the flags the session knows can still be sent
    r = b.command("FETCH 2 (UID FLAGS)")
    assert r.ok, r
    r = b.command("COPY 1:3 INBOX")
    assert r.line.endswith(GONE), r
    # COPY may report the EXPUNGE (RFC 2180 4.4); SEARCH and SORT go on
    r = b.command('SEARCH BODY "Body"')
    assert r.ok and len(r.untagged_with("SEARCH")[0].split()) == 4, r
    assert b.command("SORT (SUBJECT) US-ASCII ALL").ok
    assert b.command("NOOP").ok
    assert wait_for(lambda: re.search(
        r"debug: .*uid 2: .*removed by another process or program",
        moat_server.log_path.read_text()), 5), moat_server.logs()
    # RFC 2180 4.4.1: nothing was copied
    r = b.command("STATUS INBOX (MESSAGES)")
    assert b"MESSAGES 2" in b"".join(r.untagged), r


def replace_file(server, index, how):
    files = cur_files(server)
    path = server.maildir("testuser1") / "cur" / files[index]
    if how == "unreadable":
        os.chmod(path, 0)
    else:
        os.unlink(path)
        os.symlink(path.name, path)   # a loop: ELOOP
    return path


@pytest.mark.parametrize("how", ["unreadable"])
def test_unreadable_file_is_a_server_error(moat_server, how):
    a, b = two_sessions(moat_server)
    replace_file(moat_server, 1, how)
    r = b.command("FETCH 1:3 (UID BODY.PEEK[TEXT])")
    assert b" NO [SERVERBUG] " in r.line, r
    assert set(r.fetches()) == {1, 3}, r
    # the other readers of message files say the same
    for cmd in ('SEARCH BODY "Body"', "SORT (SUBJECT) US-ASCII ALL",
                "THREAD REFERENCES US-ASCII ALL"):
        r = b.command(cmd)
        assert b" NO [SERVERBUG] " in r.line, r
    # (COPY links the file, which needs no reading: never "expunged")
    r = b.command("COPY 2 INBOX")
    assert b"EXPUNGEISSUED" not in r.line, r
    logs = moat_server.log_path.read_text()
    assert re.search(r"error: .*(Permission denied|Too many levels of "
                     r"symbolic links)", logs), logs


def test_file_replaced_by_symlink_is_not_a_message(moat_server):
    """A symlink is never a message (doc/security.md, "Symlinks under a
    mail root"): one that replaced an indexed file is answered as a
    message whose file is gone, and COPY does not stage it."""
    a, b = two_sessions(moat_server)
    replace_file(moat_server, 1, "loop")
    r = b.command("FETCH 1:3 (UID BODY.PEEK[TEXT])")
    assert r.line.endswith(GONE), r
    assert set(r.fetches()) == {1, 3}, r
    for cmd in ('SEARCH BODY "Body"', "SORT (SUBJECT) US-ASCII ALL",
                "THREAD REFERENCES US-ASCII ALL"):
        assert b.command(cmd).ok
    r = b.command("COPY 2 INBOX")
    assert r.line.endswith(GONE), r
    # nothing copied, and the link is not counted (the next scan drops it)
    r = b.command("STATUS INBOX (MESSAGES)")
    assert b"MESSAGES 2" in b"".join(r.untagged), r
    logs = moat_server.log_path.read_text()
    assert re.search(r"warning: .*a symlink, not a message", logs), logs


def test_closed_session_releases_kept_file(moat_server):
    """A session that leaves without being told holds nothing: the next
    session of the process cannot read the message."""
    a, b = two_sessions(moat_server)
    expunge(a, 1)
    assert b.command("LOGOUT").ok
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    r = c.command("FETCH 1:* UID")
    assert {s: i["UID"] for s, i in r.fetches().items()} == {1: "2", 2: "3"}


def test_sort_and_search_see_the_session_view(moat_server):
    """SORT numbers every message the session has, the expunged one with
    its real keys; SEARCH may leave it out (RFC 2180 4.3); neither fails."""
    a, b = two_sessions(moat_server)
    expunge(a, 1)
    r = b.command("SORT (REVERSE SUBJECT) US-ASCII ALL")
    assert r.ok, r
    assert r.untagged_with("SORT")[0] == b"* SORT 3 2 1", r
    r = b.command("SEARCH BODY \"Body of\"")
    assert r.ok, r


@pytest.mark.parametrize("cmd", ["EXPUNGE", "UID EXPUNGE 1:*", "CLOSE"])
def test_expunge_sees_deleted_of_other_session(moat_server, cmd):
    """RFC 9051 6.4.3: EXPUNGE removes every message that has \\Deleted
    now, also one another session marked after this one last synced."""
    a, b = two_sessions(moat_server)
    assert a.command("STORE 2 +FLAGS.SILENT (\\Deleted)").ok
    r = b.command(cmd)
    assert r.ok, r
    if cmd != "CLOSE":
        assert expunges(r) == [2], r
    assert len(cur_files(moat_server)) == 2
    r = a.command("NOOP")
    assert expunges(r) == [2], r
