"""Where the group commit's syncs happen (imap/imap-commit.h) and how
deliveries are routed (lmtp/lmtp-delivery.h), traced with strace -f of
the user's imap process:

- a MULTIAPPEND (RFC 3502) is committed like single APPENDs: its data
  and its publish are made durable by the sync thread (the loop syncs
  only its journal, which must be on disk before the first rename), the
  OK follows the thread's syncfs after the last rename, and the journal
  (all or none after a crash) stays until then;
- single APPENDs merged into one publish are not journaled (they are
  independent: a crash may publish some, none was answered);
- lmtp keeps a recipient's delivery socket for the next recipient of the
  same user instead of a new lookup through master; a socket whose
  process died is never used; a userdb change is seen soon."""

import os
import re
import signal

import pytest

import strace_tracer
from moatserver import wait_for
from test_append_group import appenduids, finish_in_one_turn, message
from test_lmtp import MSG, Lmtp, data, start


class Strace(strace_tracer.Strace):
    """strace -f of a process: syncs, renames, unlinks, opens and
    writes, in order, with the thread that made each."""

    TRACE = ("fdatasync,fsync,syncfs,rename,renameat,renameat2,unlink,"
             "openat,write,writev,sendto,sendmsg")

    def __init__(self, pid, path):
        super().__init__(pid, path, self.TRACE)


def unique(n):
    """A message of its own (the same one again would be taken for a
    retry of the first, imap/imap-deliver.h)."""
    return MSG.replace(b"Subject: lmtp test", b"Subject: lmtp test %d" % n)


def messages(server, user):
    imap = server.login(user)
    r = imap.command("STATUS INBOX (MESSAGES)")
    assert r.ok, r
    m = re.search(rb"MESSAGES (\d+)", b"".join(r.untagged))
    imap.command("LOGOUT")
    return int(m.group(1))


def index_of(calls, pred, start=0):
    for i in range(start, len(calls)):
        if pred(calls[i]):
            return i
    return -1


def is_sync(c):
    return c[1] in ("fsync", "fdatasync", "syncfs")


def into_cur(c):
    return (c[1].startswith("rename") and "/Maildir/tmp/" in c[2] and
            "/Maildir/cur/" in c[2])


def test_multiappend_synced_by_the_thread(moat_server, tmp_path):
    """A MULTIAPPEND of three: the loop thread syncs only the journal
    (its file and cur/); the data and the publish are synced by the sync
    thread, the OK follows its syncfs after the last rename, and the
    journal is removed only after that syncfs."""
    c = moat_server.login()
    # INBOX's moat.index exists before the trace: a folder's first
    # messages make the index's first checkpoint, with syncs of its own
    # (moat.index and its histories), on the loop
    m = message("first@test")
    assert c.append("INBOX", m, sync=False).ok
    assert c.command("SELECT INBOX").ok
    pid = moat_server.wait_children("imap", 1)[0]
    trace = Strace(pid, tmp_path / "strace.out")
    tag = c.next_tag()
    cmd = f"{tag} APPEND INBOX".encode()
    for n in range(3):
        m = message(f"multi{n}@test")
        cmd += b" {%d+}\r\n" % len(m) + m
    c.send(cmd + b"\r\n")
    r = c.read_tagged(tag)
    assert r.ok, r
    assert appenduids(r)[1] == [2, 3, 4]
    calls = trace.stop()
    text = "\n".join(x[2] for x in calls)
    ok = index_of(calls, lambda x: "OK [APPENDUID" in x[2])
    assert ok >= 0, text
    renames = [i for i, x in enumerate(calls) if into_cur(x)]
    assert len(renames) == 3, text
    # the loop's own syncs: the journal's file and directory, nothing else
    loop_syncs = [x for x in calls[:ok] if x[0] == pid and is_sync(x)]
    assert loop_syncs, text
    for x in loop_syncs:
        path = re.search(r"\(\d+<([^>]*)>", x[2]).group(1)
        assert path.endswith(("/cur", "/cur/.moat.staged.tmp")), \
            "the loop synced more than the journal: " + x[2]
    # the data is synced before the first rename, by the thread
    first = renames[0]
    assert index_of(calls[:first], lambda x: x[0] != pid and is_sync(x)) >= 0, text
    # a syncfs by the thread after the last rename, before the OK
    final = index_of(calls, lambda x: x[0] != pid and x[1] == "syncfs",
                     renames[-1])
    assert 0 <= final < ok, text
    # the journal: written and synced before the first rename, removed
    # after the final syncfs
    journal = index_of(calls, lambda x: x[1].startswith("rename") and
                       x[2].count(".moat.staged") == 2)
    assert 0 <= journal < first, text
    removed = index_of(calls, lambda x: x[1] == "unlink" and
                       ".moat.staged" in x[2])
    assert removed > final, text
    found = c.command("UID FETCH 1:* (UID)")
    assert found.ok and len(found.fetches()) == 4


