"""Two writers change one mailbox at the same time through different paths
(issue 3), checked against a model after every round:

  (a) two IMAP sessions of one user (one imap process, two views):
      APPEND, UID STORE, UID COPY and UID EXPUNGE in random order;
  (b) IMAP sessions plus an external Maildir writer (a Python process as
      the user, delivering via tmp/ + rename into new/ and renaming files
      in cur/ to change \\Flagged, as mutt does);
  (c) IMAP sessions plus a second OS process writing through the mailbox
      API (index/mailbox-writer, built by `make check`).

Each writer owns some flags and is the only one that changes them, so the
expected value of every flag is the last change its owner saw
acknowledged, whatever the interleaving: a change made through a stale
view must not silently revert another writer's acknowledged one. A writer
expunges only messages it created. After every round: every acknowledged
message present exactly once, flags as acknowledged, no UID given to two
messages, EXISTS/UIDNEXT the same in both sessions; and the mailbox opens
with the same contents after a server restart. Finally RENAME of a
mailbox with children, also one interrupted half way (doc/mail-storage.md).
"""

import os
import random
import re
import subprocess
import sys
import threading

import pytest

from moatimap import parse_fetch
from moatserver import IS_ROOT, MOAT_PREFIX

ROUNDS = 3
OPS_PER_ROUND = 60           # per IMAP session and round
WRITER_OPS = 80              # per external writer and round
MID_RE = re.compile(rb"Message-ID:\s*<([^>]+)>", re.IGNORECASE)
HDR_ITEM = "BODY[HEADER.FIELDS (MESSAGE-ID)]"
WRITER_BIN = MOAT_PREFIX.parent / "index" / "mailbox-writer"

def message(mid):
    return (f"Message-ID: <{mid}>\r\nSubject: {mid}\r\n\r\nbody of {mid}\r\n"
            ).encode()


def code_numbers(resp, name):
    """The numbers of response code name (APPENDUID, COPYUID) or None."""
    m = re.match(rb"\[" + name.encode() + rb" ([0-9 :,]+)\]", resp.text)
    return m.group(1).decode().split() if m else None


class Model:
    """What the writers saw acknowledged. key: uid, or Message-ID in (b)."""

    def __init__(self, by_mid):
        self.by_mid = by_mid
        self.lock = threading.Lock()
        self.present = set()
        self.flag = {}            # (key, flag) -> True/False/None (unknown)
        self.owner = {}           # key -> writer name
        self.uid_of = {}          # key -> uid (b: learned by FETCH)
        self.key_of_uid = {}      # uid -> key: a uid is never reused
        self.errors = []

    def error(self, text):
        with self.lock:
            self.errors.append(text)

    def learn_uid(self, uid, key):
        """Called with the lock held."""
        old = self.key_of_uid.setdefault(uid, key)
        if old != key:
            self.errors.append(f"UID {uid} given to {old} and to {key}")
        self.uid_of[key] = uid

    def add(self, key, uid, owner, flags):
        with self.lock:
            if uid is not None:
                if uid in self.key_of_uid:
                    self.errors.append(f"new message got used UID {uid}")
                self.learn_uid(uid, key)
            self.present.add(key)
            self.owner[key] = owner
            self.flag.update(((key, f), v) for f, v in flags.items())

    def remove(self, key):
        with self.lock:
            self.present.discard(key)

    def set_flag(self, key, flag, value):
        with self.lock:
            self.flag[(key, flag)] = value

    def pick(self, rnd, owner=None, need_uid=False):
        with self.lock:
            keys = sorted(k for k in self.present
                          if (owner is None or self.owner.get(k) == owner)
                          and (not need_uid or k in self.uid_of))
            if not keys:
                return None, None
            key = rnd.choice(keys)
            return key, self.uid_of.get(key)


def fetch_all(c, with_mid):
    """[(uid, set of flags, mid)] of the selected mailbox."""
    items = "(UID FLAGS" + (" BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])"
                            if with_mid else ")")
    r = c.command(f"UID FETCH 1:* {items}")
    assert r.ok, r
    out = []
    for seq, it in sorted(r.fetches().items()):
        if "UID" not in it:
            continue    # an unsolicited flag update, not one of ours
        mid = None
        if with_mid:
            m = MID_RE.search(it.get(HDR_ITEM) or b"")
            mid = m.group(1).decode() if m else None
        out.append((int(it["UID"]), {str(f) for f in it["FLAGS"]}, mid))
    return out


def status_numbers(c):
    r = c.command("STATUS INBOX (MESSAGES UIDNEXT)")
    assert r.ok, r
    m = re.search(rb"MESSAGES (\d+) UIDNEXT (\d+)", r.untagged[-1])
    return int(m.group(1)), int(m.group(2))


