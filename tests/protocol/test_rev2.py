"""IMAP4rev2 (RFC 9051) after ENABLE IMAP4rev2: the behaviour differences
from IMAP4rev1 that moat implements (doc/imap4rev2.md)."""

import os
import re

MSG = b"From: a@example.com\r\nSubject: m%d\r\n\r\nbody %d\r\n"


def msg(i):
    return MSG % (i, i)


def rev2_login(server, user="testuser1"):
    c = server.login(user)
    r = c.command("ENABLE IMAP4rev2")
    assert r.ok and r.untagged == [b"* ENABLED IMAP4rev2"], r
    return c


def fill_inbox(server, n):
    c = server.login()
    for i in range(n):
        assert c.append("INBOX", msg(i)).ok
    return c


def test_capabilities_pre_and_post_login(moat_server):
    c = moat_server.connect()
    caps = c.greeting.split()
    assert b"IMAP4rev1" in caps and b"IMAP4rev2" in caps, c.greeting
    c = moat_server.login()
    caps = c.command("CAPABILITY").untagged[0].split()
    assert b"IMAP4rev1" in caps and b"IMAP4rev2" in caps, caps


def test_enable_once_and_unknown_names(moat_server):
    c = moat_server.login()
    r = c.command("ENABLE FOOBAR")
    assert r.ok and r.untagged == [b"* ENABLED"], r
    r = c.command("ENABLE imap4REV2 FOOBAR")
    assert r.ok and r.untagged == [b"* ENABLED IMAP4rev2"], r
    # already enabled: not listed again
    r = c.command("ENABLE IMAP4rev2")
    assert r.ok and r.untagged == [b"* ENABLED"], r
    assert c.command("ENABLE").status == "BAD"


def test_select_rev1_unchanged(moat_server):
    fill_inbox(moat_server, 2)
    c = moat_server.login()
    r = c.command("SELECT INBOX")
    assert r.ok
    assert r.untagged_with("RECENT"), r
    assert not r.untagged_with("LIST"), r
    # RFC 7162 3.2.11: with CONDSTORE advertised, [CLOSED] in IMAP4rev1 too
    r = c.command("SELECT INBOX")
    assert b"[CLOSED]" in r.untagged[0], r


def test_select_rev2_list_no_recent_closed(moat_server):
    fill_inbox(moat_server, 2)
    c = rev2_login(moat_server)
    r = c.command("SELECT INBOX")
    assert r.ok, r
    assert b"* 2 EXISTS" in r.untagged
    assert not r.untagged_with("RECENT"), r
    assert not any(b"[UNSEEN " in line for line in r.untagged), r
    lists = r.untagged_with("LIST")
    assert len(lists) == 1, r
    assert re.match(rb'^\* LIST \([^)]*\) "/" INBOX$', lists[0]), lists
    assert any(b"[UIDVALIDITY " in line for line in r.untagged), r
    assert any(b"[UIDNEXT 3]" in line for line in r.untagged), r
    assert not any(b"[CLOSED]" in line for line in r.untagged), r
    # a second SELECT closes the first mailbox: [CLOSED] comes first
    r = c.command("EXAMINE INBOX")
    assert r.ok, r
    assert b"[CLOSED]" in r.untagged[0], r
    assert sum(b"[CLOSED]" in line for line in r.untagged) == 1
    # even when the new selection fails
    r = c.command("SELECT nosuch")
    assert r.status == "NO"
    assert any(b"[CLOSED]" in line for line in r.untagged), r
    # and not when nothing was selected
    r = c.command("SELECT INBOX")
    assert r.ok and not any(b"[CLOSED]" in line for line in r.untagged), r


def test_select_rev2_list_attributes(moat_server):
    c = rev2_login(moat_server)
    assert c.command("CREATE parent/child").ok
    r = c.command("SELECT parent")
    assert r.ok, r
    lists = r.untagged_with("LIST")
    assert lists == [b'* LIST (\\HasChildren) "/" parent'], r
    r = c.command("SELECT Sent")
    assert r.ok, r
    lists = r.untagged_with("LIST")
    assert len(lists) == 1 and b"\\Sent" in lists[0], r


def test_search_answers_esearch(moat_server):
    fill_inbox(moat_server, 3)
    c = rev2_login(moat_server)
    assert c.command("SELECT INBOX").ok
    tag = c.next_tag()
    r = c.command("SEARCH ALL", tag=tag)
    assert r.ok
    assert r.untagged == [b'* ESEARCH (TAG "%s") ALL 1:3' % tag.encode()], r
    tag = c.next_tag()
    r = c.command("UID SEARCH 2", tag=tag)
    assert r.untagged == [b'* ESEARCH (TAG "%s") UID ALL 2' % tag.encode()], r
    tag = c.next_tag()
    r = c.command("SEARCH DELETED", tag=tag)
    assert r.untagged == [b'* ESEARCH (TAG "%s")' % tag.encode()], r
    tag = c.next_tag()
    r = c.command("SEARCH RETURN (COUNT) ALL", tag=tag)
    assert r.untagged == [b'* ESEARCH (TAG "%s") COUNT 3' % tag.encode()], r
    # SEARCHRES still works; SAVE alone answers nothing
    r = c.command("SEARCH RETURN (SAVE) 2:3")
    assert r.ok and r.untagged == [], r
    tag = c.next_tag()
    r = c.command("SEARCH $", tag=tag)
    assert r.untagged == [b'* ESEARCH (TAG "%s") ALL 2:3' % tag.encode()], r


