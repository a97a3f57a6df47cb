#!/usr/bin/env python3
"""Crash test of mail delivery through the real server.

A private moat (tests/protocol/moatserver.py) with LMTP. Several "MTA"
threads deliver numbered messages (X-Crash-Id) to one or two recipients
each, as an MTA does: a 250 for a recipient is final, a 4xx or a lost
connection means "try that recipient again later" with the same bytes. A
killer thread sends SIGKILL, at random moments, to an lmtp process or to a
recipient's imap process. After the last kill every pending delivery is
retried until it gets its 250; then each user's INBOX must hold every
message addressed to the user exactly once (RFC 2033 4.2: a 250 is
responsibility taken; nothing may be lost or delivered twice on a retry),
and nothing else. The server log must hold no sanitizer report.

Usage: crash_lmtp.py [--kills N] [--seed S] [--mtas M] [--prefix DIR]
Exit status 0 on success, 1 on a failure (the server directory is kept).
"""

import argparse
import os
import pathlib
import random
import re
import signal
import socket
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "protocol"))
import crash_imap  # noqa: E402  (its pytest shim, before moatserver)

from moatimap import ConnectionClosed  # noqa: E402
from moatserver import MoatServer  # noqa: E402

USERS = ("testuser1", "testuser2")
# a reply must come within this; a hang is a failure, not a retry
REPLY_TIMEOUT = 60


class Failure(Exception):
    pass


def message(num, size):
    body = b"".join(b"crash line %d of message %d\r\n" % (i, num)
                    for i in range(size))
    return (b"From: mta@example.org\r\nSubject: crash %d\r\n"
            b"X-Crash-Id: %d\r\n\r\n" % (num, num)) + body


def stuff(msg):
    lines = msg.split(b"\r\n")
    return b"\r\n".join(b"." + l if l.startswith(b".") else l
                        for l in lines) + b".\r\n"


class Lmtp:
    def __init__(self, server):
        self.sock = socket.create_connection((server.host, server.lmtp_port),
                                             timeout=REPLY_TIMEOUT)
        self.buf = b""

    def reply(self):
        while True:
            while b"\r\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\r\n", 1)
            if len(line) < 4 or not line[:3].isdigit():
                raise Failure(f"bad reply line {line!r}")
            if line[3:4] == b" ":
                return int(line[:3]), line.decode(errors="replace")

    def cmd(self, text):
        self.sock.sendall(text.encode() + b"\r\n")
        return self.reply()

    def close(self):
        self.sock.close()


class Mta(threading.Thread):
    """Delivers its messages until each recipient got a 250."""

    def __init__(self, test, rnd, nums):
        super().__init__(daemon=True)
        self.test, self.rnd = test, rnd
        # num -> recipients still to deliver to
        self.pending = {n: set(test.rcpts[n]) for n in nums}
        self.error = None

    def attempt(self, num):
        rcpts = sorted(self.pending[num])
        c = Lmtp(self.test.server)
        try:
            c.reply()   # greeting
            if c.cmd("LHLO mta.example")[0] != 250:
                return
            if c.cmd("MAIL FROM:<mta@example.org>")[0] != 250:
                return
            accepted = []
            for r in rcpts:
                code, line = c.cmd(f"RCPT TO:<{r}>")
                if code == 250:
                    accepted.append(r)
                elif code // 100 == 5:
                    raise Failure(f"RCPT {r}: {line}")
            if not accepted:
                return
            if c.cmd("DATA")[0] != 354:
                return
            c.sock.sendall(stuff(self.test.msgs[num]))
            for r in accepted:
                code, line = c.reply()
                if code == 250:
                    with self.test.lock:
                        self.test.acked[(num, r)] = \
                            self.test.acked.get((num, r), 0) + 1
                    self.pending[num].discard(r)
                elif code // 100 == 5:
                    raise Failure(f"DATA for {r}: {line}")
            c.cmd("QUIT")
        except (ConnectionError, OSError):
            pass   # killed under us: the rest is tried again
        finally:
            c.close()

    def run(self):
        try:
            while not self.test.stop_mtas.is_set():
                todo = [n for n, rs in self.pending.items() if rs]
                if not todo:
                    return
                self.attempt(self.rnd.choice(todo))
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.error = e


