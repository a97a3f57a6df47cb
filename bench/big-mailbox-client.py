#!/usr/bin/env python3
"""The client side of bench/big-mailbox.sh: one IMAP session that times the
big-mailbox steps and prints them as "key value" lines.

  big-mailbox-client.py PORT USER PASS COUNT STEP...

STEP is one of
  select      SELECT INBOX (checks "* COUNT EXISTS"); prints select_s
  fetch       FETCH 1:* (UID FLAGS ENVELOPE INTERNALDATE BODYSTRUCTURE);
              prints fetch_s, fetch_bytes (answer size) and fetch_msgs
  wait        prints "waiting" and waits for a line on stdin (the caller
              reads the imap process's memory meanwhile)
Each step's key is suffixed with its position (select1_s, select2_s, ...).
"""

import re
import socket
import sys
import time

READ_SIZE = 1 << 20
FETCH_ITEMS = "(UID FLAGS ENVELOPE INTERNALDATE BODYSTRUCTURE)"


class Session:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""
        self.pos = 0      # consumed bytes of buf (no copying per line)
        self.tag = 0
        self.readline()

    def _fill(self):
        data = self.sock.recv(READ_SIZE)
        if not data:
            raise EOFError("server closed the connection")
        self.buf = self.buf[self.pos:] + data
        self.pos = 0

    def readline(self):
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                break
            self._fill()
        line = self.buf[self.pos:end]
        self.pos = end + 2
        return line

    def read_exact(self, n):
        while len(self.buf) - self.pos < n:
            self._fill()
        data = self.buf[self.pos:self.pos + n]
        self.pos += n
        return data

    def command(self, text):
        """Sends a command; returns (tagged line, untagged lines, bytes)."""
        self.tag += 1
        tag = b"b%d" % self.tag
        self.sock.sendall(tag + b" " + text.encode() + b"\r\n")
        lines = []
        total = 0
        while True:
            line = self.readline()
            total += len(line) + 2
            # literals: {N} at the end of a line
            while line.endswith(b"}") and b"{" in line:
                n = int(line[line.rindex(b"{") + 1:-1])
                total += n
                self.read_exact(n)
                rest = self.readline()
                total += len(rest) + 2
                line += b"<literal>" + rest
            if line.startswith(tag + b" "):
                return line, lines, total
            lines.append(line)


def main(argv):
    port, user, password, count = int(argv[0]), argv[1], argv[2], int(argv[3])
    s = Session(port)
    tagged, _, _ = s.command(f'LOGIN "{user}" "{password}"')
    if b" OK" not in tagged:
        sys.exit(f"login failed: {tagged!r}")
    selects = fetches = 0
    for step in argv[4:]:
        if step == "select":
            selects += 1
            t0 = time.perf_counter()
            tagged, lines, _ = s.command("SELECT INBOX")
            dt = time.perf_counter() - t0
            if b" OK" not in tagged or \
                    b"* %d EXISTS" % count not in lines:
                sys.exit(f"SELECT: {tagged!r} {lines[:3]!r}")
            print(f"select{selects}_s {dt:.4f}")
        elif step == "fetch":
            fetches += 1
            t0 = time.perf_counter()
            tagged, lines, total = s.command("FETCH 1:* " + FETCH_ITEMS)
            dt = time.perf_counter() - t0
            msgs = sum(1 for x in lines if re.match(rb"\* \d+ FETCH", x))
            if b" OK" not in tagged or msgs != count:
                sys.exit(f"FETCH: {tagged!r}, {msgs} answers")
            print(f"fetch{fetches}_s {dt:.4f}")
            print(f"fetch{fetches}_bytes {total}")
        elif step == "wait":
            # the caller reads /proc while we hold the session
            print("waiting", flush=True)
            sys.stdin.readline()
        else:
            sys.exit(f"unknown step {step}")
        sys.stdout.flush()
    s.command("LOGOUT")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
