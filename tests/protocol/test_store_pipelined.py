"""Pipelined STOREs share one sync (imap/cmd-store.c, client_batch_end()
in imap/imap-client.c): the STOREs of one batch of pipelined commands
commit without the index log's fdatasync, and one fdatasync runs before
any of their replies leaves the corked output. An OK must still mean the
change is on disk: traced with strace, every write that carries a STORE's
OK comes after an fdatasync that follows the last rename before it; a
killed process loses none of them; closing the mailbox (SELECT of
another) or a LOGOUT in the same batch syncs before the OK goes out too;
a STORE that changes nothing writes and syncs nothing."""

import os
import signal

import strace_tracer
from moatserver import wait_for
from test_store_range import flags_of, ok
import test_store_range

COUNT = 20
# STOREs sent in one write: what bench/imapload --pipeline 8 keeps in flight.
PIPELINE = 8


def fill(server, n=COUNT):
    return test_store_range.fill(server, n)


def pipeline(c, cmds):
    """Sends every command in one write, then reads each tagged reply."""
    tags = [f"p{i}" for i in range(len(cmds))]
    c.send(b"".join(f"{t} {cmd}\r\n".encode() for t, cmd in zip(tags, cmds)))
    return [c.read_tagged(t) for t in tags]


# The keywords exist before the traced STOREs: defining one is its own
# durable write (moat-keywords, index/maildir-keywords.c).
KEYWORDS = " ".join(f"$Pipe{i}" for i in range(PIPELINE))


def define_keywords(c):
    ok(c, f"STORE {COUNT} +FLAGS.SILENT ({KEYWORDS})")
    ok(c, f"STORE {COUNT} -FLAGS.SILENT ({KEYWORDS})")


def stores(n=PIPELINE, first=1):
    """n STOREs of different messages, different flags."""
    return [f"STORE {first + i} +FLAGS.SILENT (\\Flagged $Pipe{i})"
            for i in range(n)]


class Strace(strace_tracer.Strace):
    """strace -f of the user's imap process: fdatasync, rename and the
    writes (files and socket), in order."""

    def __init__(self, pid, path):
        super().__init__(pid, path, "fdatasync,fsync,rename,renameat,"
                         "renameat2,write,writev,pwrite64,sendto,sendmsg",
                         strsize=4096)

    def calls(self):
        """[(name, line)] in the order the process made them."""
        return [(name, line) for _, name, line in super().calls()]


def check_synced_before_ok(calls, marker="OK Store completed"):
    """Every write carrying marker follows an fdatasync of the index log
    that follows every rename in cur/ before it. Returns the number of
    such writes and the number of log syncs seen (strace -y names the
    file of each fd)."""
    last_rename = last_sync = -1
    writes = syncs = 0
    for i, (name, line) in enumerate(calls):
        if name.startswith("rename") and "/cur/" in line:
            last_rename = i
        elif name in ("fdatasync", "fsync") and "moat.index.log>" in line:
            last_sync = i
            syncs += 1
        elif marker in line:
            writes += 1
            assert last_rename < last_sync, \
                f"a STORE OK went out before its sync: {line}\n" + \
                "\n".join(c[1] for c in calls)
    return writes, syncs


def test_pipelined_stores_share_one_sync(moat_server, tmp_path):
    """Eight pipelined STOREs: every OK follows the sync of its rename,
    and they cost far fewer fdatasyncs than eight (one per batch the
    server read: normally one)."""
    c = fill(moat_server)
    define_keywords(c)
    [pid] = moat_server.wait_children("imap", 1)
    trace = Strace(pid, tmp_path / "strace.out")
    try:
        replies = pipeline(c, stores())
    finally:
        calls = trace.stop()
    assert all(r.ok for r in replies), replies
    writes, syncs = check_synced_before_ok(calls)
    assert writes >= 1, "\n".join(x[1] for x in calls)
    renames = sum(1 for name, line in calls
                  if name.startswith("rename") and "/cur/" in line)
    assert renames == PIPELINE, "\n".join(x[1] for x in calls)
    # one batch normally; a slow read may split the pipeline in two
    assert syncs <= 2, "\n".join(x[1] for x in calls)
    got = flags_of(ok(c, f"FETCH 1:{PIPELINE} FLAGS"))
    for i in range(PIPELINE):
        assert got[i + 1] == {"\\Flagged", f"$Pipe{i}"}, got


