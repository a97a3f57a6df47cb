"""OBJECTID (RFC 8474): MAILBOXID in CREATE, SELECT/EXAMINE and STATUS
(section 4), FETCH EMAILID and THREADID (5), SEARCH EMAILID and THREADID
(6), the objectid syntax (7). Every id must stay the same across
sessions, a restart of the user's imap process, a lost index or cache,
RENAME (4), COPY and MOVE (5.1). How moat makes them: doc/extensions.md,
"OBJECTID"."""

import os
import re
import signal

import pytest

from moatserver import wait_for

OBJECTID_RE = re.compile(rb"^[A-Za-z0-9_-]{1,255}$")
MAILBOXID_CODE_RE = re.compile(rb"\[MAILBOXID \(([^)]*)\)\]")
STATUS_ID_RE = re.compile(rb"MAILBOXID \(([^)]*)\)")
FETCH_RE = re.compile(rb"^\* (\d+) FETCH \((.*)\)$")
EMAILID_RE = re.compile(rb"EMAILID \(([^)]*)\)")
THREADID_RE = re.compile(rb"THREADID (\(([^)]*)\)|NIL)")

# The three messages of RFC 8474 5.3's example (B replies to A).
MESSAGE_A = (b"From: a@example.com\r\nSubject: Message A\r\n"
             b"Message-ID: <fake.1521475657.54797@example.com>\r\n\r\n"
             b"A body.\r\n")
MESSAGE_B = (b"From: b@example.org\r\nSubject: Re: Message A\r\n"
             b"Message-ID: <fake.1521475657.21213@example.org>\r\n"
             b"References: <fake.1521475657.54797@example.com>\r\n\r\n"
             b"B body.\r\n")
MESSAGE_C = (b"From: c@example.com\r\nSubject: Message C\r\n"
             b"Message-ID: <fake.1521475657.60280@example.com>\r\n\r\n"
             b"C body.\r\n")