def verify(model, sessions, label):
    """The model against what every session sees now."""
    assert not model.errors, f"{label}: {model.errors}"
    seen_numbers = []
    for c in sessions:
        assert c.command("NOOP").ok
        rows = fetch_all(c, model.by_mid)
        keys = [mid if model.by_mid else uid for uid, _, mid in rows]
        uids = [uid for uid, _, _ in rows]
        dups = {k for k in keys if keys.count(k) > 1}
        assert not dups, f"{label}: listed twice: {dups}"
        assert len(set(uids)) == len(uids), f"{label}: duplicate UIDs {uids}"
        assert set(keys) == model.present, (
            f"{label}: missing {model.present - set(keys)}, "
            f"unexpected {set(keys) - model.present}")
        for (uid, flags, mid), key in zip(rows, keys):
            with model.lock:
                model.learn_uid(uid, key)
            for (k, flag), want in model.flag.items():
                if k == key and want is not None and (flag in flags) != want:
                    pytest.fail(f"{label}: message {key} (uid {uid}) has "
                                f"{sorted(flags)}, acknowledged {flag}={want}")
        messages, uidnext = status_numbers(c)
        assert messages == len(rows), f"{label}: STATUS {messages} != {len(rows)}"
        assert not uids or uidnext > max(uids)
        seen_numbers.append((messages, uidnext, uids))
    assert all(n == seen_numbers[0] for n in seen_numbers), (
        f"{label}: sessions disagree: {seen_numbers}")
    assert not model.errors, f"{label}: {model.errors}"


class ImapWriter:
    """One IMAP session that owns some flags; runs OPS_PER_ROUND ops."""

    def __init__(self, name, client, model, own_flags, seed, copy=True):
        self.name, self.c, self.model = name, client, model
        self.own_flags, self.copy = own_flags, copy
        self.rnd = random.Random(seed)
        self.seed = seed
        self.count = 0

    def append(self):
        self.count += 1
        # unique across rounds: the model is keyed by Message-ID
        mid = f"{self.name}-{self.seed}-{self.count}@imap"
        flags = {f: self.rnd.random() < 0.5 for f in self.own_flags}
        r = self.c.append("INBOX", message(mid), [f for f, v in flags.items() if v])
        numbers = code_numbers(r, "APPENDUID")
        if not r.ok or not numbers:
            return self.model.error(f"{self.name}: APPEND {r}")
        uid = int(numbers[1])
        self.model.add(mid if self.model.by_mid else uid, uid, self.name, flags)

    def store(self):
        key, uid = self.model.pick(self.rnd, need_uid=True)
        if key is None:
            return
        flag = self.rnd.choice(self.own_flags)
        value = self.rnd.random() < 0.5
        r = self.c.command(f"UID STORE {uid} {'+' if value else '-'}FLAGS ({flag})")
        if not r.ok:
            # an expunged message may be refused (RFC 9051 7.4.1)
            return
        # Line by line: merging by sequence number would mix our answer
        # with unsolicited updates (and EXPUNGEs shift the numbers). The
        # last line for the UID is the newest state; an earlier one may be
        # an update from before the STORE.
        last = None
        for line in r.untagged:
            parsed = parse_fetch(line)
            if parsed and int(parsed[1].get("UID", 0)) == uid and \
                    "FLAGS" in parsed[1]:
                last = parsed[1]
        if last is not None:
            got = flag in {str(f) for f in last["FLAGS"]}
            if got != value:
                self.model.error(f"{self.name}: STORE {uid} {flag}={value} "
                                 f"answered {last['FLAGS']} in {r.untagged}")
            self.model.set_flag(key, flag, value)
            return
        # not reported: maybe applied, maybe not (not yet in this view)
        self.model.set_flag(key, flag, None)

    def copy_own(self):
        key, uid = self.model.pick(self.rnd, owner=self.name, need_uid=True)
        if key is None:
            return
        r = self.c.command(f"UID COPY {uid} INBOX")
        numbers = code_numbers(r, "COPYUID")
        if not r.ok or not numbers:
            return self.model.error(f"{self.name}: COPY {uid}: {r}")
        new_uid = int(numbers[2])
        with self.model.lock:
            flags = {f: v for (k, f), v in self.model.flag.items() if k == key}
        # the other writers' flags were copied as they were at that moment
        flags = {f: (flags.get(f, False) if f in self.own_flags else None)
                 for f in ("\\Seen", "\\Answered", "\\Flagged", "\\Draft")}
        self.model.add(new_uid, new_uid, self.name, flags)

    def expunge_own(self):
        key, uid = self.model.pick(self.rnd, owner=self.name, need_uid=True)
        if key is None:
            return
        r1 = self.c.command(f"UID STORE {uid} +FLAGS.SILENT (\\Deleted)")
        r2 = self.c.command(f"UID EXPUNGE {uid}")
        if not (r1.ok and r2.ok):
            return self.model.error(f"{self.name}: expunge {uid}: {r1} {r2}")
        self.model.remove(key)

    def learn_uids(self):
        """(b): the UIDs of messages another writer delivered."""
        for uid, _, mid in fetch_all(self.c, True):
            if mid is not None:
                with self.model.lock:
                    if mid in self.model.present:
                        self.model.learn_uid(uid, mid)

    def run(self):
        try:
            for i in range(OPS_PER_ROUND):
                if self.model.by_mid and i % 10 == 0:
                    self.learn_uids()
                r = self.rnd.random()
                if r < 0.3:
                    self.append()
                elif r < 0.7:
                    self.store()
                elif r < 0.85 and self.copy:
                    self.copy_own()
                else:
                    self.expunge_own()
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.model.error(f"{self.name}: {e!r}")


