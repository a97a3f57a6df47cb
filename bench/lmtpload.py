#!/usr/bin/env python3
"""LMTP load generator: C connections deliver messages as fast as the
server answers, each a full transaction (MAIL, RCPT, DATA; the RCPT
pipelined behind MAIL, RFC 2920), for T seconds. Recipients are user1..N
(one per message, round robin over the connection's offset), so N = 1 is
"all into one mailbox". Every message is unique (the server must never
take one for a retry of another). Prints one RESULT line:

  RESULT workload=lmtp users=N clients=C secs=T deliveries=D per_sec=R errors=E

Usage: lmtpload.py --port P [--host H] [--users N] [--clients C]
                   [--seconds T] [--size BYTES]
"""

import argparse
import socket
import sys
import threading
import time


def reply(sock, buf):
    while True:
        while b"\r\n" not in buf[0]:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            buf[0] += chunk
        line, buf[0] = buf[0].split(b"\r\n", 1)
        if line[3:4] == b" ":
            return int(line[:3])


class Client(threading.Thread):
    def __init__(self, args, idx, stop):
        super().__init__(daemon=True)
        self.args, self.idx, self.stop = args, idx, stop
        self.done = self.errors = 0

    def run(self):
        a = self.args
        sock = socket.create_connection((a.host, a.port), timeout=60)
        buf = [b""]
        reply(sock, buf)
        sock.sendall(b"LHLO load.example\r\n")
        reply(sock, buf)
        body = b"x" * 76 + b"\r\n"
        filler = body * max(1, a.size // len(body))
        n = 0
        while not self.stop.is_set():
            n += 1
            user = (self.idx + n) % a.users + 1
            sock.sendall(b"MAIL FROM:<load@example.org>\r\n"
                         b"RCPT TO:<user%d@example.org>\r\nDATA\r\n" % user)
            codes = [reply(sock, buf) for _ in range(3)]
            if codes != [250, 250, 354]:
                self.errors += 1
                if codes[2] == 354:
                    sock.sendall(b".\r\n")
                    reply(sock, buf)
                sock.sendall(b"RSET\r\n")
                reply(sock, buf)
                continue
            msg = (b"From: load@example.org\r\nSubject: load %d %d\r\n"
                   b"Message-ID: <%d.%d.%f@load>\r\n\r\n" %
                   (self.idx, n, self.idx, n, time.time())) + filler
            sock.sendall(msg + b".\r\n")
            if reply(sock, buf) == 250:
                self.done += 1
            else:
                self.errors += 1
        sock.sendall(b"QUIT\r\n")
        sock.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--users", type=int, default=1)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--size", type=int, default=2000)
    args = ap.parse_args()
    stop = threading.Event()
    clients = [Client(args, i, stop) for i in range(args.clients)]
    t0 = time.monotonic()
    for c in clients:
        c.start()
    time.sleep(args.seconds)
    stop.set()
    for c in clients:
        c.join(120)
    secs = time.monotonic() - t0
    done = sum(c.done for c in clients)
    errors = sum(c.errors for c in clients)
    print(f"RESULT workload=lmtp users={args.users} clients={args.clients} "
          f"secs={secs:.2f} deliveries={done} per_sec={done / secs:.1f} "
          f"errors={errors}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