def test_search_rev1_unchanged(moat_server):
    fill_inbox(moat_server, 2)
    c = moat_server.login()
    assert c.command("SELECT INBOX").ok
    r = c.command("SEARCH ALL")
    assert r.untagged == [b"* SEARCH 1 2"], r


def test_no_recent_flag_or_response(moat_server):
    fill_inbox(moat_server, 1)
    c = rev2_login(moat_server)
    assert c.command("SELECT INBOX").ok
    r = c.command("FETCH 1 FLAGS")
    assert r.ok
    assert "\\Recent" not in r.fetches()[1]["FLAGS"], r
    # new mail from another session: EXISTS but no RECENT
    other = moat_server.login()
    assert other.append("INBOX", msg(2)).ok
    r = c.command("NOOP")
    assert b"* 2 EXISTS" in r.untagged, r
    assert not r.untagged_with("RECENT"), r
    r = c.command("FETCH 2 FLAGS")
    assert "\\Recent" not in r.fetches()[2]["FLAGS"], r


def drop_new(server, name, data):
    """A message delivered straight into new/ (first seen as \\Recent)."""
    path = server.maildir("testuser1") / "new" / name
    path.write_bytes(data)
    u = server.users["testuser1"]
    os.chown(path, u["uid"], u["gid"])


def test_recent_flag_rev1_and_rev2(moat_server):
    moat_server.login()     # creates the Maildir
    drop_new(moat_server, "1700000000.M1P1.test", msg(1))
    c = moat_server.login()
    r = c.command("SELECT INBOX")
    assert b"* 1 RECENT" in r.untagged, r
    r = c.command("FETCH 1 FLAGS")
    assert "\\Recent" in r.fetches()[1]["FLAGS"], r
    drop_new(moat_server, "1700000001.M2P1.test", msg(2))
    c = rev2_login(moat_server)
    r = c.command("SELECT INBOX")
    assert not r.untagged_with("RECENT"), r
    r = c.command("FETCH 1:* FLAGS")
    for f in r.fetches().values():
        assert "\\Recent" not in f["FLAGS"], r


def test_unsolicited_fetch_has_uid(moat_server):
    fill_inbox(moat_server, 2)
    c = rev2_login(moat_server)
    assert c.command("SELECT INBOX").ok
    other = moat_server.login()
    assert other.command("SELECT INBOX").ok
    assert other.command("STORE 2 +FLAGS (\\Flagged)").ok
    r = c.command("NOOP")
    fetches = r.untagged_with("FETCH")
    assert fetches == [b"* 2 FETCH (UID 2 FLAGS (\\Flagged))"], r
    # STORE's own FETCH responses carry the UID too
    r = c.command("STORE 1 +FLAGS (\\Seen)")
    assert r.untagged_with("FETCH") == [b"* 1 FETCH (UID 1 FLAGS (\\Seen))"], r


def test_status_items(moat_server):
    c = fill_inbox(moat_server, 2)
    c = rev2_login(moat_server)
    assert c.command("SELECT INBOX").ok
    assert c.command("STORE 1 +FLAGS (\\Deleted)").ok
    r = c.command("STATUS INBOX (MESSAGES DELETED SIZE UIDNEXT APPENDLIMIT)")
    assert r.ok, r
    line = r.untagged[0]
    assert b"MESSAGES 2" in line and b"DELETED 1" in line, line
    size = len(msg(0)) + len(msg(1))
    assert b"SIZE %d" % size in line, line
    assert b"APPENDLIMIT " in line, line


def test_namespace_and_unselect(moat_server):
    c = rev2_login(moat_server)
    r = c.command("NAMESPACE")
    assert r.ok and r.untagged == [b'* NAMESPACE (("" "/")) NIL NIL'], r
    assert c.command("SELECT INBOX").ok
    r = c.command("UNSELECT")
    assert r.ok and r.untagged == [], r
    assert c.command("FETCH 1 FLAGS").status == "BAD"


def test_fetch_binary_and_body(moat_server):
    fill_inbox(moat_server, 1)
    c = rev2_login(moat_server)
    assert c.command("SELECT INBOX").ok
    r = c.command("FETCH 1 (BINARY.SIZE[1] BINARY.PEEK[1] BODY.PEEK[TEXT])")
    assert r.ok, r
    f = r.fetches()[1]
    assert f["BINARY[1]"] == b"body 0\r\n", f
    assert int(f["BINARY.SIZE[1]"]) == len(b"body 0\r\n"), f
    assert f["BODY[TEXT]"] == b"body 0\r\n", f