def ok(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    return r


def valid(oid):
    return OBJECTID_RE.match(oid) is not None


def created_id(c, name):
    r = ok(c, f"CREATE {name}")
    m = MAILBOXID_CODE_RE.search(r.line)
    assert m and valid(m.group(1)), r
    return m.group(1)


def selected_id(c, name, command="SELECT"):
    r = ok(c, f"{command} {name}")
    found = [MAILBOXID_CODE_RE.search(line) for line in r.untagged
             if line.startswith(b"* OK [MAILBOXID ")]
    assert len(found) == 1 and found[0], r
    return found[0].group(1)


def status_id(c, name):
    r = ok(c, f"STATUS {name} (MAILBOXID)")
    lines = r.untagged_with("STATUS")
    assert len(lines) == 1, r
    m = STATUS_ID_RE.search(lines[0])
    assert m and valid(m.group(1)), r
    return m.group(1)


def ids(c, seqs="1:*", uid=False):
    """{seq: (emailid, threadid)} of the selected mailbox."""
    r = ok(c, f"{'UID ' if uid else ''}FETCH {seqs} (EMAILID THREADID)")
    out = {}
    for line in r.untagged:
        m = FETCH_RE.match(line)
        if not m:
            continue
        e, t = EMAILID_RE.search(m.group(2)), THREADID_RE.search(m.group(2))
        assert e and t and t.group(2), line
        assert valid(e.group(1)) and valid(t.group(2)), line
        out[int(m.group(1))] = (e.group(1), t.group(2))
    return out


def search(c, keys):
    r = ok(c, f"SEARCH {keys}")
    lines = r.untagged_with("SEARCH")
    assert len(lines) == 1, r
    return [int(x) for x in lines[0].split()[2:]]


def rfc_example(c, mailbox="INBOX"):
    for m in (MESSAGE_A, MESSAGE_B, MESSAGE_C):
        assert c.append(mailbox, m).ok


def restart_imap(server, c, while_down=None):
    """Ends the user's imap process (SIGKILL: nothing left unwritten is
    kept), calls while_down() while none runs, and logs in again: a new
    process with new handles."""
    [pid] = server.wait_children("imap", 1)
    os.kill(pid, signal.SIGKILL)
    c.wait_closed(30)
    assert wait_for(lambda: not server.child_pids("imap"), 30)
    if while_down:
        while_down()
    return server.login()


def drop_index(*dirs):
    """Returns a function removing the index files of the folders."""
    def drop():
        for d in dirs:
            for f in d.glob("moat.index*"):
                f.unlink()
    return drop


def folder(server, name):
    root = server.maildir("testuser1")
    return root if name == "INBOX" else root / ("." + name)


# ---- capability, syntax (7) ----

def test_capability(moat_server):
    c = moat_server.login()
    r = ok(c, "CAPABILITY")
    assert b"OBJECTID" in r.untagged[0].split()


# ---- MAILBOXID (4) ----

def test_create_response_code_4_1(moat_server):
    """RFC 8474 4.1's example: each CREATE answers its own id; a CREATE
    that fails has none."""
    c = moat_server.login()
    foo = created_id(c, "foo")
    bar = created_id(c, "bar")
    assert foo != bar
    r = c.command("CREATE foo")
    assert r.status == "NO" and b"MAILBOXID" not in r.line, r
    # a parent made on the way is a mailbox with an id of its own
    child = created_id(c, "p1/p2")
    parent = status_id(c, "p1")
    assert parent != child and status_id(c, "p1/p2") == child


def test_select_examine_untagged_ok_4_2(moat_server):
    c = moat_server.login()
    foo = created_id(c, "foo")
    assert selected_id(c, "foo") == foo
    assert selected_id(c, "foo", "EXAMINE") == foo
    inbox = selected_id(c, "INBOX")
    assert inbox != foo and status_id(c, "INBOX") == inbox
    # also with CONDSTORE and in IMAP4rev2 mode
    assert selected_id(c, "foo (CONDSTORE)") == foo
    ok(c, "ENABLE IMAP4rev2")
    assert selected_id(c, "foo") == foo


def test_status_and_rename_4_3(moat_server):
    """RFC 8474 4.3's example, then LIST-STATUS."""
    c = moat_server.login()
    foo = created_id(c, "foo")
    bar = created_id(c, "bar")
    assert status_id(c, "foo") == foo and status_id(c, "bar") == bar
    ok(c, "RENAME foo renamed")
    assert status_id(c, "renamed") == foo
    assert status_id(c, "bar") == bar
    assert c.command("STATUS foo (MAILBOXID)").status == "NO"
    # with other items, and the selected mailbox's own view
    r = ok(c, "STATUS bar (MESSAGES MAILBOXID UIDNEXT)")
    assert STATUS_ID_RE.search(r.untagged[0]).group(1) == bar
    assert b"MESSAGES 0" in r.untagged[0] and b"UIDNEXT" in r.untagged[0]
    ok(c, "SELECT bar")
    assert status_id(c, "bar") == bar
    r = ok(c, 'LIST "" "*" RETURN (STATUS (MAILBOXID))')
    got = {}
    for line in r.untagged_with("STATUS"):
        name = line.split()[2]
        got[name] = STATUS_ID_RE.search(line).group(1)
    assert got[b"renamed"] == foo and got[b"bar"] == bar
    assert got[b"INBOX"] not in (foo, bar)


def test_rename_parent_keeps_children_ids(moat_server):
    c = moat_server.login()
    a = created_id(c, "a")
    ab = created_id(c, "a/b")
    abc = created_id(c, "a/b/c")
    ok(c, "RENAME a x")
    assert [status_id(c, n) for n in ("x", "x/b", "x/b/c")] == [a, ab, abc]
    # a mailbox made again under the old name is a new one
    assert created_id(c, "a") not in (a, ab, abc)


def test_rename_inbox(moat_server):
    """RENAME INBOX moves the messages with their UIDVALIDITY to the new
    mailbox (RFC 9051 6.3.6), which therefore keeps INBOX's id; INBOX,
    empty with a new UIDVALIDITY, is a new mailbox with a new id."""
    c = moat_server.login()
    rfc_example(c)
    inbox = selected_id(c, "INBOX")
    before = ids(c)
    ok(c, "UNSELECT")
    ok(c, "RENAME INBOX old")
    assert status_id(c, "old") == inbox
    new_inbox = status_id(c, "INBOX")
    assert new_inbox != inbox
    assert selected_id(c, "INBOX") == new_inbox
    assert selected_id(c, "old") == inbox
    assert ids(c) == before


def test_delete_and_create_gives_new_id(moat_server):
    c = moat_server.login()
    first = created_id(c, "gone")
    ok(c, "DELETE gone")
    assert created_id(c, "gone") != first
    # a parent with children becomes \\Noselect: made again, a new id
    parent = created_id(c, "q")
    created_id(c, "q/child")
    ok(c, "DELETE q")
    assert created_id(c, "q") != parent


def test_foreign_folder_gets_id_and_keeps_it(moat_server):
    """A folder another Maildir writer made (no id file) gets one when
    moat first reports it, and keeps it: in the folder, not the index."""
    root = moat_server.maildir("testuser1")
    for sub in ("cur", "new", "tmp"):
        (root / ".Foreign" / sub).mkdir(parents=True)
    moat_server.chown_home(moat_server.users["testuser1"])
    c = moat_server.login()
    first = status_id(c, "Foreign")
    assert selected_id(c, "Foreign") == first
    assert (folder(moat_server, "Foreign") / "moat.mailboxid").exists()
    ok(c, "UNSELECT")
    c = restart_imap(moat_server, c,
                     drop_index(folder(moat_server, "Foreign")))
    assert status_id(c, "Foreign") == first
    assert selected_id(c, "Foreign") == first


def test_mailboxid_survives_restart_and_rebuild(moat_server):
    c = moat_server.login()
    box = created_id(c, "keep")
    inbox = status_id(c, "INBOX")
    c = restart_imap(moat_server, c)
    assert status_id(c, "keep") == box and status_id(c, "INBOX") == inbox
    c = restart_imap(moat_server, c, drop_index(
        folder(moat_server, "keep"), folder(moat_server, "INBOX")))
    assert selected_id(c, "keep") == box
    assert selected_id(c, "INBOX") == inbox


def test_garbled_id_file_is_replaced(moat_server):
    c = moat_server.login()
    created_id(c, "bad")
    path = folder(moat_server, "bad") / "moat.mailboxid"
    path.write_text("not an id!\n")
    new = status_id(c, "bad")
    assert path.read_text() == new.decode() + "\n"
    assert status_id(c, "bad") == new


def test_status_mailboxid_errors(moat_server):
    c = moat_server.login()
    assert c.command("STATUS nosuch (MAILBOXID)").status == "NO"
    assert c.command("STATUS INBOX (MAILBOXID").status == "BAD"
    assert c.command("STATUS INBOX (MAILBOXIDS)").status == "BAD"


# ---- EMAILID, THREADID (5) ----

def test_fetch_example_5_3(moat_server):
    """RFC 8474 5.3's example: B replies to A (same THREADID), C stands
    alone; MOVE keeps both ids in the target."""
    c = moat_server.login()
    rfc_example(c)
    created_id(c, "foo")
    ok(c, "SELECT INBOX")
    got = ids(c)
    (ea, ta), (eb, tb), (ec, tc) = got[1], got[2], got[3]
    assert len({ea, eb, ec}) == 3
    assert ta == tb and tc != ta
    # EMAILIDs and THREADIDs never share a value (5.2)
    assert not {ea, eb, ec} & {ta, tc}
    r = ok(c, "MOVE 2 foo")
    assert any(b"COPYUID" in line for line in r.untagged + [r.line]), r
    assert ids(c) == {1: got[1], 2: got[3]}
    ok(c, "SELECT foo")
    assert ids(c) == {1: got[2]}
    # each item alone, by UID, and asked twice
    r = ok(c, "UID FETCH 1:* (EMAILID EMAILID)")
    assert r.untagged[0].count(b"EMAILID") == 1, r
    assert EMAILID_RE.search(r.untagged[0]).group(1) == eb
    r = ok(c, "FETCH 1 THREADID")
    assert THREADID_RE.search(r.untagged[0]).group(2) == ta


def test_copy_keeps_emailid(moat_server):
    """COPY (RFC 8474 5.1): the copy has the source's id, also a copy of
    a copy, one into the same mailbox, and after the source is gone."""
    c = moat_server.login()
    rfc_example(c)
    ok(c, "CREATE one")
    ok(c, "CREATE two")
    ok(c, "SELECT INBOX")
    src = ids(c)
    ok(c, "COPY 1:3 one")
    ok(c, "COPY 1 INBOX")
    assert ids(c)[4] == src[1]
    ok(c, "SELECT one")
    assert ids(c) == src
    ok(c, "COPY 2 two")
    ok(c, "SELECT INBOX")
    ok(c, "STORE 1:* +FLAGS.SILENT (\\Deleted)")
    ok(c, "EXPUNGE")
    ok(c, "SELECT two")
    assert ids(c) == {1: src[2]}
    # an APPEND of the same bytes is a new message: another id
    assert c.append("two", MESSAGE_B).ok
    ok(c, "NOOP")
    again = ids(c)
    assert again[2][0] != src[2][0] and again[2][1] == src[2][1]


def test_ids_stable_across_sessions_restart_rebuild(moat_server):
    c = moat_server.login()
    rfc_example(c)
    ok(c, "CREATE foo")
    ok(c, "SELECT INBOX")
    ok(c, "COPY 1:3 foo")
    first = ids(c)
    c2 = moat_server.login()
    ok(c2, "EXAMINE INBOX")
    assert ids(c2) == first
    c2.close()
    c = restart_imap(moat_server, c)
    ok(c, "SELECT INBOX")
    assert ids(c) == first
    ok(c, "UNSELECT")
    # the cache, then the whole index lost: the ids come from the file
    # names again, the same
    inbox, foo = folder(moat_server, "INBOX"), folder(moat_server, "foo")
    (inbox / "moat.index.cache").unlink()
    ok(c, "SELECT INBOX")
    assert ids(c) == first
    ok(c, "UNSELECT")
    c = restart_imap(moat_server, c, drop_index(inbox, foo))
    ok(c, "SELECT INBOX")
    assert ids(c) == first
    ok(c, "SELECT foo")
    assert ids(c) == first


def test_fetch_of_cached_ids_opens_no_message_file(moat_server):
    """After the first FETCH the ids come from the cache: with the message
    files unreadable, the same answer."""
    c = moat_server.login()
    rfc_example(c)
    ok(c, "SELECT INBOX")
    first = ids(c)
    cur = folder(moat_server, "INBOX") / "cur"
    files = [cur / n for n in os.listdir(cur)]
    assert len(files) == 3
    for f in files:
        os.chmod(f, 0)
    try:
        assert ids(c) == first
        c2 = moat_server.login()
        ok(c2, "EXAMINE INBOX")
        assert ids(c2) == first
        # proof that the files really are unreadable to the server
        r = c2.command("FETCH 1 BODY.PEEK[]")
        assert b"A body." not in b"".join(r.untagged)
    finally:
        for f in files:
            os.chmod(f, 0o600)


def test_imported_message_gets_ids(moat_server):
    """A message another Maildir writer put in cur/ (as after a switch from
    Dovecot) has ids too, the same in every session."""
    cur = folder(moat_server, "INBOX") / "cur"
    (cur / "1600000000.M1P2.otherhost,S=120:2,S").write_bytes(
        MESSAGE_B.replace(b"\r\n", b"\n"))
    (cur / "1600000001.M1P2.otherhost:2,").write_bytes(
        MESSAGE_A.replace(b"\r\n", b"\n"))
    moat_server.chown_home(moat_server.users["testuser1"])
    c = moat_server.login()
    ok(c, "SELECT INBOX")
    first = ids(c)
    assert len(first) == 2 and first[1][1] == first[2][1]
    assert first[1][0] != first[2][0]
    c = restart_imap(moat_server, c)
    ok(c, "SELECT INBOX")
    assert ids(c) == first


def test_threadid_references_semantics(moat_server):
    """The thread root as REFERENCES threading sees it: a reply whose
    References start at the root, one that has In-Reply-To only, and a
    message without any Message-ID (a thread of its own)."""
    c = moat_server.login()
    root = b"Message-ID: <root@x>\r\nSubject: r\r\n\r\nroot\r\n"
    child = (b"Message-ID: <child@x>\r\nReferences: <root@x>\r\n"
             b"Subject: Re: r\r\n\r\nchild\r\n")
    grandchild = (b"Message-ID: <gc@x>\r\nReferences: <root@x> <child@x>"
                  b"\r\nIn-Reply-To: <child@x>\r\n\r\ngc\r\n")
    irt_only = (b"Message-ID: <irt@x>\r\nIn-Reply-To: <root@x>\r\n\r\n"
                b"irt\r\n")
    no_ids_1 = b"Subject: none\r\n\r\none\r\n"
    no_ids_2 = b"Subject: none\r\n\r\ntwo\r\n"
    for m in (root, child, grandchild, irt_only, no_ids_1, no_ids_2):
        assert c.append("INBOX", m).ok
    ok(c, "SELECT INBOX")
    got = ids(c)
    threads = [got[i][1] for i in range(1, 7)]
    assert len(set(threads[:4])) == 1
    assert threads[4] != threads[0] and threads[5] != threads[0]
    assert threads[4] != threads[5]


# ---- SEARCH (6) ----

def test_search_example_6(moat_server):
    c = moat_server.login()
    rfc_example(c)
    ok(c, "SELECT INBOX")
    got = ids(c)
    assert search(c, f"EMAILID {got[1][0].decode()}") == [1]
    assert search(c, f"THREADID {got[1][1].decode()}") == [1, 2]
    assert search(c, f"THREADID {got[3][1].decode()}") == [3]
    # with other keys, negated, by UID
    assert search(c, f"NOT EMAILID {got[1][0].decode()}") == [2, 3]
    assert search(c, f"OR EMAILID {got[1][0].decode()} "
                     f"EMAILID {got[3][0].decode()}") == [1, 3]
    r = ok(c, f"UID SEARCH THREADID {got[1][1].decode()} SUBJECT Re")
    assert r.untagged_with("SEARCH")[0].split()[2:] == [b"2"]
    # ids are case-sensitive (7); an unknown or another kind's id
    # matches nothing
    assert search(c, f"EMAILID {got[1][0].decode().upper()}") == []
    assert search(c, f"EMAILID {got[1][1].decode()}") == []
    assert search(c, f"THREADID {got[1][0].decode()}") == []
    assert search(c, "EMAILID Mnosuchmessage") == []
    assert search(c, "THREADID " + "x" * 255) == []
    # ESEARCH
    r = ok(c, f"SEARCH RETURN (COUNT) THREADID {got[1][1].decode()}")
    assert b"COUNT 2" in r.untagged_with("ESEARCH")[0], r


def test_search_after_move_across_sessions(moat_server):
    c = moat_server.login()
    rfc_example(c)
    ok(c, "CREATE foo")
    ok(c, "SELECT INBOX")
    got = ids(c)
    ok(c, "MOVE 2 foo")
    c = restart_imap(moat_server, c)
    ok(c, "SELECT foo")
    assert search(c, f"EMAILID {got[2][0].decode()}") == [1]
    assert search(c, f"THREADID {got[1][1].decode()}") == [1]


@pytest.mark.parametrize("key", [
    "EMAILID", "EMAILID a.b", "EMAILID a/b", "EMAILID \"\"",
    "EMAILID \"M123\"", "THREADID (T1)", "THREADID " + "x" * 256,
    "EMAILID M1 THREADID", "THREADID T+1"])
def test_search_bad_objectid_syntax(moat_server, key):
    c = moat_server.login()
    assert c.append("INBOX", MESSAGE_A).ok
    ok(c, "SELECT INBOX")
    r = c.command(f"SEARCH {key}")
    assert r.status == "BAD", r
    # the session goes on
    assert search(c, "ALL") == [1]


def test_fetch_unknown_item_is_bad(moat_server):
    c = moat_server.login()
    assert c.append("INBOX", MESSAGE_A).ok
    ok(c, "SELECT INBOX")
    assert c.command("FETCH 1 (EMAILIDS)").status == "BAD"
    assert c.command("FETCH 1 (EMAILID").status == "BAD"


def test_unwritable_folder_selects_without_id(moat_server):
    """A folder without an id that cannot get one (its directory not
    writable) is still selectable, without the MAILBOXID line; STATUS
    (MAILBOXID) of it fails. Both logged."""
    c = moat_server.login()
    assert c.append("INBOX", MESSAGE_A).ok
    ok(c, "CREATE ro")
    assert c.append("ro", MESSAGE_A).ok
    ok(c, "EXAMINE ro")
    ok(c, "UNSELECT")
    path = folder(moat_server, "ro")
    (path / "moat.mailboxid").unlink()
    os.chmod(path, 0o500)
    try:
        r = ok(c, "EXAMINE ro")
        assert not any(b"MAILBOXID" in line for line in r.untagged), r
        assert b"EXISTS" in b"".join(r.untagged)
        assert c.command("STATUS ro (MAILBOXID)").status == "NO"
    finally:
        os.chmod(path, 0o700)
    assert status_id(c, "ro")
