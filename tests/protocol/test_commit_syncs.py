"""Where the group commit's syncs happen (imap/imap-commit.h) and how
deliveries are routed (lmtp/lmtp-delivery.h), traced with strace -f of
the user's imap process:

- a lone APPEND or delivery is synced by the sync thread: its file
  (fsync, or a syncfs) before the rename, then its publish before the
  OK or the 250, with fdatasync of moat.uidlist and moat.index.log and
  fsync of cur/, or a syncfs, whichever cost less lately
  (doc/durability.md, "The lone commit"); a batch into more folders
  than one job's per-file syncs shares one syncfs;
- a MULTIAPPEND (RFC 3502) is committed like single APPENDs: its data
  and its publish are made durable by the sync thread (the loop syncs
  only its journal, which must be on disk before the first rename), the
  OK follows the thread's final syncs after the last rename, and the
  journal (all or none after a crash) stays until then;
- single APPENDs merged into one publish are not journaled (they are
  independent: a crash may publish some, none was answered);
- lmtp keeps a recipient's delivery socket for the next recipient of the
  same user instead of a new lookup through master; a socket whose
  process died is never used; a userdb change is seen soon; a
  recipient whose process dies between RCPT and DATA is looked up again
  and delivered, once."""

import os
import re
import signal

import pytest

import strace_tracer
from moatserver import wait_for
from test_append_group import appenduids, finish_in_one_turn, message
from test_lmtp import MSG, Lmtp, data, fetch_all, start


class Strace(strace_tracer.Strace):
    """strace -f of a process: syncs, renames, unlinks, opens and
    writes, in order, with the thread that made each."""

    TRACE = ("fdatasync,fsync,syncfs,rename,renameat,renameat2,unlink,"
             "openat,write,writev,sendto,sendmsg")

    def __init__(self, pid, path):
        super().__init__(pid, path, self.TRACE)

    def calls(self, where="ended"):
        """In the order the calls returned: a sync counts as done before
        what follows it only once it returned."""
        return super().calls(where)


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


def path_of(c):
    """The path strace -y shows for a call's first descriptor."""
    m = re.search(r"\(\d+<([^>]*)>", c[2])
    return m.group(1) if m else ""


# the per-file syncs that make one folder's publish durable
PUBLISH_SYNCS = {("fdatasync", "moat.uidlist"),
                 ("fdatasync", "moat.index.log"), ("fsync", "cur")}


def final_syncs(calls, pid, after, before):
    """What the sync thread did between calls[after] and calls[before]
    to make a publish durable: "syncfs", "per-file" (all of
    PUBLISH_SYNCS, each successful), or None."""
    window = [c for c in calls[after + 1:before]
              if c[0] != pid and is_sync(c) and c[2].rstrip().endswith("= 0")]
    if any(c[1] == "syncfs" for c in window):
        return "syncfs"
    done = {(c[1], os.path.basename(path_of(c))) for c in window}
    return "per-file" if PUBLISH_SYNCS <= done else None


def publish_threads(calls, pid, after, before):
    """How many threads made the per-file syncs between calls[after] and
    calls[before] (the sync thread and its helpers make them at once)."""
    return len({c[0] for c in calls[after + 1:before]
                if c[0] != pid and c[1] in ("fsync", "fdatasync") and
                (c[1], os.path.basename(path_of(c))) in PUBLISH_SYNCS})


def data_synced(calls, pid, after, rename):
    """The thread made the data of the file that calls[rename] moves
    into cur/ durable after calls[after]: its fsync, or a syncfs."""
    tmp = re.search(r'rename\("([^"]*)"', calls[rename][2]).group(1)
    return any(c[0] != pid and c[2].rstrip().endswith("= 0") and
               (c[1] == "syncfs" or (c[1] == "fsync" and path_of(c) == tmp))
               for c in calls[after + 1:rename])