def run_threads(writers, extra=()):
    threads = [threading.Thread(target=w.run) for w in writers] + list(extra)
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a writer hung"


def login_select(server, n):
    sessions = []
    for _ in range(n):
        c = server.login()
        assert c.command("SELECT INBOX").ok
        sessions.append(c)
    return sessions


def restart_and_verify(server, model, label):
    server.close_clients()
    rc, left = server.stop()
    assert rc == 0 and not left, server.logs()
    server.start()
    verify(model, login_select(server, 2), label + " after restart")


def user_ids(server):
    u = server.users["testuser1"]
    return (u["uid"], u["gid"]) if IS_ROOT else (None, None)


# ---- (a) two IMAP sessions ------------------------------------------------

def test_two_sessions_interleaved(moat_server):
    model = Model(by_mid=False)
    a, b = login_select(moat_server, 2)
    for rnd in range(ROUNDS):
        run_threads([
            ImapWriter("A", a, model, ["\\Seen", "\\Answered"], 100 + rnd),
            ImapWriter("B", b, model, ["\\Flagged", "\\Draft"], 200 + rnd)])
        verify(model, [a, b], f"round {rnd}")
    restart_and_verify(moat_server, model, "(a)")


# ---- (b) IMAP sessions + an external Maildir writer ------------------------

EXTERNAL_WRITER = r'''
import os, random, re, sys
root, ops, seed, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rnd = random.Random(seed)
own = []
def out(line):
    sys.stdout.write(line + "\n"); sys.stdout.flush()
def mid_of(path):
    try:
        with open(path, "rb") as f:
            m = re.match(rb"Message-ID: <([^>]+)>", f.readline())
    except FileNotFoundError:
        return None
    return m.group(1).decode() if m else None
def find(base):
    for d in ("new", "cur"):
        for f in os.listdir(os.path.join(root, d)):
            if f.split(":")[0] == base:
                return os.path.join(root, d, f)
    return None
def toggled(fname):
    base, _, info = fname.partition(":2,")
    letters = set(info)
    on = "F" not in letters
    letters = (letters | {"F"}) if on else (letters - {"F"})
    return base + ":2," + "".join(sorted(letters)), on
for i in range(ops):
    r = rnd.random()
    if r < 0.45:
        base = "%d.M%dP%d.%s%d" % (1700000000 + i, i, os.getpid(), tag, i)
        mid = "%s-%d@ext" % (tag, i)
        tmp = os.path.join(root, "tmp", base)
        with open(tmp, "wb") as f:
            f.write(("Message-ID: <%s>\nSubject: x\n\nbody\n" % mid).encode())
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(root, "new", base))
        own.append((base, mid))
        out("D " + mid)
    elif r < 0.85:
        names = [f for f in os.listdir(os.path.join(root, "cur"))]
        if not names:
            continue
        base = rnd.choice(names).split(":")[0]
        for attempt in range(5):
            path = find(base)
            if path is None or "/cur/" not in path:
                break
            mid = mid_of(path)
            new, on = toggled(os.path.basename(path))
            try:
                os.rename(path, os.path.join(root, "cur", new))
            except FileNotFoundError:
                continue
            if mid:
                out("F %s %d" % (mid, on))
            break
    elif own:
        base, mid = own.pop(rnd.randrange(len(own)))
        for attempt in range(5):
            path = find(base)
            if path is None:
                break
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            out("U " + mid)
            break
'''


def spawn_as_user(server, argv):
    uid, gid = user_ids(server)
    kwargs = {"user": uid, "group": gid, "extra_groups": []} if IS_ROOT else {}
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd="/", **kwargs)