def test_single_store_still_synced(moat_server, tmp_path):
    """One STORE alone: its OK follows the fdatasync of its change."""
    c = fill(moat_server, 3)
    [pid] = moat_server.wait_children("imap", 1)
    trace = Strace(pid, tmp_path / "strace.out")
    try:
        r = c.command("STORE 2 FLAGS (\\Seen \\Answered)")
    finally:
        calls = trace.stop()
    assert r.ok, r
    writes, syncs = check_synced_before_ok(calls)
    assert writes == 1 and syncs == 1, "\n".join(x[1] for x in calls)
    assert flags_of(r) == {2: {"\\Seen", "\\Answered"}}


def test_pipelined_stores_survive_a_killed_process(moat_server):
    """SIGKILL right after the last OK of a pipeline: a new process shows
    every STORE of it."""
    c = fill(moat_server)
    [pid] = moat_server.wait_children("imap", 1)
    replies = pipeline(c, stores(PIPELINE) + stores(PIPELINE, PIPELINE + 1))
    assert all(r.ok for r in replies), replies
    os.kill(pid, signal.SIGKILL)
    c.wait_closed(30)
    assert wait_for(lambda: not moat_server.child_pids("imap"), 30)
    c = moat_server.login("testuser1")
    ok(c, "SELECT INBOX")
    got = flags_of(ok(c, "FETCH 1:* FLAGS"))
    for i in range(2 * PIPELINE):
        assert got[i + 1] == {"\\Flagged", f"$Pipe{i % PIPELINE}"}, got
    for seq in range(2 * PIPELINE + 1, COUNT + 1):
        assert got[seq] == set(), got


def test_store_then_select_in_one_batch(moat_server, tmp_path):
    """STORE and SELECT of another folder pipelined: the close of the
    folder syncs the STORE before its OK leaves; the flags are there."""
    c = fill(moat_server, 5)
    ok(c, "CREATE Other")
    [pid] = moat_server.wait_children("imap", 1)
    trace = Strace(pid, tmp_path / "strace.out")
    try:
        replies = pipeline(c, ["STORE 1:5 +FLAGS.SILENT (\\Deleted)",
                               "SELECT Other"])
    finally:
        calls = trace.stop()
    assert all(r.ok for r in replies), replies
    writes, _ = check_synced_before_ok(calls)
    assert writes == 1, "\n".join(x[1] for x in calls)
    ok(c, "SELECT INBOX")
    got = flags_of(ok(c, "FETCH 1:* FLAGS"))
    assert got == {n: {"\\Deleted"} for n in range(1, 6)}, got


def test_store_then_logout_in_one_batch(moat_server, tmp_path):
    """STORE and LOGOUT pipelined: the OK and the BYE arrive, after the
    sync; a new session sees the flags."""
    c = fill(moat_server, 4)
    [pid] = moat_server.wait_children("imap", 1)
    trace = Strace(pid, tmp_path / "strace.out")
    try:
        replies = pipeline(c, ["STORE 2:3 +FLAGS.SILENT ($Gone)", "LOGOUT"])
    finally:
        calls = trace.stop()
    assert replies[0].ok and replies[1].ok, replies
    assert replies[1].untagged_with("BYE"), replies[1]
    writes, _ = check_synced_before_ok(calls)
    assert writes == 1, "\n".join(x[1] for x in calls)
    c = moat_server.login("testuser1")
    ok(c, "SELECT INBOX")
    got = flags_of(ok(c, "FETCH 1:* FLAGS"))
    assert got == {1: set(), 2: {"$Gone"}, 3: {"$Gone"}, 4: set()}, got


def test_store_that_changes_nothing_writes_nothing(moat_server, tmp_path):
    """Flags a message has already: no rename, no log append, no sync
    (index/mailbox-keywords.c rolls the empty transaction back)."""
    c = fill(moat_server, 3)
    ok(c, "STORE 1:3 +FLAGS.SILENT (\\Seen)")
    [pid] = moat_server.wait_children("imap", 1)
    trace = Strace(pid, tmp_path / "strace.out")
    try:
        replies = pipeline(c, ["STORE 1:3 +FLAGS.SILENT (\\Seen)",
                               "STORE 2 -FLAGS.SILENT (\\Draft)"])
    finally:
        calls = trace.stop()
    assert all(r.ok for r in replies), replies
    touched = [line for name, line in calls
               if name.startswith("rename") or name in ("fdatasync", "fsync") or
               (name in ("write", "pwrite64") and "moat." in line)]
    assert touched == [], "\n".join(touched)