@pytest.mark.moat_settings(log_debug="yes")
def test_merged_appends_are_not_journaled(moat_server, tmp_path):
    """Three single APPENDs into INBOX read in one turn are published as
    one set, each with its own OK, and without the MULTIAPPEND journal."""
    setup = moat_server.login()
    assert setup.command("SELECT INBOX").ok
    clients = [moat_server.login() for _ in range(3)]
    pid = moat_server.wait_children("imap", 1)[0]
    trace = Strace(pid, tmp_path / "strace.out")
    tags = []
    for n, c in enumerate(clients):
        tag = c.next_tag()
        m = message(f"merged{n}@test")
        c.send(f"{tag} APPEND INBOX {{{len(m)}}}\r\n")
        assert c.read_tagged(tag).status == "+"
        c.send(m)
        tags.append(tag)
    finish_in_one_turn(setup, pid, clients)
    uids = []
    for c, tag in zip(clients, tags):
        r = c.read_tagged(tag)
        assert r.ok, r
        uids += appenduids(r)[1]
    assert sorted(uids) == [1, 2, 3]
    calls = trace.stop()
    text = "\n".join(x[2] for x in calls)
    assert re.search(r"group commit: 3 requests, 3 messages",
                     moat_server.logs()), moat_server.logs()
    assert not any(".moat.staged.tmp" in x[2] or (x[1].startswith("rename")
                   and ".moat.staged" in x[2]) for x in calls), text
    # still acknowledged only after the thread's syncfs that followed
    # the last rename
    renames = [i for i, x in enumerate(calls) if into_cur(x)]
    assert len(renames) == 3, text
    final = index_of(calls, lambda x: x[0] != pid and x[1] == "syncfs",
                     renames[-1])
    oks = [i for i, x in enumerate(calls) if "OK [APPENDUID" in x[2]]
    assert final >= 0 and oks and min(oks) > final, text


def rcpt_lookups(server, user):
    """Master's debug lines of recipients it looked up for user."""
    return len(re.findall(rf"lmtp: recipient {user} is user {user} ",
                          server.logs()))


@pytest.mark.moat_settings(lmtp=True, log_debug="yes")
def test_delivery_socket_kept_for_the_same_user(moat_server):
    """Ten transactions for one user over one connection: master looks
    the user up far fewer than ten times (the socket of the last
    recipient is kept for the next), and every message is delivered."""
    c = Lmtp(moat_server)
    assert c.cmd("LHLO client.example")[0] == 250
    for n in range(10):
        assert c.cmd("MAIL FROM:<sender@example.org>")[0] == 250
        assert c.cmd("RCPT TO:<testuser1>")[0] == 250
        assert data(c, unique(n), 1)[0][0] == 250
    assert c.cmd("QUIT")[0] == 221
    assert messages(moat_server, "testuser1") == 10
    lookups = rcpt_lookups(moat_server, "testuser1")
    # one per second of the run at most; a loaded machine may stall
    # between two transactions, never between all of them
    assert 1 <= lookups < 10, moat_server.logs()


@pytest.mark.moat_settings(lmtp=True)
def test_kept_socket_of_a_dead_process_is_not_used(moat_server):
    """The user's imap process dies after a delivery: the next recipient
    (within the socket's keep time) gets a new process, not a 451."""
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, MSG, 1)[0][0] == 250
    pid = moat_server.wait_children("imap", 1)[0]
    os.kill(pid, signal.SIGKILL)
    # Reaped by master, not only a zombie: a killed process's sockets
    # close when its last thread is gone (its sync thread may outlive the
    # main thread's exit for a moment), and master reaps it only then.
    # Before that a kept socket still looks alive, and a delivery on it
    # gets the 451 a real MTA would retry.
    assert wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 10)
    assert c.cmd("MAIL FROM:<sender@example.org>")[0] == 250
    assert c.cmd("RCPT TO:<testuser1>")[0] == 250
    assert data(c, unique(2), 1)[0][0] == 250
    assert messages(moat_server, "testuser1") == 2


@pytest.mark.moat_settings(lmtp=True)
def test_userdb_change_reaches_lmtp_soon(moat_server):
    """A user removed from the userdb right after a delivery: a kept
    socket may take mail for a moment more, then RCPT answers 550."""
    c = Lmtp(moat_server)
    start(c, ["testuser2"])
    assert data(c, MSG, 1)[0][0] == 250
    lines = moat_server.users_path.read_text().splitlines(keepends=True)
    moat_server.users_path.write_text(
        "".join(x for x in lines if not x.startswith("testuser2:")))

    def refused():
        code = c.cmd("RCPT TO:<testuser2>")[0]
        assert code in (250, 550), code
        c.cmd("RSET")
        c.cmd("MAIL FROM:<sender@example.org>")
        return code == 550
    assert c.cmd("RSET")[0] == 250
    assert c.cmd("MAIL FROM:<sender@example.org>")[0] == 250
    assert wait_for(refused, 15, interval=0.2)
