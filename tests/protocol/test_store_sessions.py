"""One sync for the STOREs of all the user's sessions in a loop turn
(imap/imap-flag-sync.h): sessions of one user share its imap process,
and STOREs of several of them that the process reads in one turn are
made durable by one fdatasync per index log (one per folder), before
any of their OKs leaves. strace delays the process's epoll_wait so that
every session's STORE is read in the same turn; the order of renames,
syncs and socket writes shows that each OK still follows the sync of
every change made before it."""

import strace_tracer
from test_store_range import flags_of, ok
import test_store_range

SESSIONS = 4
KEYWORDS = " ".join(f"$Sess{i}" for i in range(SESSIONS))
# How long each epoll_wait of the imap process is held (microseconds):
# far longer than the client needs to send one line on every session.
DELAY_US = 1000000


def trace_delayed(pid, path):
    """strace of the imap process (as test_store_pipelined's), each of its
    epoll_waits held DELAY_US first."""
    return strace_tracer.Strace(
        pid, path, "fdatasync,fsync,rename,renameat,renameat2,write,writev,"
        "pwrite64,sendto,sendmsg,"
        # strace delays only what it traces
        "epoll_wait,epoll_pwait", strsize=4096,
        extra=["-e", f"inject=epoll_wait,epoll_pwait:delay_enter={DELAY_US}"])


def sessions(server, folders):
    """SESSIONS sessions of testuser1; session i selects folders[i]; 8
    messages in each folder, the keywords defined."""
    first = test_store_range.fill(server, 8)
    for name in set(folders) - {"INBOX"}:
        ok(first, f"CREATE {name}")
        for i in range(8):
            assert first.append(name, test_store_range.msg(i + 1)).ok
    out = [first] + [server.login("testuser1") for _ in folders[1:]]
    for c, name in zip(out, folders):
        ok(c, f"SELECT {name}")
        ok(c, f"STORE 8 +FLAGS.SILENT ({KEYWORDS})")
        ok(c, f"STORE 8 -FLAGS.SILENT ({KEYWORDS})")
    return out


def folder_of(line):
    """The folder (its Maildir++ directory) of a path strace -y shows."""
    return ".Other" if "/.Other/" in line else "INBOX"


def check_every_ok_after_syncs(calls):
    """At each write of a STORE's OK, every rename made in a folder's cur/
    before it is followed by an fdatasync of that folder's index log.
    Returns (the OK writes, the log syncs)."""
    last_rename, last_sync = {}, {}
    writes = syncs = 0
    for i, (name, line) in enumerate(calls):
        if name.startswith("rename") and "/cur/" in line:
            last_rename[folder_of(line)] = i
        elif name in ("fdatasync", "fsync") and "moat.index.log>" in line:
            last_sync[folder_of(line)] = i
            syncs += 1
        elif "OK Store completed" in line:
            writes += 1
            for f, r in last_rename.items():
                assert last_sync.get(f, -1) > r, \
                    f"a STORE OK went out before the sync of {f}: {line}\n" + \
                    "\n".join(c[1] for c in calls)
    return writes, syncs


def run_stores(server, clients, tmp_path, close=None):
    """A NOOP, then at once one STORE on every session (a different
    message each), while the process waits to enter epoll_wait; session
    number close (if any) closes its connection right after sending."""
    [pid] = server.wait_children("imap", 1)
    trace = trace_delayed(pid, tmp_path / "strace.out")
    try:
        ok(clients[0], "NOOP")
        for i, c in enumerate(clients):
            c.send(f"s{i} STORE {i + 1} +FLAGS.SILENT "
                   f"(\\Flagged $Sess{i})\r\n".encode())
        if close is not None:
            clients[close].sock.close()
        replies = [c.read_tagged(f"s{i}") for i, c in enumerate(clients)
                   if i != close]
    finally:
        calls = [(name, line) for _, name, line in trace.stop()]
    assert all(r.ok for r in replies), replies
    return calls