def check_lone_commits(calls, pid, answers, count):
    """count lone commits one after the other, each answered by
    calls[answers[k]]: each message's data was synced by the thread
    before its rename, its publish after it (per-file syncs or a
    syncfs) before its answer, and the loop synced nothing; per-file
    syncs of a publish were made by more than one thread at once at
    least once. Returns the kinds of final sync seen."""
    text = "\n".join(x[2] for x in calls)
    renames = [i for i, x in enumerate(calls) if into_cur(x)]
    assert len(renames) == count and len(answers) == count, text
    kinds = set()
    prev = -1
    most_threads = 0
    for rename, answer in zip(renames, answers):
        assert prev < rename < answer, text
        assert data_synced(calls, pid, prev, rename), text
        kind = final_syncs(calls, pid, rename, answer)
        assert kind is not None, text
        kinds.add(kind)
        if kind == "per-file":
            most_threads = max(most_threads,
                               publish_threads(calls, pid, rename, answer))
        prev = answer
    if "per-file" in kinds:
        assert most_threads >= 2, text
    # the loop's own syncs: at most a checkpoint's (moat.index and its
    # histories, written as .tmp), nothing of the commits
    for x in calls:
        if x[0] == pid and is_sync(x):
            assert re.search(r"/moat\.index\.[a-z]+\.tmp$|/moat\.index\.tmp$"
                             r"|/Maildir$", path_of(x)), \
                "the loop synced a commit's file: " + x[2]
    return kinds


# lone commits in a row: both kinds of final sync are used (each is
# tried again at least every 16 choices, imap-commit.c)
LONE_COMMITS = 20


def test_lone_appends_synced_before_ok(moat_server, tmp_path):
    """APPENDs one at a time: the thread fsyncs each file (or syncfs)
    before its rename into cur/, then makes the publish durable with
    fdatasync of moat.uidlist and moat.index.log and fsync of cur/, or a
    syncfs, whichever cost less lately, before the OK; both are used."""
    c = moat_server.login()
    assert c.append("INBOX", message("first@test"), sync=False).ok
    assert c.command("SELECT INBOX").ok
    pid = moat_server.wait_children("imap", 1)[0]
    trace = Strace(pid, tmp_path / "strace.out")
    for n in range(LONE_COMMITS):
        r = c.append("INBOX", message(f"lone{n}@test"), sync=False)
        assert r.ok, r
        assert appenduids(r)[1] == [n + 2]
    calls = trace.stop()
    oks = [i for i, x in enumerate(calls) if "OK [APPENDUID" in x[2]]
    kinds = check_lone_commits(calls, pid, oks, LONE_COMMITS)
    assert kinds == {"per-file", "syncfs"}, "\n".join(x[2] for x in calls)


@pytest.mark.moat_settings(lmtp=True)
def test_lone_deliveries_synced_before_250(moat_server, tmp_path):
    """LMTP deliveries one at a time: the imap process answers lmtp only
    after the thread's syncs of the data (before the rename) and of the
    publish (after it); both kinds of final sync are used."""
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, unique(0), 1)[0][0] == 250
    # the folder's first checkpoint (moat.index, with syncs of its own on
    # the loop) before the trace, as in test_multiappend_synced_by_the_thread
    imap = moat_server.login()
    assert imap.command("SELECT INBOX").ok
    pid = moat_server.wait_children("imap", 1)[0]
    trace = Strace(pid, tmp_path / "strace.out")
    for n in range(1, LONE_COMMITS + 1):
        assert c.cmd("MAIL FROM:<sender@example.org>")[0] == 250
        assert c.cmd("RCPT TO:<testuser1>")[0] == 250
        assert data(c, unique(n), 1)[0][0] == 250
    calls = trace.stop()
    # the DELIVER's answer to lmtp: "OK <id> <uid>"
    answers = [i for i, x in enumerate(calls) if x[0] == pid and x[1] in (
        "write", "writev", "sendto", "sendmsg") and '"OK\\t' in x[2]]
    kinds = check_lone_commits(calls, pid, answers, LONE_COMMITS)
    assert kinds == {"per-file", "syncfs"}, "\n".join(x[2] for x in calls)
    assert messages(moat_server, "testuser1") == LONE_COMMITS + 1