class Appender(threading.Thread):
    """A session of USERS[0] APPENDs into the INBOX the MTAs deliver to,
    so that the kills land in group commits that hold deliveries and
    APPENDs together (imap/imap-commit.h). An APPEND whose OK was read is
    acknowledged; one that lost its connection may or may not be there."""

    def __init__(self, test):
        super().__init__(daemon=True)
        self.test = test
        self.acked, self.unknown = set(), set()
        self.next = 1
        self.error = None

    def session(self):
        c = self.test.server.login(USERS[0])
        while not self.test.stop_appends.is_set():
            n = self.next
            self.next += 1
            self.unknown.add(n)
            r = c.append("INBOX", append_message(n), sync=False)
            if r.ok:
                self.unknown.discard(n)
                self.acked.add(n)
            elif r.status != "NO":
                raise Failure(f"APPEND {n}: {r}")

    def run(self):
        try:
            while not self.test.stop_appends.is_set():
                try:
                    self.session()
                except (ConnectionClosed, ConnectionError, OSError,
                        AssertionError):
                    pass   # killed under us (or the login): a new session
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.error = e


def append_message(n):
    return (f"X-Append-Id: {n}\r\nSubject: appended {n}\r\n\r\n"
            f"appended by IMAP {n}\r\n").encode()


