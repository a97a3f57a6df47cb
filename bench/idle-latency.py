#!/usr/bin/env python3
"""How soon a session in IDLE hears of a delivered message: one IMAP
session of user1 IDLEs on INBOX; N times an LMTP client delivers a message
to user1, and the time from the end of DATA (the final ".") to the
"* n EXISTS" line is measured. Prints one RESULT line with the median, the
99th percentile and the maximum in milliseconds.

Usage: idle-latency.py --imap-port P --lmtp-port L [--count N]
"""

import argparse
import socket
import sys
import time


def lines(sock, buf):
    while b"\r\n" not in buf[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf[0] += chunk
    line, buf[0] = buf[0].split(b"\r\n", 1)
    return line


def lmtp_reply(sock, buf):
    while True:
        line = lines(sock, buf)
        if line[3:4] == b" ":
            return int(line[:3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--imap-port", type=int, required=True)
    ap.add_argument("--lmtp-port", type=int, required=True)
    ap.add_argument("--count", type=int, default=50)
    args = ap.parse_args()

    imap = socket.create_connection((args.host, args.imap_port), timeout=30)
    ibuf = [b""]
    lines(imap, ibuf)
    for cmd in (b"a LOGIN user1 pass", b"b SELECT INBOX"):
        imap.sendall(cmd + b"\r\n")
        tag = cmd.split()[0]
        while not lines(imap, ibuf).startswith(tag + b" "):
            pass
    imap.sendall(b"c IDLE\r\n")
    while not lines(imap, ibuf).startswith(b"+"):
        pass

    lmtp = socket.create_connection((args.host, args.lmtp_port), timeout=30)
    lbuf = [b""]
    lmtp_reply(lmtp, lbuf)
    lmtp.sendall(b"LHLO bench\r\n")
    lmtp_reply(lmtp, lbuf)
    waits = []
    for i in range(args.count):
        lmtp.sendall(b"MAIL FROM:<b@example.org>\r\nRCPT TO:<user1@example.org>\r\n"
                     b"DATA\r\n")
        codes = [lmtp_reply(lmtp, lbuf) for _ in range(3)]
        if codes != [250, 250, 354]:
            print(f"idle-latency: LMTP answered {codes}", file=sys.stderr)
            return 1
        msg = b"Subject: idle %d %f\r\n\r\nbody\r\n.\r\n" % (i, time.time())
        t0 = time.monotonic()
        lmtp.sendall(msg)
        while True:
            line = lines(imap, ibuf)
            if line.endswith(b" EXISTS"):
                waits.append((time.monotonic() - t0) * 1000)
                break
        if lmtp_reply(lmtp, lbuf) != 250:
            print("idle-latency: delivery failed", file=sys.stderr)
            return 1
    waits.sort()
    p = lambda q: waits[min(len(waits) - 1, int(q * len(waits)))]  # noqa: E731
    print(f"RESULT workload=idle-latency count={len(waits)} p50_ms={p(0.5):.2f} "
          f"p99_ms={p(0.99):.2f} max_ms={waits[-1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
