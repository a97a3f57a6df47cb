#!/usr/bin/python3
"""bench/auth-guessing.py: how long online guessing takes against moat's
authentication penalty with the real settings (auth_failure_delay = 2 s,
the built-in maximum of 15 s). doc/security.md records the figure.

    bench/auth-guessing.py [--prefix DIR] [--guesses N] [--right K]

Starts a private moat (tests/protocol/moatserver.py: a temporary
directory, 127.0.0.1, a random port, stopped by pid) and runs three
guessers at once, each from its own loopback address, each making N
guesses (default 30) of which guess K (default 15) is the right password:

  sequential  one guess at a time, each after the previous answer, on
              one connection until the server closes it
              (imap_max_auth_attempts), then on a new one
  fresh       a new connection per guess, sent 300 ms after the previous
              one without waiting for answers (the red team's way)
  parallel    N connections at once; a guess refused with NO [LIMIT] (too
              many waiting) is no guess and is sent again a second later

A connection closed by login_timeout while its guess waited for its turn
is replaced and the guess sent again: only answered guesses count.

For each it prints when the right password was accepted and how long the
N guesses took. The target: N = 30 takes at least 60 s in every mode.
Run as root (privilege separation, as in production) or as anyone."""

import argparse
import os
import pathlib
import socket
import sys
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests/protocol"))

from moatimap import ConnectionClosed, ImapClient  # noqa: E402


def connect_from(host, port, source_ip):
    c = ImapClient.__new__(ImapClient)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source_ip, 0))
    s.settimeout(120)
    s.connect((host, port))
    c.sock, c.buf, c.tag_no, c.closed, c.greeting = s, b"", 0, False, None
    c.greeting = c.read_greeting()
    return c


def password(i, right):
    return "pass" if i == right else f"guess{i}"


def sequential_guess(host, port, ip, c, pw):
    """(connection, Response) of one guess; a connection the server
    closed (imap_max_auth_attempts, or login_timeout while the guess
    waited for its turn) is replaced and the guess sent again."""
    while True:
        if c is None:
            c = connect_from(host, port, ip)
        try:
            return c, c.command(f"LOGIN testuser1 {pw}")
        except (ConnectionClosed, OSError):
            c.close()
            c = None


def run_sequential(host, port, ip, n, right, out):
    t0 = time.monotonic()
    c = None
    for i in range(1, n + 1):
        c, r = sequential_guess(host, port, ip, c, password(i, right))
        if r.ok:
            out["right_at"] = time.monotonic() - t0
            c.close()
            c = None
        elif any(line.startswith(b"* BYE") for line in r.untagged):
            c.close()
            c = None
    out["total"] = time.monotonic() - t0


def guess_once(host, port, ip, pw, t0, out, i):
    """One guess on its own connection; retried while refused (LIMIT)."""
    while True:
        c = connect_from(host, port, ip)
        try:
            r = c.command(f"LOGIN testuser1 {pw}")
        except (ConnectionClosed, OSError):
            # login_timeout while it waited: not checked, send again
            c.close()
            continue
        c.close()
        if r.code != "LIMIT":
            out[i] = (time.monotonic() - t0, r.ok)
            return
        time.sleep(1.0)


def run_spread(host, port, ip, n, right, out, gap):
    t0 = time.monotonic()
    answers = {}
    threads = []
    for i in range(1, n + 1):
        t = threading.Thread(target=guess_once, args=(
            host, port, ip, password(i, right), t0, answers, i))
        t.start()
        threads.append(t)
        if gap > 0:
            time.sleep(gap)
    for t in threads:
        t.join()
    out["total"] = max(t for t, _ in answers.values())
    for t, ok in answers.values():
        if ok:
            out["right_at"] = t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", default=str(REPO / "build/test/local"))
    ap.add_argument("--guesses", type=int, default=30)
    ap.add_argument("--right", type=int, default=15)
    args = ap.parse_args()
    os.environ["MOAT_PREFIX"] = args.prefix
    from moatserver import MoatServer  # reads MOAT_PREFIX at import

    server = MoatServer({"auth_failure_delay": "2 secs",
                         "disable_plaintext_auth": "no"})
    server.prepare()
    server.start()
    results = {m: {} for m in ("sequential", "fresh", "parallel")}
    try:
        runs = [
            threading.Thread(target=run_sequential, args=(
                server.host, server.port, "127.0.0.21", args.guesses,
                args.right, results["sequential"])),
            threading.Thread(target=run_spread, args=(
                server.host, server.port, "127.0.0.22", args.guesses,
                args.right, results["fresh"], 0.3)),
            threading.Thread(target=run_spread, args=(
                server.host, server.port, "127.0.0.23", args.guesses,
                args.right, results["parallel"], 0)),
        ]
        for t in runs:
            t.start()
        for t in runs:
            t.join()
    finally:
        server.close_clients()
        server.stop()
        server.kill_everything()
        server.cleanup()
    print(f"{args.guesses} guesses, the right password is guess "
          f"{args.right}; auth_failure_delay = 2 secs")
    ok = True
    for mode, r in results.items():
        right = r.get("right_at")
        print(f"  {mode:10s} right password accepted at "
              f"{'-' if right is None else f'{right:6.1f} s'}, "
              f"all guesses answered after {r['total']:6.1f} s")
        ok = ok and right is not None and r["total"] >= 60
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
