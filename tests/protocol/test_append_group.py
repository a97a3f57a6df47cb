"""Group commit of APPENDs (imap/imap-commit.h, doc/durability.md): the
APPENDs of a user's sessions that complete in the same turn of the imap
process's loop are committed together. Each still gets its own OK with
its own APPENDUID, and every acknowledged message is there, once, after
a restart."""

import fcntl
import os
import re
import signal
import struct
import termios
import threading

import pytest

from moatserver import wait_for

MID_RE = re.compile(rb"Message-ID: <([^>]+)>")
GROUP_RE = re.compile(r"group commit: (\d+) requests, (\d+) messages")


def message(mid):
    return (f"Message-ID: <{mid}>\r\nSubject: {mid}\r\n\r\nbody of {mid}\r\n"
            ).encode()


def appenduids(resp):
    m = re.search(rb"\[APPENDUID (\d+) (\d+)(?::(\d+))?\]", resp.line)
    assert m, resp
    first = int(m.group(2))
    last = int(m.group(3)) if m.group(3) else first
    return int(m.group(1)), list(range(first, last + 1))


def uid_by_mid(c, box):
    """{Message-ID: uid} of box, and the number of messages."""
    r = c.command(f"SELECT {box}")
    assert r.ok, r
    exists = [int(u.split()[-2]) for u in r.untagged if u.endswith(b" EXISTS")]
    r = c.command("UID FETCH 1:* (UID BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])")
    assert r.ok, r
    found = {}
    for f in r.fetches().values():
        body = next(v for k, v in f.items() if k.startswith("BODY"))
        mid = MID_RE.search(bytes(body)).group(1).decode()
        assert mid not in found, f"{mid} twice in {box}"
        found[mid] = int(f["UID"])
    return found, exists[-1] if exists else 0


def stop_process(pid):
    """SIGSTOP, then wait until the process is stopped (the signal is
    asynchronous: kill() returns before it takes effect; a traced process
    shows "t", not "T")."""
    os.kill(pid, signal.SIGSTOP)

    def stopped():
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    assert wait_for(stopped, 10)


def finish_in_one_turn(setup, pid, clients):
    """Each client has sent all of an APPEND but its final CRLF: once the
    process has read every literal (the turn that answered setup's first
    NOOP saw them all readable, the second NOOP came after it), the
    CRLFs are sent while it is stopped, so that one turn reads them all."""
    assert setup.command("NOOP").ok
    assert setup.command("NOOP").ok
    stop_process(pid)
    try:
        for c in clients:
            c.send(b"\r\n")
        assert wait_for(lambda: all(delivered(c) for c in clients), 10)
    finally:
        os.kill(pid, signal.SIGCONT)


def delivered(c):
    """Whether everything c sent was acknowledged by the server's kernel
    (so it waits in the server's socket): loopback delivery runs in
    softirq context, which a loaded machine may defer."""
    buf = fcntl.ioctl(c.sock.fileno(), termios.TIOCOUTQ, b"\0" * 4)
    return struct.unpack("i", buf)[0] == 0