@pytest.mark.moat_settings(log_debug="yes")
def test_appends_into_many_folders_share_one_syncfs(moat_server, tmp_path):
    """Four APPENDs into four folders read in one turn: one batch, made
    durable by one syncfs after the last rename (twelve per-file syncs
    would cost more), before every OK."""
    setup = moat_server.login()
    for n in range(4):
        assert setup.command(f"CREATE Many{n}").ok
        assert setup.append(f"Many{n}", message(f"seed{n}@test"),
                            sync=False).ok
    clients = [moat_server.login() for _ in range(4)]
    pid = moat_server.wait_children("imap", 1)[0]
    trace = Strace(pid, tmp_path / "strace.out")
    tags = []
    for n, c in enumerate(clients):
        tag = c.next_tag()
        m = message(f"many{n}@test")
        c.send(f"{tag} APPEND Many{n} {{{len(m)}}}\r\n")
        assert c.read_tagged(tag).status == "+"
        c.send(m)
        tags.append(tag)
    finish_in_one_turn(setup, pid, clients)
    for c, tag in zip(clients, tags):
        r = c.read_tagged(tag)
        assert r.ok, r
    calls = trace.stop()
    text = "\n".join(x[2] for x in calls)
    assert re.search(r"group commit: 4 requests, 4 messages, 4 folders",
                     moat_server.logs()), moat_server.logs()
    renames = [i for i, x in enumerate(calls) if x[1].startswith("rename")
               and re.search(r"/\.Many\d/tmp/.*/\.Many\d/cur/", x[2])]
    oks = [i for i, x in enumerate(calls) if "OK [APPENDUID" in x[2]]
    assert len(renames) == 4 and len(oks) == 4, text
    assert final_syncs(calls, pid, renames[-1], min(oks)) == "syncfs", text


def test_multiappend_synced_by_the_thread(moat_server, tmp_path):
    """A MULTIAPPEND of three: the loop thread syncs only the journal
    (its file and cur/); the data and the publish are synced by the sync
    thread, the OK follows its final syncs (per-file: one folder) after
    the last rename, and the journal is removed only after them."""
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
    # the thread's final syncs after the last rename, before the OK
    assert final_syncs(calls, pid, renames[-1], ok) is not None, text
    final = max(i for i, x in enumerate(calls[:ok]) if x[0] != pid and
                is_sync(x))
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
    # still acknowledged only after the thread's final syncs that
    # followed the last rename
    renames = [i for i, x in enumerate(calls) if into_cur(x)]
    assert len(renames) == 3, text
    oks = [i for i, x in enumerate(calls) if "OK [APPENDUID" in x[2]]
    assert oks, text
    # the three files' data by the thread before their renames
    for i in renames:
        assert data_synced(calls, pid, -1, i), text
    assert final_syncs(calls, pid, renames[-1], min(oks)) is not None, text


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


def kill_and_reap(server):
    """SIGKILL the user's imap process and wait until master reaped it
    (only then are its sockets closed: see the test above)."""
    pid = server.wait_children("imap", 1)[0]
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 10)


def subjects(server, user):
    return sorted(re.search(rb"Subject: ([^\r\n]*)", m).group(1)
                  for m in fetch_all(server, user))


@pytest.mark.moat_settings(lmtp=True)
def test_process_dies_between_rcpt_and_data(moat_server):
    """The first recipient of a user (master starts the imap process at
    RCPT): the process is killed before DATA. Nothing was sent to it, so
    lmtp asks master again at DATA and delivers through a new process:
    250, and the message is there once."""
    c = Lmtp(moat_server)
    assert start(c, ["testuser1"])[0][0] == 250
    kill_and_reap(moat_server)
    assert data(c, unique(1), 1)[0][0] == 250
    assert c.cmd("QUIT")[0] == 221
    assert subjects(moat_server, "testuser1") == [b"lmtp test 1"]
    assert "looking the recipient up again" in moat_server.logs()


@pytest.mark.moat_settings(lmtp=True)
def test_kept_socket_dies_between_rcpt_and_data(moat_server):
    """A recipient accepted over a kept delivery socket (or a new one, on
    a machine slow enough to pass the keep time) whose process is killed
    before DATA, with a second user in the same transaction: both get
    250, each message is there once."""
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, unique(1), 1)[0][0] == 250
    assert c.cmd("MAIL FROM:<sender@example.org>")[0] == 250
    assert c.cmd("RCPT TO:<testuser1>")[0] == 250
    kill_and_reap(moat_server)
    assert c.cmd("RCPT TO:<testuser2>")[0] == 250
    replies = data(c, unique(2), 2)
    assert [r[0] for r in replies] == [250, 250], replies
    assert c.cmd("QUIT")[0] == 221
    assert subjects(moat_server, "testuser1") == [b"lmtp test 1",
                                                   b"lmtp test 2"]
    assert subjects(moat_server, "testuser2") == [b"lmtp test 2"]
