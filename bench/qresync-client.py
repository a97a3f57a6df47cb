#!/usr/bin/env python3
"""The client side of bench/qresync.sh: on a big mailbox, another session
changes the flags of CHANGES messages and expunges CHANGES more; then a
client that cached the mailbox resyncs, timed, ROUNDS times each:

  select    SELECT INBOX alone (what opening costs)
  qresync   SELECT INBOX (QRESYNC (uidvalidity modseq))   RFC 7162 3.2.5
  condstore SELECT INBOX (CONDSTORE), UID FETCH 1:* (FLAGS)
            (CHANGEDSINCE modseq), UID SEARCH ALL (for the expunges)
  full      SELECT INBOX, UID FETCH 1:* (FLAGS)           no extension

Prints "name seconds bytes lines" per method (medians of the rounds) and
checks each answer (the changed and expunged UIDs must all be there).

  qresync-client.py PORT USER PASS CHANGES ROUNDS SEED
"""

import random
import re
import socket
import statistics
import sys
import time


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=600)
        self.buf = bytearray()
        self.pos = 0
        self.tag = 0
        self.received = 0
        self.line()

    def line(self):
        # an offset into the buffer: a 100,000-line answer stays linear
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = bytes(self.buf[self.pos:end])
                self.pos = end + 2
                return line   # (FLAGS answers hold no literals)
            del self.buf[:self.pos]
            self.pos = 0
            data = self.sock.recv(1 << 20)
            if not data:
                raise EOFError("connection closed")
            self.received += len(data)
            self.buf += data

    def command(self, cmd):
        self.tag += 1
        tag = f"b{self.tag}".encode()
        self.sock.sendall(tag + b" " + cmd.encode() + b"\r\n")
        untagged = []
        while True:
            line = self.line()
            if line.startswith(tag + b" "):
                if not line[len(tag) + 1:].startswith(b"OK"):
                    raise RuntimeError(f"{cmd}: {line!r}")
                return untagged, line
            untagged.append(line)


def code(lines, name):
    for line in lines:
        m = re.search(rb"\[" + name.encode() + rb" (\d+)\]", line)
        if m:
            return int(m.group(1))
    raise RuntimeError(f"no {name}")


def timed(conn, cmds):
    start_bytes = conn.received
    start = time.perf_counter()
    lines = []
    for cmd in cmds:
        untagged, tagged = conn.command(cmd)
        lines += untagged + [tagged]
    return time.perf_counter() - start, conn.received - start_bytes, lines


def main():
    port, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    changes, rounds, seed = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    rng = random.Random(seed)
    c = Conn(port)
    c.command(f"LOGIN {user} {password}")
    c.command("ENABLE QRESYNC")
    untagged, tagged = c.command("SELECT INBOX")
    lines = untagged + [tagged]
    uidvalidity, modseq = code(lines, "UIDVALIDITY"), code(lines, "HIGHESTMODSEQ")
    uidnext = code(lines, "UIDNEXT")
    c.command("UNSELECT")
    # another session changes the mailbox
    o = Conn(port)
    o.command(f"LOGIN {user} {password}")
    o.command("SELECT INBOX")
    picked = rng.sample(range(1, uidnext), 2 * changes)
    flagged, gone = sorted(picked[:changes]), sorted(picked[changes:])
    o.command(f"UID STORE {','.join(map(str, flagged))} +FLAGS (\\Flagged)")
    o.command(f"UID STORE {','.join(map(str, gone))} +FLAGS.SILENT (\\Deleted)")
    o.command(f"UID EXPUNGE {','.join(map(str, gone))}")
    o.command("LOGOUT")
    # a directory changed within the last seconds cannot be trusted by
    # its mtime (either server would rescan it on every SELECT): wait
    # until it is old enough, as a client that comes back later sees it
    time.sleep(3)

    methods = {
        # what opening alone costs, to read the others against
        "select": ["SELECT INBOX", "UNSELECT"],
        "qresync": [f"SELECT INBOX (QRESYNC ({uidvalidity} {modseq}))",
                    "UNSELECT"],
        "condstore": ["SELECT INBOX (CONDSTORE)",
                      f"UID FETCH 1:* (FLAGS) (CHANGEDSINCE {modseq})",
                      "UID SEARCH ALL", "UNSELECT"],
        "full": ["SELECT INBOX", "UID FETCH 1:* (FLAGS)", "UNSELECT"],
    }
    for name, cmds in methods.items():
        times, sizes = [], []
        for _ in range(rounds):
            t, size, lines = timed(c, cmds)
            times.append(t)
            sizes.append(size)
        text = b"\n".join(lines)
        fetched = {int(m) for m in re.findall(rb"FETCH \(UID (\d+)", text)}
        if name != "select" and not set(flagged) <= fetched:
            raise RuntimeError(f"{name}: changed UIDs missing")
        if name == "qresync":
            m = re.search(rb"VANISHED \(EARLIER\) (\S+)", text)
            got = set()
            for part in m.group(1).decode().split(","):
                a, _, b = part.partition(":")
                got.update(range(int(a), int(b or a) + 1))
            if got != set(gone):
                raise RuntimeError(f"qresync: VANISHED {sorted(got)} != {gone}")
        print(f"{name} {statistics.median(times):.6f} {statistics.median(sizes)} "
              f"{len(lines)}")
    c.command("LOGOUT")


if __name__ == "__main__":
    main()