def test_sessions_of_one_folder_share_one_sync(moat_server, tmp_path):
    """Four sessions in INBOX, a STORE each in one turn: one fdatasync
    of INBOX's log makes all four durable (one per session before)."""
    clients = sessions(moat_server, ["INBOX"] * SESSIONS)
    calls = run_stores(moat_server, clients, tmp_path)
    writes, syncs = check_every_ok_after_syncs(calls)
    assert writes == SESSIONS, "\n".join(x[1] for x in calls)
    assert syncs == 1, "\n".join(x[1] for x in calls)
    got = flags_of(ok(clients[0], "FETCH 1:4 FLAGS"))
    assert got == {i + 1: {"\\Flagged", f"$Sess{i}"}
                   for i in range(SESSIONS)}, got


def test_sessions_of_two_folders_sync_each_log(moat_server, tmp_path):
    """Two sessions in INBOX, two in Other: one sync of each folder's log,
    both before any of the four OKs."""
    clients = sessions(moat_server, ["INBOX", "Other", "INBOX", "Other"])
    calls = run_stores(moat_server, clients, tmp_path)
    writes, syncs = check_every_ok_after_syncs(calls)
    assert writes == SESSIONS, "\n".join(x[1] for x in calls)
    assert syncs == 2, "\n".join(x[1] for x in calls)
    synced = {folder_of(line) for name, line in calls
              if name == "fdatasync" and "moat.index.log>" in line}
    assert synced == {"INBOX", ".Other"}, "\n".join(x[1] for x in calls)
    for i, c in enumerate(clients):
        # (the other session's change comes along as an untagged FETCH)
        got = flags_of(ok(c, f"FETCH {i + 1} FLAGS"))
        assert got[i + 1] == {"\\Flagged", f"$Sess{i}"}, got


def test_session_closed_after_its_store(moat_server, tmp_path):
    """A session that closes its connection right after sending its STORE,
    in the same turn as the others': their OKs still go out after the
    sync, and its change too is there for a new session."""
    clients = sessions(moat_server, ["INBOX"] * SESSIONS)
    calls = run_stores(moat_server, clients, tmp_path, close=1)
    check_every_ok_after_syncs(calls)
    c = moat_server.login("testuser1")
    ok(c, "SELECT INBOX")
    got = flags_of(ok(c, "FETCH 1:4 FLAGS"))
    assert got == {i + 1: {"\\Flagged", f"$Sess{i}"}
                   for i in range(SESSIONS)}, got


def test_store_after_another_sessions_store_guesses_names(moat_server,
                                                          tmp_path):
    """Session B stores on messages session A renamed a moment ago, with
    no command of B's between: B's names come from the index as A left
    it (B's view is brought up to it under the lock), so every rename
    succeeds at once and cur/ is never read (before, each of B's renames
    failed, read cur/ to find the name and then rescanned the folder)."""
    a = test_store_range.fill(moat_server, 20)
    b = moat_server.login("testuser1")
    ok(b, "SELECT INBOX")
    ok(a, "STORE 1:20 +FLAGS.SILENT (\\Seen)")
    [pid] = moat_server.wait_children("imap", 1)
    trace = strace_tracer.Strace(pid, tmp_path / "strace.out",
                                 "rename,getdents64")
    try:
        ok(a, "STORE 1:20 +FLAGS.SILENT (\\Flagged)")
        ok(b, "STORE 1:20 +FLAGS.SILENT (\\Answered)")
        ok(a, "STORE 1:20 -FLAGS.SILENT (\\Seen)")
        ok(b, "STORE 1:20 -FLAGS.SILENT (\\Flagged)")
    finally:
        calls = trace.stop()
    renames = [line for _, name, line in calls if name.startswith("rename")]
    failed = [line for line in renames if "= -1" in line]
    dirs = [line for _, name, line in calls if name == "getdents64"]
    assert len(renames) == 80 and not failed and not dirs, \
        "\n".join(line for _, _, line in calls)
    got = flags_of(ok(b, "FETCH 1:20 FLAGS"))
    assert got == {i: {"\\Answered"} for i in range(1, 21)}, got
