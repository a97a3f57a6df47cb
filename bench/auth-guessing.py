#!/usr/bin/python3
"""bench/auth-guessing.py: how long online guessing takes against moat's
authentication penalty with the real settings (auth_failure_delay = 2 s,
the built-in maximum of 15 s). doc/security.md records the figure.

    bench/auth-guessing.py [--prefix DIR] [--guesses N] [--right K]
                           [--restart kill|reload] [--restart-every SECS]

Starts a private moat (tests/protocol/moatserver.py: a temporary
directory, 127.0.0.1, a random port, stopped by pid) and runs three
guessers at once, each from its own loopback address, each sending
guesses of which guess K (default 15) is the right password:

  sequential  one guess at a time, each after the previous answer, a new
              connection per guess
  fresh       a new connection per guess, sent 300 ms after the previous
              one without waiting for answers (the red team's way); a
              guess answered NO [LIMIT] (too many waiting) is no guess and
              is sent again a second later
  parallel    N connections at once, refused ones again as above

A guess counts when auth has checked it: the figure for a mode is the
time from its first guess to auth's N-th check of its address (default
N = 30), read from auth's log lines (`auth failed: ... password
mismatch` and master's `login:` line for the right one). A guess whose
connection login_timeout closed while it waited is sent again; if it had
already been checked, the check counts, so the figure is a lower bound
on what N distinct guesses take. Also printed: when the right password
was accepted. The target: 30 checks take at least 60 s in every mode.

--restart kill (kill -9 of auth) or reload (SIGHUP to master) restarts
auth every --restart-every seconds (default 20) during the run: the
penalty must survive it (master keeps the table). A guess answered NO
[UNAVAILABLE] (auth away longer than login_auth_park_timeout) is sent
again, like one refused with NO [LIMIT]; a check whose answer a kill cut
off is sent again by imap-login and may be counted twice.
Run as root (privilege separation, as in production) or as anyone."""

import argparse
import datetime
import os
import pathlib
import re
import socket
import sys
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests/protocol"))

from moatimap import ConnectionClosed, ImapClient  # noqa: E402

MODES = {"sequential": "127.0.0.21", "fresh": "127.0.0.22",
         "parallel": "127.0.0.23"}
CHECK_RE = re.compile(
    r"^(\S+) (?:auth\[\d+\]: info: auth failed: user=testuser1, "
    r"method=PLAIN, rip=(\S+), reason=password mismatch|master: info: "
    r"login: user=<testuser1>, method=PLAIN, rip=(\S+), )")


def log_time(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def checks_by_address(log_path):
    """{ip: [(time, ok)]} of auth's checks so far."""
    found = {}
    for line in log_path.read_text(errors="replace").splitlines():
        m = CHECK_RE.match(line)
        if m:
            ip = m.group(2) or m.group(3)
            found.setdefault(ip, []).append((log_time(m.group(1)),
                                             m.group(3) is not None))
    return found


def connect_from(host, port, source_ip):
    c = ImapClient.__new__(ImapClient)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source_ip, 0))
    s.settimeout(120)
    s.connect((host, port))
    c.sock, c.buf, c.tag_no, c.closed, c.greeting = s, b"", 0, False, None
    c.greeting = c.read_greeting()
    return c


def guess(host, port, ip, pw, stop):
    """One guess on its own connection until it is answered (a refusal
    with NO [LIMIT] or a login_timeout is no answer)."""
    while not stop.is_set():
        try:
            c = connect_from(host, port, ip)
            r = c.command(f"LOGIN testuser1 {pw}")
            c.close()
        except (ConnectionClosed, OSError):
            continue
        if r.code not in ("LIMIT", "UNAVAILABLE"):
            return
        stop.wait(1.0)


def password(i, right):
    return "pass" if i == right else f"guess{i}"


def run_sequential(host, port, ip, right, stop):
    i = 0
    while not stop.is_set():
        i += 1
        guess(host, port, ip, password(i, right), stop)


def run_spread(host, port, ip, n, right, stop, gap):
    threads = []
    for i in range(1, 2 * n + 1):
        if stop.is_set():
            break
        t = threading.Thread(target=guess, args=(
            host, port, ip, password(i, right), stop), daemon=True)
        t.start()
        threads.append(t)
        if gap > 0:
            stop.wait(gap)
        elif i >= n:
            # parallel: N at once, then one more per answered guess
            while sum(t.is_alive() for t in threads) >= n and \
                    not stop.is_set():
                stop.wait(0.2)
    for t in threads:
        t.join()


def restart_auth(server, how, every, stop):
    """Restart auth every `every` seconds until stop is set."""
    import signal
    while not stop.wait(every):
        if how == "reload":
            os.kill(server.pid, signal.SIGHUP)
            continue
        for pid in server.child_pids("auth"):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", default=str(REPO / "build/test/local"))
    ap.add_argument("--guesses", type=int, default=30)
    ap.add_argument("--right", type=int, default=15)
    ap.add_argument("--restart", choices=("kill", "reload"))
    ap.add_argument("--restart-every", type=float, default=20.0)
    args = ap.parse_args()
    os.environ["MOAT_PREFIX"] = args.prefix
    from moatserver import MoatServer  # reads MOAT_PREFIX at import

    server = MoatServer({"auth_failure_delay": "2 secs",
                         "disable_plaintext_auth": "no"})
    server.prepare()
    server.start()
    stops = {m: threading.Event() for m in MODES}
    started = {}
    results = {}
    restart_stop = threading.Event()
    restarts = None
    try:
        if args.restart:
            restarts = threading.Thread(target=restart_auth, args=(
                server, args.restart, args.restart_every, restart_stop))
            restarts.start()
        runs = []
        for mode, ip in MODES.items():
            if mode == "sequential":
                target, extra = run_sequential, (args.right, stops[mode])
            else:
                target = run_spread
                extra = (args.guesses, args.right, stops[mode],
                         0.3 if mode == "fresh" else 0)
            started[mode] = time.time()
            t = threading.Thread(target=target, args=(
                server.host, server.port, ip) + extra)
            t.start()
            runs.append(t)
        while len(results) < len(MODES):
            time.sleep(1)
            checks = checks_by_address(server.log_path)
            for mode, ip in MODES.items():
                done = checks.get(ip, [])
                if mode not in results and len(done) >= args.guesses:
                    nth = done[args.guesses - 1][0] - started[mode]
                    right = [t for t, ok in done if ok]
                    results[mode] = (nth, right[0] - started[mode]
                                     if right else None)
                    stops[mode].set()
        for t in runs:
            t.join()
    finally:
        restart_stop.set()
        if restarts is not None:
            restarts.join()
        for e in stops.values():
            e.set()
        server.close_clients()
        server.stop()
        server.kill_everything()
        server.cleanup()
    print(f"{args.guesses} checks of guesses per address, the right "
          f"password is guess {args.right}; auth_failure_delay = 2 secs" +
          (f"; auth restarted ({args.restart}) every "
           f"{args.restart_every:g} s" if args.restart else ""))
    ok = True
    for mode, (nth, right) in results.items():
        print(f"  {mode:10s} right password accepted after "
              f"{'-' if right is None else f'{right:6.1f} s'}, "
              f"{args.guesses} checks after {nth:6.1f} s")
        ok = ok and nth >= 60
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
