"""A model test of QRESYNC (RFC 7162 3.2, 6): another session and
another program (writing the Maildir directly) STORE, EXPUNGE and
APPEND at random; a client that keeps a cache of UID -> flags resyncs
with SELECT (QRESYNC ...) (or stays selected and follows the VANISHED
and FETCH updates of NOOP), and its rebuilt state must always equal a
full fetch. MOAT_QRESYNC_ROUNDS (default 500) and MOAT_QRESYNC_SEED."""

import os
import random
import re

from test_condstore import ok, highestmodseq
from test_qresync import uidvalidity, uid_set

FLAGS = ["\\Seen", "\\Flagged", "\\Answered", "\\Deleted", "\\Draft", "$Work"]
# the Maildir letters of another program (RFC 9051 flags it may set)
LETTERS = {"S": "\\Seen", "F": "\\Flagged", "R": "\\Answered",
           "T": "\\Deleted", "D": "\\Draft"}


def msg(n):
    return f"Subject: model {n}\r\n\r\nbody {n}\r\n".encode()


def set_str(uids):
    """A compact UID set."""
    uids = sorted(uids)
    parts, i = [], 0
    while i < len(uids):
        j = i
        while j + 1 < len(uids) and uids[j + 1] == uids[j] + 1:
            j += 1
        parts.append(str(uids[i]) if i == j else f"{uids[i]}:{uids[j]}")
        i = j + 1
    return ",".join(parts)


class CachingClient:
    """What a disconnected client keeps: UIDVALIDITY, HIGHESTMODSEQ and
    the flags of every UID (RFC 7162 6)."""

    def __init__(self, conn):
        self.c = conn
        self.uv = None
        self.hm = None
        self.flags = {}
        self.selected = False

    def apply(self, r):
        """The responses of one command: VANISHED (EARLIER or not), FETCH
        FLAGS, and the HIGHESTMODSEQ rules of RFC 7162 6."""
        seen_code = None
        max_fetch = 0
        for line in r.untagged + [r.line]:
            m = re.match(rb"^\* VANISHED (\(EARLIER\) )?(\S+)$", line)
            if m:
                for uid in uid_set(m.group(2).decode()):
                    self.flags.pop(uid, None)
                continue
            m = re.search(rb"\[HIGHESTMODSEQ (\d+)\]", line)
            if m:
                seen_code = int(m.group(1))
        for items in r.fetches().values():
            if "UID" not in items:
                continue
            uid = int(items["UID"])
            if "FLAGS" in items:
                self.flags[uid] = {f for f in items["FLAGS"]
                                   if f.lower() != "\\recent"}
            if "MODSEQ" in items:
                max_fetch = max(max_fetch, int(items["MODSEQ"][0]))
        if seen_code is not None:
            self.hm = seen_code
        elif max_fetch > (self.hm or 0):
            self.hm = max_fetch

    def resync(self, rng):
        if self.uv is None:
            r = ok(self.c, "SELECT INBOX")
            self.uv = uidvalidity(r)
            self.hm = highestmodseq(r)
            r = ok(self.c, "UID FETCH 1:* (FLAGS)")
            self.apply(r)
        else:
            known = ""
            if self.flags and rng.random() < 0.5:
                known = " " + set_str(self.flags)
            r = ok(self.c, f"SELECT INBOX (QRESYNC ({self.uv} {self.hm}{known}))")
            assert uidvalidity(r) == self.uv, r
            self.apply(r)
            # step 2 of RFC 7162 6: discover the new messages
            top = max(self.flags, default=0)
            r = ok(self.c, f"UID FETCH {top + 1}:* (FLAGS)")
            self.apply(r)
        self.selected = True

    def follow(self):
        """Stay selected: the updates a NOOP brings."""
        self.apply(ok(self.c, "NOOP"))
        top = max(self.flags, default=0)
        self.apply(ok(self.c, f"UID FETCH {top + 1}:* (FLAGS)"))

    def check(self, truth):
        assert self.flags == truth, (sorted(self.flags.items()),
                                     sorted(truth.items()))


def full_fetch(conn):
    r = ok(conn, "UID FETCH 1:* (FLAGS)")
    return {int(i["UID"]): {f for f in i["FLAGS"] if f.lower() != "\\recent"}
            for i in r.fetches().values()}


def other_session_op(rng, o, count):
    op = rng.random()
    if op < 0.35 or count == 0:
        for _ in range(rng.randint(1, 3)):
            assert o.append("INBOX", msg(rng.randint(0, 10**6))).ok
    elif op < 0.75:
        seqs = sorted({rng.randint(1, count) for _ in range(rng.randint(1, 4))})
        mode = rng.choice(["+", "-", ""])
        flag = " ".join(rng.sample(FLAGS, rng.randint(1, 2)))
        ok(o, f"STORE {','.join(map(str, seqs))} {mode}FLAGS.SILENT ({flag})")
    else:
        seqs = sorted({rng.randint(1, count) for _ in range(rng.randint(1, 3))})
        ok(o, f"STORE {','.join(map(str, seqs))} +FLAGS.SILENT (\\Deleted)")
        ok(o, "EXPUNGE")


def other_program_op(rng, server, serial):
    """Another Maildir writer: drop a new message, rename one to other
    flags, or remove one."""
    md = server.maildir("testuser1")
    names = sorted(os.listdir(md / "cur"))
    op = rng.random()
    if op < 0.3 or not names:
        path = md / "new" / f"{serial}.model.host"
        path.write_bytes(msg(serial))
        server.chown_home(server.users["testuser1"])
        return
    name = rng.choice(names)
    if op < 0.75:
        base, _, info = name.partition(":2,")
        letters = "".join(sorted(rng.sample(list(LETTERS), rng.randint(0, 2)) +
                                 [ch for ch in info if ch.islower()]))
        os.rename(md / "cur" / name, md / "cur" / f"{base}:2,{letters}")
    else:
        os.unlink(md / "cur" / name)


def test_qresync_model(moat_server):
    rounds = int(os.environ.get("MOAT_QRESYNC_ROUNDS", "500"))
    seed = int(os.environ.get("MOAT_QRESYNC_SEED", str(random.randrange(10**9))))
    print(f"MOAT_QRESYNC_SEED={seed}")
    rng = random.Random(seed)
    a = moat_server.login("testuser1")
    ok(a, "ENABLE QRESYNC")
    o = moat_server.login("testuser1")
    ok(o, "SELECT INBOX")
    for i in range(8):
        assert o.append("INBOX", msg(i)).ok
    client = CachingClient(a)
    client.resync(rng)
    for rnd in range(rounds):
        # the client goes away (or stays selected) while others change
        # the mailbox
        stay = client.selected and rng.random() < 0.3
        if not stay and client.selected:
            ok(a, "UNSELECT")
            client.selected = False
        for _ in range(rng.randint(1, 3)):
            count = len(full_fetch(o))
            if rng.random() < 0.7:
                other_session_op(rng, o, count)
            else:
                other_program_op(rng, moat_server, rnd * 10 + _)
        ok(o, "NOOP")
        if stay:
            client.follow()
        else:
            client.resync(rng)
        truth = full_fetch(a)
        client.check(truth)
        r = ok(a, "STATUS INBOX (HIGHESTMODSEQ)")
        server_hm = int(re.search(rb"HIGHESTMODSEQ (\d+)", r.untagged[-1])[1])
        assert client.hm is not None and client.hm <= server_hm