def test_concurrent_appends_all_acknowledged_and_kept(moat_server):
    """12 sessions of one user APPEND at once, 8 into INBOX and 4 into
    folders of their own, some MULTIAPPEND; every OK's UIDs are unique,
    and after a restart each acknowledged message has the UID it was
    given."""
    setup = moat_server.login()
    for i in range(4):
        assert setup.command(f"CREATE Own{i}").ok
    clients = [moat_server.login() for _ in range(12)]
    per_client = 8
    acked = {}            # mid -> (box, uid)
    errors = []
    lock = threading.Lock()
    start = threading.Barrier(len(clients))

    def run(n, c):
        box = "INBOX" if n < 8 else f"Own{n - 8}"
        if n % 3 == 0:
            c.command(f"SELECT {box}")
        start.wait()
        for k in range(per_client):
            mids = [f"c{n}m{k}p{j}@test" for j in range(1 + (k % 3 == 2))]
            if len(mids) == 1:
                r = c.append(box, message(mids[0]), sync=(k % 2 == 0))
            else:
                tag = c.next_tag()
                data = f"{tag} APPEND {box}".encode()
                for mid in mids:
                    m = message(mid)
                    data += b" {%d+}\r\n" % len(m) + m
                c.send(data + b"\r\n")
                r = c.read_tagged(tag)
            if not r.ok:
                with lock:
                    errors.append(f"client {n}: {r}")
                continue
            _, uids = appenduids(r)
            with lock:
                if len(uids) != len(mids):
                    errors.append(f"client {n}: {r} for {len(mids)}")
                for mid, uid in zip(mids, uids):
                    acked[mid] = (box, uid)
    threads = [threading.Thread(target=run, args=(n, c))
               for n, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    by_box = {}
    for mid, (box, uid) in acked.items():
        by_box.setdefault(box, {})[mid] = uid
    for box, uids in by_box.items():
        assert len(set(uids.values())) == len(uids), f"a UID twice in {box}"

    moat_server.close_clients()
    assert moat_server.stop()[0] == 0
    moat_server.start()
    c = moat_server.login()
    for box, expected in by_box.items():
        found, exists = uid_by_mid(c, box)
        assert found == expected, box
        assert exists == len(expected)
    assert sum(len(v) for v in by_box.values()) == 12 * 8 + 12 * 2


@pytest.mark.moat_settings(log_debug="yes")
def test_appends_of_one_turn_share_one_commit(moat_server):
    """The last bytes of six APPENDs (three sessions into INBOX, three
    into another folder) reach the process while it is stopped, so it
    reads them in one turn: they are committed as one group, each gets
    its OK with the next UIDs of its folder."""
    setup = moat_server.login()
    assert setup.command("CREATE Other").ok
    assert setup.command("NOOP").ok
    clients = [moat_server.login() for _ in range(6)]
    pid = moat_server.wait_children("imap", 1)[0]
    tags = []
    for n, c in enumerate(clients):
        tag = c.next_tag()
        box = "INBOX" if n < 3 else "Other"
        m = message(f"turn{n}@test")
        c.send(f"{tag} APPEND {box} {{{len(m)}}}\r\n")
        assert c.read_tagged(tag).status == "+"
        c.send(m)             # all but the final CRLF
        tags.append((tag, box))
    finish_in_one_turn(setup, pid, clients)
    uids = {"INBOX": [], "Other": []}
    for c, (tag, box) in zip(clients, tags):
        r = c.read_tagged(tag)
        assert r.ok, r
        uids[box] += appenduids(r)[1]
    assert sorted(uids["INBOX"]) == [1, 2, 3]
    assert sorted(uids["Other"]) == [1, 2, 3]
    groups = wait_for(lambda: GROUP_RE.findall(moat_server.logs()) or None, 10)
    assert groups and ("6", "6") in groups, moat_server.logs()
    found, exists = uid_by_mid(clients[0], "INBOX")
    assert exists == 3 and sorted(found.values()) == [1, 2, 3]


def test_append_waiting_for_commit_then_disconnect(moat_server):
    """A session that goes away with its APPEND queued leaves the server
    and the other sessions working."""
    c1 = moat_server.login()
    c2 = moat_server.login()
    pid = moat_server.wait_children("imap", 1)[0]
    m = message("gone@test")
    tag = c1.next_tag()
    c1.send(f"{tag} APPEND INBOX {{{len(m)}+}}\r\n".encode() + m)
    stop_process(pid)
    try:
        c1.send(b"\r\n")
        c1.close()
    finally:
        os.kill(pid, signal.SIGCONT)
    r = c2.append("INBOX", message("stays@test"))
    assert r.ok, r
    found, _ = uid_by_mid(c2, "INBOX")
    assert "stays@test" in found
