#!/usr/bin/env python3
"""Black-box crash test of the mail store through the real server.

A private moat (tests/protocol/moatserver.py) serves testuser1. Each round,
one or more clients run random loops of APPEND (a few MULTIAPPEND), UID
STORE +FLAGS/-FLAGS (system flags and keywords; now and then 2-4 of them
pipelined in one write, which share one sync), UID EXPUNGE (or EXPUNGE)
of messages they marked \\Deleted, UID COPY and UID MOVE from INBOX to a
second folder. Every command whose tagged OK arrived is acknowledged: the
model takes its effect (UIDs from APPENDUID/COPYUID, flags). At a random
moment the user's imap process gets SIGKILL; some rounds kill it in the
middle of a big APPEND literal or right after a big MOVE was sent. Then a
new session (master spawns a new imap process) checks every folder:

- SELECT works, UIDVALIDITY never changes, UIDNEXT never goes back and is
  above every UID present;
- every acknowledged APPEND/COPY/MOVE target is there (by its X-Crash-Id
  header) with the UID it was given and the flags of the last acknowledged
  STORE, and its size; a command in flight at the kill may or may not have
  taken effect (both outcomes are accepted, nothing else: a MULTIAPPEND all
  or nothing, a MOVE leaves each message in the source or the target);
- every acknowledged EXPUNGE and MOVE source is gone and stays gone;
- no X-Crash-Id twice in a folder, UIDs ascending in sequence order, a UID
  once seen never names another message, a new UID is >= the UIDNEXT the
  last check saw;
- the server log holds no sanitizer report.

After the check the model is replaced by what the server holds, so the
next round starts from an exact state.

Usage: crash_imap.py [--rounds N] [--seed S] [--clients C] [--prefix DIR]
(MOAT_PREFIX is the default prefix). The seed is printed; the same seed
repeats the same choices (thread timing still varies). Exit status 0 when
every round passed, 1 on a failure (the server directory is kept).
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
import types

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "protocol"))


def _pytest_shim():
    """moatserver.py imports pytest for skip/fail/mark; this script runs
    without pytest, so those become plain exceptions."""
    try:
        import pytest  # noqa: F401
        return
    except ImportError:
        pass

    class ShimFailure(Exception):
        pass

    def fail(msg="", pytrace=True):
        raise ShimFailure(msg)

    shim = types.ModuleType("pytest")
    shim.fail = fail
    shim.skip = fail
    shim.mark = types.SimpleNamespace(skipif=lambda *a, **k: (lambda f: f))
    sys.modules["pytest"] = shim


def _set_prefix_from_argv():
    # moatserver reads MOAT_PREFIX when it is imported
    for i, a in enumerate(sys.argv):
        if a == "--prefix" and i + 1 < len(sys.argv):
            os.environ["MOAT_PREFIX"] = str(pathlib.Path(sys.argv[i + 1]).resolve())
        elif a.startswith("--prefix="):
            os.environ["MOAT_PREFIX"] = str(pathlib.Path(a.split("=", 1)[1]).resolve())


_set_prefix_from_argv()
_pytest_shim()

from moatimap import ConnectionClosed, parse_fetch, response_code  # noqa: E402
from moatserver import (MoatServer, SANITIZER_MARKERS,  # noqa: E402
                        proc_starttime, wait_for)

USER = "testuser1"
INBOX = "INBOX"
OTHER = "Crash2"
FOLDERS = (INBOX, OTHER)
ID_HEADER = "X-Crash-Id"
SYSTEM_FLAGS = ("\\Seen", "\\Answered", "\\Flagged", "\\Draft")
KEYWORDS = ("Kw1", "Kw2", "$Label3", "Todo")
DYN_KEYWORDS = 16           # Dyn0..Dyn15, defined one by one over time
# Bounds that keep a round's check short.
MAX_OWN_INBOX = 40          # per client; above it clients expunge and move
MAX_OTHER = 60              # the check trims the second folder to this
BIG_MIN, BIG_MAX = 256 * 1024, 2 * 1024 * 1024
BIG_CHUNK = 16 * 1024
MOVE_BIG = 12               # messages in a "kill during MOVE" round
SOCKET_TIMEOUT = 15.0
PROCESS_GONE_TIMEOUT = 5.0

UIDPLUS_RE = re.compile(r"^(APPENDUID|COPYUID) (\d+) ([0-9:,]+)(?: ([0-9:,]+))?$")
SELECT_NUM_RE = re.compile(rb"\[(UIDVALIDITY|UIDNEXT) (\d+)\]")


class CheckFailed(Exception):
    pass


class Killed(Exception):
    """The connection went away (the imap process was killed)."""


def uid_set(text):
    out = []
    for part in text.split(","):
        a, _, b = part.partition(":")
        lo, hi = int(a), int(b or a)
        if lo > hi:
            lo, hi = hi, lo
        out += range(lo, hi + 1)
    return out


def uid_set_text(uids):
    return ",".join(str(u) for u in uids)


def norm_flags(flags):
    """Flags as compared: case-folded, without \\Recent."""
    return frozenset(f.casefold() for f in flags if f.casefold() != "\\recent")


def make_message(msg_id, size, rng):
    head = (f"From: crash@example.org\r\nTo: {USER}@example.org\r\n"
            f"Subject: crash test {msg_id}\r\n{ID_HEADER}: {msg_id}\r\n"
            f"Message-ID: <{msg_id}@crash.example.org>\r\n\r\n")
    line = f"Body of {msg_id}: " + "".join(rng.choice("abcdefghij") for _ in range(40))
    body = []
    left = max(size - len(head), 8)
    while left > 0:
        chunk = (line[:left - 2] if left < len(line) + 2 else line) + "\r\n"
        body.append(chunk)
        left -= len(chunk)
    return (head + "".join(body)).encode()


# ---- the model --------------------------------------------------------------

class Msg:
    """What the test knows of one message in one folder.

    present: True (must be there) or None (may be there: the command that
    created or removed it was in flight). flag_options: the flag sets it
    may have (one unless a STORE was in flight). uid: known UID or None.
    group: ids of one in-flight MULTIAPPEND (all or nothing).
    move_pair: for an in-flight MOVE, the id in the other folder (one of
    the two must be present)."""

    def __init__(self, msg_id, size, flags, uid=None, present=True):
        self.id = msg_id
        self.size = size
        self.flag_options = [frozenset(flags)]
        self.uid = uid
        self.present = present
        self.group = None
        self.move_pair = False

    @property
    def flags(self):
        assert len(self.flag_options) == 1
        return self.flag_options[0]


class Model:
    def __init__(self):
        self.lock = threading.Lock()
        self.folders = {f: {} for f in FOLDERS}      # folder -> id -> Msg
        self.gone = {f: {} for f in FOLDERS}         # id -> how it went
        self.uid_owner = {f: {} for f in FOLDERS}    # uid -> id, ever
        self.uidnext_seen = {f: 1 for f in FOLDERS}  # highest ever told
        self.uidnext_floor = {f: 1 for f in FOLDERS}  # at the last check
        self.uidvalidity = {}

    def note_uid(self, folder, uid, msg_id, validity, where):
        if folder in self.uidvalidity and validity != self.uidvalidity[folder]:
            raise CheckFailed(f"{where}: UIDVALIDITY {validity} in a response, "
                              f"folder {folder} has {self.uidvalidity[folder]}")
        owner = self.uid_owner[folder].get(uid)
        if owner is not None and owner != msg_id:
            raise CheckFailed(f"{where}: UID {uid} of {folder} given to {msg_id}, "
                              f"it was {owner}'s (UID reused)")
        if uid < self.uidnext_floor[folder]:
            raise CheckFailed(f"{where}: new UID {uid} in {folder} is below "
                              f"UIDNEXT {self.uidnext_floor[folder]} seen before")
        self.uid_owner[folder][uid] = msg_id
        self.uidnext_seen[folder] = max(self.uidnext_seen[folder], uid + 1)


class Stats:
    def __init__(self):
        self.acked = {}
        self.inflight = {}
        self.inflight_applied = {}
        self.lock = threading.Lock()

    def add(self, table, op, n=1):
        with self.lock:
            table[op] = table.get(op, 0) + n

    def summary(self):
        ops = sorted(set(self.acked) | set(self.inflight))
        parts = []
        for op in ops:
            s = f"{op} {self.acked.get(op, 0)}"
            if self.inflight.get(op):
                s += (f" (+{self.inflight[op]} in flight, "
                      f"{self.inflight_applied.get(op, 0)} applied)")
            parts.append(s)
        return ", ".join(parts)


# ---- one client -------------------------------------------------------------

class Worker(threading.Thread):
    """One IMAP session running random commands on its own messages until
    the connection dies. Its in-flight command is left in self.inflight."""

    def __init__(self, runner, idx, rng, special=None):
        super().__init__(daemon=True)
        self.runner = runner
        self.model = runner.model
        self.idx = idx
        self.rng = rng
        self.special = special        # None, "literal" or "move"
        self.fire = threading.Event()  # set when the killer should strike
        self.started_ok = threading.Event()
        self.inflight = None          # (op, undo-info) of the unanswered command
        self.error = None
        self.conn = None
        self.ops = 0

    # -- plumbing

    def own(self, folder):
        prefix = f"c{self.idx}-"
        with self.model.lock:
            return [m for i, m in self.model.folders[folder].items()
                    if i.startswith(prefix)]

    def new_id(self):
        return self.runner.new_id(f"c{self.idx}")

    def send(self, data):
        try:
            self.conn.send(data)
        except OSError as e:
            raise Killed() from e
        if self.runner.hot_armed:
            self.runner.hot.set()

    def tagged(self, tag):
        try:
            r = self.conn.read_tagged(tag)
        except (ConnectionClosed, OSError) as e:
            if isinstance(e, socket.timeout):
                raise CheckFailed(f"client {self.idx}: no answer to {tag} "
                                  f"within {SOCKET_TIMEOUT}s") from e
            raise Killed() from e
        return r

    def command(self, text):
        tag = self.conn.next_tag()
        self.send(f"{tag} {text}\r\n".encode())
        r = self.tagged(tag)
        if not r.ok:
            raise CheckFailed(f"client {self.idx}: {text[:200]!r} -> {r.line!r}")
        return r

    def run(self):
        try:
            self.conn = self.runner.server.login(USER)
            self.conn.sock.settimeout(SOCKET_TIMEOUT)
            self.command(f"SELECT {INBOX}")
            self.started_ok.set()
            if self.special == "literal":
                self.big_append(fire=True)
            elif self.special == "move":
                self.big_move()
            while True:
                self.step()
                self.ops += 1
        except Killed:
            pass
        except CheckFailed as e:
            self.error = str(e)
        except BaseException as e:  # noqa: B902 - report anything
            self.error = f"client {self.idx}: {type(e).__name__}: {e}"
        finally:
            self.started_ok.set()
            self.fire.set()

    def step(self):
        own = [m for m in self.own(INBOX) if m.present]
        r = self.rng.random()
        if len(own) > MAX_OWN_INBOX:
            r = 0.55 + r * 0.45          # expunge, copy, move
        if r < 0.28 or not own:
            self.append()
        elif r < 0.30:
            if self.runner.multiappend:
                self.multi_append()
            else:
                self.append()
        elif r < 0.31:
            self.big_append(fire=False)
        elif r < 0.55:
            if self.rng.random() < 0.3 and len(own) >= 2:
                self.store_pipelined(own)
            else:
                self.store(own)
        elif r < 0.75:
            self.expunge(own)
        elif r < 0.87:
            self.copy_move(own, "COPY")
        else:
            self.copy_move(own, "MOVE")

    # -- APPEND

    def pick_flags(self):
        flags = [f for f in SYSTEM_FLAGS if self.rng.random() < 0.25]
        flags += [k for k in KEYWORDS if self.rng.random() < 0.15]
        if self.rng.random() < 0.03:
            # now and then a keyword the folder may not have yet: its
            # keywords file is rewritten while the process may die
            flags.append(f"Dyn{self.rng.randrange(DYN_KEYWORDS)}")
        return flags

    def append(self):
        msg_id = self.new_id()
        flags = self.pick_flags()
        body = make_message(msg_id, self.rng.randint(200, 4000), self.rng)
        m = Msg(msg_id, len(body), norm_flags(flags), present=None)
        with self.model.lock:
            self.model.folders[INBOX][msg_id] = m
        self.inflight = ("APPEND", [m])
        tag = self.conn.next_tag()
        self.send(f"{tag} APPEND {INBOX} ({' '.join(flags)}) {{{len(body)}+}}\r\n"
                  .encode() + body + b"\r\n")
        r = self.tagged(tag)
        self.appended(r, [m])

    def appended(self, r, msgs):
        if not r.ok:
            raise CheckFailed(f"client {self.idx}: APPEND -> {r.line!r}")
        m = UIDPLUS_RE.search(r.code or "")
        if not m or m.group(1) != "APPENDUID":
            raise CheckFailed(f"client {self.idx}: APPEND OK without APPENDUID: {r.line!r}")
        uids = uid_set(m.group(3))
        if len(uids) != len(msgs):
            raise CheckFailed(f"APPENDUID {m.group(3)} for {len(msgs)} messages")
        with self.model.lock:
            for msg, uid in zip(msgs, uids):
                self.model.note_uid(INBOX, uid, msg.id, int(m.group(2)), "APPENDUID")
                msg.uid = uid
                msg.present = True
                msg.group = None
        self.inflight = None
        self.runner.stats.add(self.runner.stats.acked,
                              "APPEND" if len(msgs) == 1 else "MULTIAPPEND")

    def multi_append(self):
        msgs, parts = [], []
        group = []
        for _ in range(self.rng.randint(2, 4)):
            msg_id = self.new_id()
            flags = self.pick_flags()
            body = make_message(msg_id, self.rng.randint(200, 3000), self.rng)
            m = Msg(msg_id, len(body), norm_flags(flags), present=None)
            m.group = group
            group.append(msg_id)
            msgs.append(m)
            parts.append(f" ({' '.join(flags)}) {{{len(body)}+}}\r\n".encode() + body)
        with self.model.lock:
            for m in msgs:
                self.model.folders[INBOX][m.id] = m
        self.inflight = ("MULTIAPPEND", msgs)
        tag = self.conn.next_tag()
        self.send(f"{tag} APPEND {INBOX}".encode() + b"".join(parts) + b"\r\n")
        self.appended(self.tagged(tag), msgs)

    def big_append(self, fire):
        """A message of hundreds of KiB, sent in chunks after the
        continuation; with fire, the killer strikes halfway through."""
        msg_id = self.new_id()
        body = make_message(msg_id, self.rng.randint(BIG_MIN, BIG_MAX), self.rng)
        m = Msg(msg_id, len(body), frozenset(), present=None)
        with self.model.lock:
            self.model.folders[INBOX][msg_id] = m
        self.inflight = ("BIGAPPEND", [m])
        tag = self.conn.next_tag()
        self.send(f"{tag} APPEND {INBOX} {{{len(body)}}}\r\n".encode())
        r = self.tagged(tag)
        if r.status != "+":
            raise CheckFailed(f"client {self.idx}: big APPEND -> {r.line!r}")
        half = self.rng.randint(len(body) // 4, len(body) * 3 // 4)
        for pos in range(0, len(body), BIG_CHUNK):
            if fire and pos >= half and not self.fire.is_set():
                self.fire.set()
                # keep sending: the kill lands while the literal arrives
            self.send(body[pos:pos + BIG_CHUNK])
        self.send(b"\r\n")
        r = self.tagged(tag)
        self.appended(r, [m])
        self.runner.stats.add(self.runner.stats.acked, "BIGAPPEND")

    # -- STORE

    def store(self, own):
        # mostly a few messages, sometimes a range (one commit for all)
        n = self.rng.randint(1, 3) if self.rng.random() < 0.7 else self.rng.randint(4, 40)
        targets = self.rng.sample(own, min(len(own), n))
        changing = [f for f in SYSTEM_FLAGS + KEYWORDS if self.rng.random() < 0.3]
        if not changing:
            changing = [self.rng.choice(SYSTEM_FLAGS + KEYWORDS)]
        add = self.rng.random() < 0.6
        silent = ".SILENT" if self.rng.random() < 0.5 else ""
        delta = norm_flags(changing)
        with self.model.lock:
            for m in targets:
                old = m.flags
                new = (old | delta) if add else (old - delta)
                m.flag_options = [old, new]
        self.inflight = ("STORE", targets)
        uids = uid_set_text(sorted(m.uid for m in targets))
        r = self.command(f"UID STORE {uids} {'+' if add else '-'}FLAGS{silent} "
                         f"({' '.join(changing)})")
        with self.model.lock:
            for m in targets:
                m.flag_options = [m.flag_options[1]]
        self.inflight = None
        if not silent:
            self.check_store_fetch(r, targets)
        self.runner.stats.add(self.runner.stats.acked, "STORE")

    def store_pipelined(self, own):
        """2-4 UID STOREs of disjoint messages in one write: the server
        runs them as one batch with one sync of the index log before the
        OKs (doc/durability.md). Each OK acknowledges its own command;
        the ones not answered at the kill may or may not have happened."""
        targets = self.rng.sample(own, min(len(own), self.rng.randint(2, 12)))
        k = min(len(targets), self.rng.randint(2, 4))
        groups = [targets[i::k] for i in range(k)]
        cmds = []
        with self.model.lock:
            for group in groups:
                changing = [f for f in SYSTEM_FLAGS + KEYWORDS
                            if self.rng.random() < 0.3] or \
                    [self.rng.choice(SYSTEM_FLAGS + KEYWORDS)]
                add = self.rng.random() < 0.6
                delta = norm_flags(changing)
                for m in group:
                    old = m.flags
                    m.flag_options = [old, (old | delta) if add else (old - delta)]
                uids = uid_set_text(sorted(m.uid for m in group))
                cmds.append((self.conn.next_tag(),
                             f"UID STORE {uids} {'+' if add else '-'}FLAGS.SILENT "
                             f"({' '.join(changing)})"))
        self.inflight = ("STORE", targets)
        self.send(b"".join(f"{tag} {text}\r\n".encode() for tag, text in cmds))
        for (tag, text), group in zip(cmds, groups):
            r = self.tagged(tag)
            if not r.ok:
                raise CheckFailed(f"client {self.idx}: {text[:200]!r} -> {r.line!r}")
            with self.model.lock:
                for m in group:
                    m.flag_options = [m.flag_options[1]]
            self.runner.stats.add(self.runner.stats.acked, "STORE")
        self.inflight = None

    def check_store_fetch(self, r, targets):
        """The untagged FETCH FLAGS of a STORE match what the model says."""
        by_uid = {m.uid: m for m in targets}
        # Line by line: merged by sequence number, an unsolicited FETCH
        # after an EXPUNGE would mix with another message's answer.
        for line in r.untagged:
            parsed = parse_fetch(line)
            if parsed is None:
                continue
            items = parsed[1]
            uid = items.get("UID")
            if uid is None or int(uid) not in by_uid or "FLAGS" not in items:
                continue
            got = norm_flags(items["FLAGS"])
            want = by_uid[int(uid)].flags
            if got != want:
                raise CheckFailed(f"client {self.idx}: STORE answered FLAGS {sorted(got)} "
                                  f"for UID {uid}, expected {sorted(want)}")

    # -- EXPUNGE

    def expunge(self, own):
        targets = self.rng.sample(own, min(len(own), self.rng.randint(1, 3)))
        deleted = frozenset({"\\deleted"})
        with self.model.lock:
            for m in targets:
                m.flag_options = [m.flags, m.flags | deleted]
        self.inflight = ("STORE", targets)
        uids = uid_set_text(sorted(m.uid for m in targets))
        self.command(f"UID STORE {uids} +FLAGS.SILENT (\\Deleted)")
        with self.model.lock:
            for m in targets:
                m.flag_options = [m.flag_options[1]]
        self.runner.stats.add(self.runner.stats.acked, "STORE")
        # A plain EXPUNGE removes every \Deleted message of the folder, so
        # only a lone client may use it; others name their UIDs.
        if self.runner.clients == 1 and self.rng.random() < 0.5:
            with self.model.lock:
                targets = [m for m in self.model.folders[INBOX].values()
                           if any("\\deleted" in f for f in m.flag_options)]
            cmd = "EXPUNGE"
        else:
            cmd = f"UID EXPUNGE {uids}"
        with self.model.lock:
            for m in targets:
                m.present = None
        self.inflight = ("EXPUNGE", targets)
        self.command(cmd)
        with self.model.lock:
            for m in targets:
                self.gone(INBOX, m, "expunged")
        self.inflight = None
        self.runner.stats.add(self.runner.stats.acked, "EXPUNGE")

    def gone(self, folder, m, how):
        if self.model.folders[folder].get(m.id) is m:
            del self.model.folders[folder][m.id]
        self.model.gone[folder][m.id] = how

    # -- COPY / MOVE

    def copy_move(self, own, op, count=None):
        # one copy of an id per folder: the test's duplicate check needs it
        in_other = self.model.folders[OTHER]
        with self.model.lock:
            cands = [m for m in own if m.id not in in_other]
        if not cands:
            return self.append()
        n = count or self.rng.randint(1, 4)
        targets = sorted(self.rng.sample(cands, min(len(cands), n)), key=lambda m: m.uid)
        copies = []
        with self.model.lock:
            for m in targets:
                c = Msg(m.id, m.size, m.flags, present=None)
                c.move_pair = op == "MOVE"
                in_other[m.id] = c
                copies.append(c)
                if op == "MOVE":
                    m.present = None
                    m.move_pair = True
        self.inflight = (op, targets + copies)
        uids = uid_set_text(m.uid for m in targets)
        tag = self.conn.next_tag()
        self.send(f"{tag} UID {op} {uids} {OTHER}\r\n".encode())
        if self.special == "move" and op == "MOVE":
            self.fire.set()
        r = self.tagged(tag)
        if not r.ok:
            raise CheckFailed(f"client {self.idx}: UID {op} {uids} -> {r.line!r}")
        code = r.code or ""
        if op == "MOVE":
            for line in r.untagged:
                if line.startswith(b"* OK [COPYUID "):
                    code = response_code(line[5:])
        m = UIDPLUS_RE.search(code)
        if not m or m.group(1) != "COPYUID":
            raise CheckFailed(f"client {self.idx}: {op} OK without COPYUID: {r!r}")
        src, dst = uid_set(m.group(3)), uid_set(m.group(4))
        if src != [t.uid for t in targets] or len(dst) != len(src):
            raise CheckFailed(f"client {self.idx}: COPYUID {m.group(3)} {m.group(4)} "
                              f"for UIDs {uids}")
        with self.model.lock:
            for t, c, uid in zip(targets, copies, dst):
                self.model.note_uid(OTHER, uid, c.id, int(m.group(2)), f"COPYUID of {op}")
                c.uid = uid
                c.present = True
                c.move_pair = False
                if op == "MOVE":
                    self.gone(INBOX, t, "moved")
        self.inflight = None
        self.runner.stats.add(self.runner.stats.acked, op)

    def big_move(self):
        """Grow the folder, then MOVE many messages; the killer strikes
        right after the command is sent."""
        while len([m for m in self.own(INBOX) if m.present]) < MOVE_BIG:
            self.append()
        own = [m for m in self.own(INBOX) if m.present]
        self.copy_move(own, "MOVE", count=MOVE_BIG)


class Reader(threading.Thread):
    """A session that keeps INBOX selected and FETCHes by sequence number
    without syncing, so that it still numbers messages the workers have
    expunged (and the kill lands while their files are kept for it). Every
    message it numbers must come back, with the UID and X-Crash-Id it had
    when the session learnt it (RFC 2180 4.1.1): never a NO. It re-SELECTs
    now and then to learn the new messages."""

    def __init__(self, runner, rng):
        super().__init__(daemon=True)
        self.runner = runner
        self.rng = rng
        self.error = None
        self.conn = None
        self.ghost_reads = 0
        self.seqs = []                # [(uid, id)] by sequence - 1

    def command(self, text):
        tag = self.conn.next_tag()
        try:
            self.conn.send(f"{tag} {text}\r\n".encode())
            r = self.conn.read_tagged(tag)
        except (ConnectionClosed, OSError) as e:
            if isinstance(e, socket.timeout):
                raise CheckFailed(f"reader: no answer to {tag} within "
                                  f"{SOCKET_TIMEOUT}s") from e
            raise Killed() from e
        if not r.ok:
            raise CheckFailed(f"reader: {text!r} -> {r.line!r}")
        return r

    def fetch(self, seqset):
        items = f"(UID BODY.PEEK[HEADER.FIELDS ({ID_HEADER})])"
        r = self.command(f"FETCH {seqset} {items}")
        out = {}
        for line in r.untagged:
            if re.match(rb"^\* \d+ EXPUNGE", line):
                raise CheckFailed(f"reader: EXPUNGE during FETCH: {r!r}")
            parsed = parse_fetch(line)
            if parsed:
                seq, got = parsed
                hdr = next((v for k, v in got.items()
                            if k.startswith("BODY[HEADER")), None)
                m = re.search(rb"X-Crash-Id:\s*(\S+)", hdr or b"", re.IGNORECASE)
                if "UID" in got and m:
                    out[seq] = (int(got["UID"]), m.group(1).decode())
        return out

    def learn(self):
        r = self.command(f"SELECT {INBOX}")
        exists = [int(l.split()[1]) for l in r.untagged if l.endswith(b" EXISTS")]
        n = exists[-1] if exists else 0
        got = self.fetch("1:*") if n else {}
        if sorted(got) != list(range(1, n + 1)):
            raise CheckFailed(f"reader: FETCH 1:* gave {sorted(got)} for {n} "
                              "messages")
        self.seqs = [got[i] for i in range(1, n + 1)]

    def run(self):
        try:
            try:
                self.conn = self.runner.server.login(USER)
            except (AssertionError, ConnectionClosed, OSError):
                return    # the kill came first
            self.conn.sock.settimeout(SOCKET_TIMEOUT)
            self.learn()
            while True:
                if not self.seqs or self.rng.random() < 0.05:
                    self.learn()
                    continue
                seq = self.rng.randrange(1, len(self.seqs) + 1)
                got = self.fetch(str(seq)).get(seq)
                if got != self.seqs[seq - 1]:
                    raise CheckFailed(f"reader: FETCH {seq} gave {got}, the "
                                      f"session numbers {self.seqs[seq - 1]} "
                                      "there")
                with self.runner.model.lock:
                    if got[1] in self.runner.model.gone[INBOX]:
                        self.ghost_reads += 1
        except Killed:
            pass
        except CheckFailed as e:
            self.error = str(e)
        except BaseException as e:  # noqa: B902 - report anything
            self.error = f"reader: {type(e).__name__}: {e}"


class Deliverer(threading.Thread):
    """Another Maildir writer (a delivery agent): writes a file in tmp/
    and renames it into new/, while the imap process syncs and is killed.
    A delivery counts once its rename returned."""

    def __init__(self, runner, rng):
        super().__init__(daemon=True)
        self.runner = runner
        self.rng = rng
        self.stop = threading.Event()
        self.error = None
        user = runner.server.users[USER]
        self.uid, self.gid = user["uid"], user["gid"]
        self.maildir = runner.server.maildir(USER)

    def run(self):
        try:
            while not self.stop.wait(0.002 + self.rng.random() * 0.02):
                self.deliver()
        except BaseException as e:  # noqa: B902
            self.error = f"deliverer: {type(e).__name__}: {e}"

    def deliver(self):
        msg_id = self.runner.new_id("d")
        body = make_message(msg_id, self.rng.randint(200, 3000), self.rng)
        name = f"{int(time.time())}.M{self.rng.getrandbits(32)}P{os.getpid()}.crashtest"
        tmp = self.maildir / "tmp" / name
        with open(tmp, "wb") as f:
            f.write(body)
            os.fchown(f.fileno(), self.uid, self.gid)
        os.rename(tmp, self.maildir / "new" / name)
        with self.runner.model.lock:
            self.runner.model.folders[INBOX][msg_id] = Msg(msg_id, len(body), frozenset())
        self.runner.stats.add(self.runner.stats.acked, "DELIVER")


# ---- the test ---------------------------------------------------------------

class Runner:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.clients = args.clients
        self.model = Model()
        self.stats = Stats()
        self.server = None
        self.next_id = 0
        self.id_lock = threading.Lock()
        self.log_pos = 0
        self.round = 0
        self.kinds = {"random": 0, "hot": 0, "literal": 0, "move": 0}
        self.log_errors = {}
        self.batched_commits = 0
        # "hot" rounds: the kill follows a command's bytes by 0-2 ms, so it
        # lands while the server works on it
        self.hot = threading.Event()
        self.hot_armed = False
        self.ghost_reads = 0

    def new_id(self, idx):
        with self.id_lock:
            self.next_id += 1
            return f"{idx}-{self.args.seed}-{self.next_id}"

    def fail(self, text):
        raise CheckFailed(f"round {self.round} (seed {self.args.seed}): {text}")

    # -- server

    def start(self):
        # log_debug: the group commit lines say how often APPENDs of
        # both sessions were committed together (the batched path)
        self.server = MoatServer({"imap_process_linger": "30",
                                  "log_debug": "yes"})
        try:
            self.server.prepare()
            self.server.start()
        except BaseException as e:
            raise CheckFailed(f"server start: {e}\n{self.server.logs()}") from None
        c = self.server.login(USER)
        caps = b" ".join(c.command("CAPABILITY").untagged).upper().split()
        self.multiappend = b"MULTIAPPEND" in caps
        r = c.command(f"CREATE {OTHER}")
        if not r.ok:
            raise CheckFailed(f"CREATE {OTHER}: {r.line!r}")
        c.close()

    def imap_pids(self):
        return self.server.child_pids("imap")

    def kill_imap(self):
        pids = self.imap_pids()
        if not pids:
            self.fail(f"no imap process to kill: {self.server.children()}")
        procs = [(p, proc_starttime(p)) for p in pids]
        for pid, _ in procs:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        def all_gone():
            return all(proc_starttime(p) != st for p, st in procs)
        if not wait_for(all_gone, PROCESS_GONE_TIMEOUT, 0.005):
            self.fail(f"imap process(es) {pids} still there after SIGKILL")

    def check_log(self):
        """Sanitizer reports, panics and fatal errors fail the run; other
        error lines (a torn log tail recovered, ...) are counted and shown
        at the end. The kill itself is logged by master as an error."""
        try:
            with open(self.server.log_path, "rb") as f:
                f.seek(self.log_pos)
                text = f.read().decode(errors="replace")
                self.log_pos = f.tell()
        except FileNotFoundError:
            text = ""
        try:
            text += self.server.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            pass
        found = [m for m in SANITIZER_MARKERS if m in text]
        if found:
            self.fail("sanitizer report in the log: " + ", ".join(found))
        for n in re.findall(r"group commit: (\d+) requests", text):
            if int(n) > 1:
                self.batched_commits += 1
        for line in text.splitlines():
            low = line.lower()
            if ": panic:" in low or ": fatal:" in low:
                self.fail(f"in the log: {line}")
            if ": error:" in low and "killed with signal 9" not in low:
                key = re.sub(r"\[\d+\]|\d+", "N", line.split(" ", 1)[-1])
                self.log_errors[key] = self.log_errors.get(key, 0) + 1

    # -- one round

    def run_round(self):
        self.round += 1
        r = self.rng.random()
        special = "literal" if r < 0.08 else "move" if r < 0.16 else None
        hot = special is None and r < 0.5
        self.kinds["hot" if hot else special or "random"] += 1
        workers = []
        for i in range(self.clients):
            rng = random.Random(self.rng.getrandbits(64))
            workers.append(Worker(self, i, rng, special if i == 0 else None))
        for w in workers:
            w.start()
        for w in workers:
            w.started_ok.wait(SOCKET_TIMEOUT)
        reader = None
        if self.args.reader:
            reader = Reader(self, random.Random(self.rng.getrandbits(64)))
            reader.start()
        deliverer = None
        if self.args.deliver:
            deliverer = Deliverer(self, random.Random(self.rng.getrandbits(64)))
            deliverer.start()
        if special:
            if not workers[0].fire.wait(SOCKET_TIMEOUT):
                self.fail(f"worker 0 never reached the {special} kill point")
            time.sleep(self.rng.random() * 0.004)
        elif hot:
            time.sleep(0.01 + self.rng.random() * self.args.max_delay / 2)
            self.hot.clear()
            self.hot_armed = True
            self.hot.wait(SOCKET_TIMEOUT)
            self.hot_armed = False
            time.sleep(self.rng.random() * 0.002)
        else:
            time.sleep(0.01 + self.rng.random() * self.args.max_delay)
        for w in workers:
            if w.error:
                self.fail(w.error)
        self.kill_imap()
        if deliverer:
            # still delivering while the process dies, then no more
            time.sleep(self.rng.random() * 0.01)
            deliverer.stop.set()
            deliverer.join()
            if deliverer.error:
                self.fail(deliverer.error)
        if reader:
            reader.join(SOCKET_TIMEOUT + 5)
            if reader.conn is not None:
                reader.conn.close()
            if reader.error:
                self.fail(reader.error)
            self.ghost_reads += reader.ghost_reads
        self.sabotage()
        for w in workers:
            w.join(SOCKET_TIMEOUT + 5)
            if w.is_alive():
                self.fail(f"client {w.idx} still running after the kill")
            if w.conn is not None:
                w.conn.close()
            if w.error:
                self.fail(w.error)
            if w.inflight:
                self.stats.add(self.stats.inflight, w.inflight[0])
        self.verify(workers)
        self.check_log()

    # -- the check

    def select(self, c, folder):
        r = c.command(f"SELECT {folder}")
        if not r.ok:
            self.fail(f"SELECT {folder} after the kill: {r.line!r}")
        nums = {}
        for line in r.untagged:
            for k, v in SELECT_NUM_RE.findall(line):
                nums[k.decode()] = int(v)
        if "UIDVALIDITY" not in nums or "UIDNEXT" not in nums:
            self.fail(f"SELECT {folder} without UIDVALIDITY/UIDNEXT: {r!r}")
        exists = [int(l.split()[1]) for l in r.untagged if l.endswith(b" EXISTS")]
        return nums["UIDVALIDITY"], nums["UIDNEXT"], (exists[-1] if exists else 0)

    def fetch_all(self, c, folder, exists):
        """[(uid, id, flags, size)] in sequence order."""
        if exists == 0:
            return []
        r = c.command(f"FETCH 1:* (UID FLAGS RFC822.SIZE "
                      f"BODY.PEEK[HEADER.FIELDS ({ID_HEADER})])")
        if not r.ok:
            self.fail(f"FETCH in {folder}: {r.line!r}")
        out = {}
        for line in r.untagged:
            parsed = parse_fetch(line)
            if not parsed:
                continue
            seq, items = parsed
            d = out.setdefault(seq, {})
            d.update(items)
        if sorted(out) != list(range(1, exists + 1)):
            self.fail(f"FETCH 1:* in {folder} answered sequences {sorted(out)[:20]}... "
                      f"for {exists} EXISTS")
        result = []
        for seq in range(1, exists + 1):
            items = out[seq]
            hdr = next((v for k, v in items.items() if k.startswith("BODY[HEADER")), None)
            m = re.search(rb"X-Crash-Id:\s*(\S+)", hdr or b"", re.IGNORECASE)
            if not m or "UID" not in items or "FLAGS" not in items:
                self.fail(f"{folder} seq {seq}: incomplete FETCH {items!r}")
            result.append((int(items["UID"]), m.group(1).decode(),
                           norm_flags(items["FLAGS"]), int(items["RFC822.SIZE"])))
        return result

    def verify(self, workers):
        if self.server.proc.poll() is not None:
            self.fail(f"master exited ({self.server.proc.returncode})")
        try:
            c = self.server.login(USER)
        except (AssertionError, ConnectionClosed, OSError) as e:
            self.fail(f"login after the kill failed: {e}")
        c.sock.settimeout(SOCKET_TIMEOUT)
        try:
            for folder in FOLDERS:
                self.verify_folder(c, folder, workers)
            self.trim(c)
        except (ConnectionClosed, OSError) as e:
            self.fail(f"the check's session failed: {e!r}")
        finally:
            c.close()

    def status(self, c, folder):
        r = c.command(f"STATUS {folder} (MESSAGES UIDNEXT UIDVALIDITY)")
        if not r.ok:
            self.fail(f"STATUS {folder} after the kill: {r.line!r}")
        found = {}
        for line in r.untagged:
            for k, v in re.findall(rb"(MESSAGES|UIDNEXT|UIDVALIDITY) (\d+)", line):
                found[k.decode()] = int(v)
        return found

    def verify_folder(self, c, folder, workers):
        model = self.model
        # STATUS may come from a list index: it must agree with SELECT
        status = self.status(c, folder)
        validity, uidnext, exists = self.select(c, folder)
        want = {"MESSAGES": exists, "UIDNEXT": uidnext, "UIDVALIDITY": validity}
        if status != want:
            self.fail(f"STATUS {folder} says {status}, SELECT says {want}")
        if folder not in model.uidvalidity:
            model.uidvalidity[folder] = validity
        elif validity != model.uidvalidity[folder]:
            self.fail(f"UIDVALIDITY of {folder} changed: "
                      f"{model.uidvalidity[folder]} -> {validity}")
        if uidnext < model.uidnext_seen[folder]:
            self.fail(f"UIDNEXT of {folder} went back: {model.uidnext_seen[folder]} "
                      f"was seen, now {uidnext}")
        actual = self.fetch_all(c, folder, exists)
        expected = model.folders[folder]
        errors = []
        seen_ids, prev_uid = {}, 0
        for uid, msg_id, flags, size in actual:
            if uid <= prev_uid:
                errors.append(f"UIDs not ascending: {uid} after {prev_uid}")
            prev_uid = uid
            if uid >= uidnext:
                errors.append(f"UID {uid} >= UIDNEXT {uidnext}")
            if msg_id in seen_ids:
                errors.append(f"duplicate {msg_id}: UIDs {seen_ids[msg_id]} and {uid}")
            seen_ids[msg_id] = uid
            owner = model.uid_owner[folder].get(uid)
            if owner is not None and owner != msg_id:
                errors.append(f"UID {uid} was {owner}, now holds {msg_id} (reused)")
            m = expected.get(msg_id)
            if m is None:
                how = model.gone[folder].get(msg_id, "never created here")
                errors.append(f"{msg_id} (UID {uid}) is there but was {how}")
                continue
            if m.uid is not None and m.uid != uid:
                errors.append(f"{msg_id} has UID {uid}, was given {m.uid}")
            if m.uid is None and owner is None and uid < model.uidnext_floor[folder]:
                errors.append(f"{msg_id} got UID {uid} below the UIDNEXT "
                              f"{model.uidnext_floor[folder]} seen before")
            if flags not in m.flag_options:
                errors.append(f"{msg_id} (UID {uid}) has flags {sorted(flags)}, expected "
                              + " or ".join(str(sorted(f)) for f in m.flag_options))
            if size != m.size:
                errors.append(f"{msg_id} (UID {uid}) has size {size}, appended {m.size}")
        for msg_id, m in expected.items():
            if m.present and msg_id not in seen_ids:
                errors.append(f"acknowledged {msg_id} (UID {m.uid}) is missing")
            if m.group is not None:
                there = [i for i in m.group if i in seen_ids]
                if there and len(there) != len(m.group):
                    errors.append(f"MULTIAPPEND in flight half applied: {there} of {m.group}")
            if m.move_pair and folder == OTHER:
                if msg_id not in seen_ids and not self.present_in(c, INBOX, msg_id):
                    errors.append(f"{msg_id} of the MOVE in flight is in neither folder")
        if errors:
            self.fail(f"folder {folder}:\n  " + "\n  ".join(errors[:30]))
        self.count_inflight(folder, workers, actual)
        self.adopt(folder, actual, uidnext)

    def present_in(self, c, folder, msg_id):
        return any(i == msg_id for _, i, _, _ in self.last_actual.get(folder, []))

    def count_inflight(self, folder, workers, actual):
        seen_ids = {i: f for _, i, f, _ in actual}
        for w in workers:
            if not w.inflight:
                continue
            op, msgs = w.inflight
            if op in ("APPEND", "MULTIAPPEND", "BIGAPPEND") and folder == INBOX:
                if msgs[0].id in seen_ids:
                    self.stats.add(self.stats.inflight_applied, op)
            elif op in ("COPY", "MOVE") and folder == OTHER:
                if any(m.id in seen_ids for m in msgs):
                    self.stats.add(self.stats.inflight_applied, op)
            elif op == "EXPUNGE" and folder == INBOX:
                if msgs and msgs[0].id not in seen_ids:
                    self.stats.add(self.stats.inflight_applied, op)
            elif op == "STORE" and folder == INBOX:
                m = msgs[0]
                if m.id in seen_ids and len(m.flag_options) > 1:
                    got = seen_ids[m.id]
                    if got == m.flag_options[1] and got != m.flag_options[0]:
                        self.stats.add(self.stats.inflight_applied, op)

    def adopt(self, folder, actual, uidnext):
        """The model becomes what the server holds."""
        model = self.model
        old = model.folders[folder]
        new = {}
        for uid, msg_id, flags, size in actual:
            new[msg_id] = Msg(msg_id, size, flags, uid=uid)
            model.uid_owner[folder][uid] = msg_id
        for msg_id in old:
            if msg_id not in new:
                model.gone[folder][msg_id] = "gone at an earlier check"
        model.folders[folder] = new
        model.uidnext_seen[folder] = max(model.uidnext_seen[folder], uidnext)
        model.uidnext_floor[folder] = model.uidnext_seen[folder]
        self.last_actual[folder] = actual

    def trim(self, c):
        """Keeps the second folder and the deliveries in INBOX small (UID
        EXPUNGE of the oldest), so that a round's check stays short."""
        for folder, prefix in ((OTHER, ""), (INBOX, "d-")):
            msgs = sorted((m for i, m in self.model.folders[folder].items()
                           if i.startswith(prefix)), key=lambda m: m.uid)
            if len(msgs) <= MAX_OTHER:
                continue
            drop = msgs[:len(msgs) - MAX_OTHER // 2]
            uids = uid_set_text(m.uid for m in drop)
            for cmd in (f"SELECT {folder}",
                        f"UID STORE {uids} +FLAGS.SILENT (\\Deleted)",
                        f"UID EXPUNGE {uids}"):
                r = c.command(cmd)
                if not r.ok:
                    self.fail(f"trim: {cmd} -> {r.line!r}")
            for m in drop:
                del self.model.folders[folder][m.id]
                self.model.gone[folder][m.id] = "expunged by the check"

    def sabotage(self):
        """--sabotage: damage the Maildir after a kill the way a store bug
        would, to show that the check notices (a self-test of the test)."""
        how = self.args.sabotage
        if not how or self.round != 3:
            return
        md = self.server.maildir(USER)
        acked = {m.id for m in self.model.folders[INBOX].values()
                 if m.present and m.id.startswith("c")}
        for path in sorted((md / "cur").iterdir()):
            data = path.read_bytes()
            m = re.search(rb"X-Crash-Id: (\S+)", data)
            if not m or m.group(1).decode() not in acked:
                continue
            if how == "lose":
                path.unlink()
            elif how == "dup":
                os.link(path, md / "new" / f"{int(time.time())}.sabotage.x")
            elif how == "flags":
                os.rename(path, str(path).split(":2,")[0] + ":2,FT")
            elif how == "uidlist":
                (md / "moat.uidlist").unlink()
            print(f"crash_imap: sabotage {how} of {m.group(1).decode()}", flush=True)
            return

    def run(self):
        self.last_actual = {}
        self.start()
        # the state before the first round (empty folders)
        c = self.server.login(USER)
        for folder in FOLDERS:
            self.verify_folder(c, folder, [])
        c.close()
        t0 = time.monotonic()
        for _ in range(self.args.rounds):
            self.run_round()
            if self.args.verbose:
                print(f"round {self.round}: {self.stats.summary()}", flush=True)
        return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--prefix", default=None, help="moat install prefix (MOAT_PREFIX)")
    ap.add_argument("--max-delay", type=float, default=0.25,
                    help="longest run of a round before the kill (s)")
    ap.add_argument("--no-deliver", dest="deliver", action="store_false",
                    help="no Maildir deliveries into new/ during the rounds")
    ap.add_argument("--no-reader", dest="reader", action="store_false",
                    help="no session reading expunged messages by number")
    ap.add_argument("--sabotage", choices=("lose", "dup", "flags", "uidlist"),
                    help="self-test: damage the Maildir at round 3; the run must fail")
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "big")
    print(f"crash_imap: seed {args.seed}, {args.rounds} rounds, {args.clients} clients "
          f"(repeat: --seed {args.seed})", flush=True)
    runner = Runner(args)
    ok = False
    leftovers = 0
    try:
        elapsed = runner.run()
        ok = True
    except CheckFailed as e:
        print(f"crash_imap: FAILED: {e}", file=sys.stderr)
    finally:
        if runner.server is not None:
            md = runner.server.maildir(USER)
            leftovers = sum(len(os.listdir(d / "tmp")) for d in [md] + list(md.glob(".*"))
                            if (d / "tmp").is_dir())
            runner.server.close_clients()
            rc, left = runner.server.stop()
            if ok:
                runner.check_log_final = runner.server.sanitizer_reports()
                if rc != 0 or left or runner.check_log_final:
                    print(f"crash_imap: FAILED at shutdown: master status {rc}, "
                          f"left {left}, sanitizer {runner.check_log_final}",
                          file=sys.stderr)
                    ok = False
            runner.server.kill_everything()
            if ok:
                runner.server.cleanup()
            else:
                log = runner.server.logs()
                print(log[-6000:], file=sys.stderr)
                print(f"crash_imap: server directory kept: {runner.server.tmp}",
                      file=sys.stderr)
    if not ok:
        print(f"crash_imap: repeat with --seed {args.seed}", file=sys.stderr)
        return 1
    for line, n in sorted(runner.log_errors.items())[:10]:
        print(f"crash_imap: logged {n}x: {line}")
    k = runner.kinds
    print(f"crash_imap: {runner.round} kills ({k['hot']} just after a command, "
          f"{k['literal']} mid-literal, "
          f"{k['move']} during MOVE) in {elapsed:.1f}s: {runner.stats.summary()}; "
          f"{runner.ghost_reads} reads of messages other sessions had "
          f"expunged; {leftovers} files left in tmp/; "
          f"{runner.batched_commits} group commits of several APPENDs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