def ack_reader(proc, model, apply):
    def read():
        for line in proc.stdout:
            apply(model, line.decode().split())
        proc.wait()
        err = proc.stderr.read()
        if proc.returncode != 0 or err:
            model.error(f"writer exited {proc.returncode}: {err!r}")
    return threading.Thread(target=read)


def apply_external(model, words):
    if words[0] == "D":
        model.add(words[1], None, "ext", {})
    elif words[0] == "F":
        model.set_flag(words[1], "\\Flagged", words[2] == "1")
    elif words[0] == "U":
        model.remove(words[1])


def test_external_maildir_writer(moat_server):
    model = Model(by_mid=True)
    a, b = login_select(moat_server, 2)
    root = str(moat_server.maildir("testuser1"))
    for rnd in range(ROUNDS):
        ext = spawn_as_user(moat_server, [sys.executable, "-c", EXTERNAL_WRITER,
                                          root, str(WRITER_OPS), str(rnd), f"e{rnd}x"])
        run_threads([
            ImapWriter("A", a, model, ["\\Seen"], 300 + rnd, copy=False),
            ImapWriter("B", b, model, ["\\Answered", "\\Draft"], 400 + rnd,
                       copy=False)],
            [ack_reader(ext, model, apply_external)])
        verify(model, [a, b], f"round {rnd}")
    restart_and_verify(moat_server, model, "(b)")


# ---- (c) IMAP sessions + a second process on the mailbox API ---------------

def apply_api_writer(model, words):
    uid = int(words[1])
    if words[0] == "A":
        model.add(uid, uid, "W", {})
    elif words[0] == "F":
        model.set_flag(uid, "\\Flagged", words[2] == "1")
    elif words[0] == "X":
        model.remove(uid)


@pytest.mark.skipif(not os.access(WRITER_BIN, os.X_OK),
                    reason=f"{WRITER_BIN} not built (make check)")
def test_second_process_mailbox_api(moat_server):
    model = Model(by_mid=False)
    a, b = login_select(moat_server, 2)
    root = str(moat_server.maildir("testuser1"))
    for rnd in range(ROUNDS):
        w = spawn_as_user(moat_server, [str(WRITER_BIN), root, "INBOX",
                                        str(WRITER_OPS), str(rnd), f"w{rnd}"])
        run_threads([
            ImapWriter("A", a, model, ["\\Seen"], 500 + rnd),
            ImapWriter("B", b, model, ["\\Answered", "\\Draft"], 600 + rnd)],
            [ack_reader(w, model, apply_api_writer)])
        verify(model, [a, b], f"round {rnd}")
    restart_and_verify(moat_server, model, "(c)")


# ---- RENAME with children --------------------------------------------------

def list_names(c):
    r = c.command('LIST "" "*"')
    assert r.ok, r
    return sorted(line.rsplit(b" ", 1)[1].strip(b'"').decode()
                  for line in r.untagged if line.startswith(b"* LIST "))


def test_rename_with_children(moat_server):
    c = moat_server.login()
    for name in ("p/q/r", "p/s", "px"):
        assert c.command(f"CREATE {name}").ok
    assert c.append("p/q", message("in-pq@x")).ok
    assert c.command("RENAME p n/m").ok
    names = list_names(c)
    assert {"n", "n/m", "n/m/q", "n/m/q/r", "n/m/s", "px"} <= set(names)
    assert not {"p", "p/q", "p/s"} & set(names)
    r = c.command("STATUS n/m/q (MESSAGES)")
    assert r.ok and b"MESSAGES 1" in r.untagged[0]
    # RENAME INBOX (RFC 9051 6.3.6): its messages move, INBOX stays
    assert c.append("INBOX", message("in-inbox@x")).ok
    assert c.command("RENAME INBOX saved").ok
    r = c.command("STATUS INBOX (MESSAGES)")
    assert r.ok and b"MESSAGES 0" in r.untagged[0]
    r = c.command("STATUS saved (MESSAGES)")
    assert r.ok and b"MESSAGES 1" in r.untagged[0]


def test_interrupted_rename_is_finished(moat_server):
    """A RENAME cut short after its journal and one folder: the next LIST
    (and a new process) finish it."""
    c = moat_server.login()
    for name in ("p/q", "p/s"):
        assert c.command(f"CREATE {name}").ok
    c.command("LOGOUT")
    moat_server.close_clients()
    root = moat_server.maildir("testuser1")
    # RENAME p z died after its journal and the first folder
    (root / "moat.rename.journal").write_text("F\tp\tz\n")
    os.rename(root / ".p.q", root / ".z.q")
    moat_server.chown_home(moat_server.users["testuser1"])
    c = moat_server.login()
    names = set(list_names(c))
    assert {"z", "z/q", "z/s"} <= names and not {"p", "p/q", "p/s"} & names
    assert not (root / "moat.rename.journal").exists()