class CrashTest:
    def __init__(self, args):
        self.args = args
        self.rnd = random.Random(args.seed)
        self.server = MoatServer({"lmtp": True, "imap_process_linger": "1"})
        self.lock = threading.Lock()
        self.acked = {}
        self.stop_mtas = threading.Event()
        self.stop_appends = threading.Event()
        self.appender = None
        count = args.messages
        self.msgs = {n: message(n, self.rnd.choice((1, 5, 200, 3000)))
                     for n in range(1, count + 1)}
        self.rcpts = {n: self.rnd.choice(([USERS[0]], [USERS[1]], list(USERS)))
                      for n in self.msgs}

    def victims(self):
        lmtp = self.server.child_pids("lmtp")
        imap = self.server.child_pids("imap")
        return [("lmtp", p) for p in lmtp] + [("imap", p) for p in imap]

    def run(self):
        self.server.prepare()
        self.server.start()
        nums = list(self.msgs)
        self.rnd.shuffle(nums)
        mtas = [Mta(self, random.Random(self.rnd.random()),
                    nums[i::self.args.mtas]) for i in range(self.args.mtas)]
        for m in mtas:
            m.start()
        self.appender = Appender(self)
        self.appender.start()
        kills = {"lmtp": 0, "imap": 0}
        for _ in range(self.args.kills):
            if not any(m.is_alive() for m in mtas):
                break
            time.sleep(self.rnd.uniform(0.005, 0.1))
            # mostly the imap processes: a killed lmtp is restarted with
            # master's crash back-off, which only slows the test down
            kind = "lmtp" if self.rnd.random() < 0.15 else "imap"
            victims = [v for v in self.victims() if v[0] == kind]
            if not victims:
                continue
            kind, pid = self.rnd.choice(victims)
            try:
                os.kill(pid, signal.SIGKILL)
                kills[kind] += 1
            except ProcessLookupError:
                pass
        # the MTAs retry until everything is delivered
        deadline = time.monotonic() + 300
        for m in mtas:
            m.join(max(0, deadline - time.monotonic()))
            if m.error is not None:
                raise Failure(f"MTA: {m.error}")
            if m.is_alive():
                raise Failure("deliveries did not finish within 300 s")
        self.stop_appends.set()
        self.appender.join(REPLY_TIMEOUT)
        if self.appender.error is not None:
            raise Failure(f"appender: {self.appender.error}")
        if self.appender.is_alive():
            raise Failure("the appender did not stop")
        self.check()
        again = len(re.findall(r"not saved again", self.server.logs()))
        print(f"crash_lmtp: {len(self.msgs)} messages, {len(self.acked)} "
              f"deliveries acknowledged, {kills['lmtp']} lmtp and "
              f"{kills['imap']} imap processes killed, {again} retries of "
              f"saved messages answered without a second copy, "
              f"{len(self.appender.acked)} APPENDs acknowledged beside them "
              f"({len(self.appender.unknown)} in flight at a kill)")

    def check(self):
        for (num, rcpt), n in self.acked.items():
            if n != 1:
                raise Failure(f"message {num} to {rcpt} got {n} 250s")
        for user in USERS:
            c = self.server.login(user)
            r = c.command("EXAMINE INBOX")
            if not r.ok:
                raise Failure(f"{user}: EXAMINE: {r}")
            r = c.command("FETCH 1:* BODY.PEEK[HEADER.FIELDS "
                          "(X-Crash-Id X-Append-Id)]")
            ids, appended = [], []
            for _, items in r.fetches().items():
                head = items["BODY[HEADER.FIELDS (X-CRASH-ID X-APPEND-ID)]"]
                m = re.search(rb"X-Append-Id: (\d+)", head)
                if m:
                    appended.append(int(m.group(1)))
                    continue
                m = re.search(rb"X-Crash-Id: (\d+)", head)
                ids.append(int(m.group(1)) if m else -1)
            self.check_appended(user, appended)
            want = sorted(n for n, rs in self.rcpts.items() if user in rs)
            if sorted(ids) != want:
                dups = sorted({i for i in ids if ids.count(i) > 1})
                missing = sorted(set(want) - set(ids))
                raise Failure(f"{user}: duplicated {dups}, missing {missing}, "
                              f"{len(ids)} messages for {len(want)}")
            r = c.command("FETCH 1:* BODY.PEEK[]")
            for _, items in r.fetches().items():
                body = items["BODY[]"]
                m = re.search(rb"^X-Append-Id: (\d+)", body)
                if m:
                    if body != append_message(int(m.group(1))):
                        raise Failure(f"{user}: APPEND {m.group(1)} differs")
                    continue
                num = int(re.search(rb"X-Crash-Id: (\d+)", body).group(1))
                if not body.endswith(self.msgs[num]):
                    raise Failure(f"{user}: message {num} differs")
            c.command("LOGOUT")
        reports = self.server.sanitizer_reports()
        if reports:
            raise Failure("sanitizer report(s): " + ", ".join(reports))


    def check_appended(self, user, appended):
        """Every acknowledged APPEND once, others at most once."""
        a = self.appender
        if user != USERS[0]:
            if appended:
                raise Failure(f"{user}: APPENDs of {USERS[0]} {appended}")
            return
        dups = sorted({n for n in appended if appended.count(n) > 1})
        missing = sorted(a.acked - set(appended))
        unknown = sorted(set(appended) - a.acked - a.unknown)
        if dups or missing or unknown:
            raise Failure(f"{user}: APPENDs duplicated {dups}, missing "
                          f"{missing}, never sent {unknown}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=60)
    ap.add_argument("--messages", type=int, default=300)
    ap.add_argument("--mtas", type=int, default=3)
    ap.add_argument("--seed", type=int, default=random.SystemRandom().randrange(2**32))
    ap.add_argument("--prefix")
    args = ap.parse_args()
    if args.prefix:
        os.environ["MOAT_PREFIX"] = args.prefix
    print(f"crash_lmtp: seed {args.seed} (repeat: --seed {args.seed})")
    test = CrashTest(args)
    ok = False
    try:
        test.run()
        ok = True
    except Exception as e:
        # any error (a refused login too) is a failure: the server's logs
        # say why, and the temp directory is kept for a look
        print(f"crash_lmtp: FAILED: {type(e).__name__}: {e}\n"
              f"(kept {test.server.tmp})", file=sys.stderr)
        print(test.server.logs()[-20000:], file=sys.stderr)
    finally:
        test.stop_mtas.set()
        test.server.close_clients()
        test.server.stop()
        if ok:
            test.server.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
