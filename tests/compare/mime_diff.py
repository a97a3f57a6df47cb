#!/usr/bin/env python3
"""Differential test of moat's MIME answers against a reference IMAP server
(a private Dovecot, see compare-dovecot-mime.sh). Standard library only.

Every message is APPENDed unchanged to both servers. The BODYSTRUCTUREs
(both servers') give the part numbers; then one pipelined UID FETCH per
message asks for every section of every part at every depth:
BODY[n], BODY[n.MIME], BINARY[n], BINARY.SIZE[n], BODY[n.HEADER] and
BODY[n.TEXT] of message/rfc822 parts, a partial BINARY[n]<o.l>, BODY[],
BODY[HEADER], BODY[TEXT], BODY[HEADER.FIELDS.NOT (To)], ENVELOPE, BODY,
BODYSTRUCTURE, RFC822.SIZE, plus
part numbers that do not exist; and first, alone in their FETCH (moat
parses only the header for them, then finds its size in the cache),
RFC822.HEADER, RFC822.TEXT and partial BODY[HEADER] and BODY[TEXT].
Answers are compared item by item.

Differences doc/mime-differences.md lists as moat being right are known
here (KNOWN): each has a check that recognises exactly that difference;
anything else is a new difference and fails the run.

    mime_diff.py --ref-port P --moat-port Q [--seed N] [--count N] [--corpus DIR]
"""
import argparse
import os
import random
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mime_gen  # noqa: E402
import mime_known  # noqa: E402

# Commands sent before waiting for their answers: enough to keep both
# servers busy, few enough that neither socket buffer fills up with
# unread answers while we still write.
PIPELINE_DEPTH = 32
# Messages per round (APPEND, BODYSTRUCTURE, sections).
BATCH = 200
# Items per FETCH command: below moat's IMAP_FETCH_MAX_ITEMS (256).
ITEMS_PER_FETCH = 100
# Octets of part bodies (BODY[n], BINARY[n], n.TEXT) asked for per
# message, beyond BODY[] and BODY[TEXT].
SECTION_BUDGET = 4 * 1024 * 1024


LITERAL_END_RE = re.compile(rb"~?\{(\d+)\}\r\n$")


class ImapError(Exception):
    pass


class Imap:
    """A raw IMAP client that pipelines commands (LITERAL+ for APPEND)."""

    def __init__(self, host, port, user, password, timeout=120):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = bytearray()
        self.pos = 0
        self.tagn = 0
        self.read_line()
        self.check(self.command(b"LOGIN %s %s" % (user.encode(),
                                                  password.encode())))

    def close(self):
        try:
            self.sock.sendall(b"Z LOGOUT\r\n")
        except OSError:
            pass
        self.sock.close()

    def _more(self):
        # the unread part moves to the front only when a read is due, so
        # taking a line or a literal never copies what follows it
        if self.pos:
            del self.buf[:self.pos]
            self.pos = 0
        data = self.sock.recv(1 << 20)
        if not data:
            raise ImapError("connection closed")
        self.buf += data

    def read_line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos:i + 2])
                self.pos = i + 2
                return line
            self._more()

    def read_exact(self, n):
        while len(self.buf) - self.pos < n:
            self._more()
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def read_response_line(self):
        """One response with its literals inline."""
        out = []
        while True:
            line = self.read_line()
            out.append(line)
            m = LITERAL_END_RE.search(line)
            if not m:
                return b"".join(out)
            out.append(self.read_exact(int(m.group(1))))

    def next_tag(self):
        self.tagn += 1
        return b"T%d" % self.tagn

    def send(self, cmd, literal=None):
        tag = self.next_tag()
        if literal is None:
            self.sock.sendall(tag + b" " + cmd + b"\r\n")
        else:
            self.sock.sendall(tag + b" " + cmd + b" {%d+}\r\n" % len(literal)
                              + literal + b"\r\n")
        return tag

    def read_tagged(self, tag):
        untagged = []
        while True:
            line = self.read_response_line()
            if line.startswith(tag + b" "):
                return line, untagged
            if line.startswith(b"T") and b" " in line:
                raise ImapError("answer to another command: %r" % line[:200])
            untagged.append(line)

    def command(self, cmd, literal=None):
        return self.read_tagged(self.send(cmd, literal))

    @staticmethod
    def check(resp):
        line, untagged = resp
        if line.split(b" ")[1:2] != [b"OK"]:
            raise ImapError("command failed: %r" % line)
        return untagged

    def pipeline(self, cmds, results):
        """[(cmd, literal)] -> results: [(tagged line, untagged)] in order
        (filled as the answers come, so a caller sees what arrived before
        an error)."""
        pending = []
        for cmd, literal in cmds:
            pending.append(self.send(cmd, literal))
            if len(pending) >= PIPELINE_DEPTH:
                results.append(self.read_tagged(pending.pop(0)))
        for tag in pending:
            results.append(self.read_tagged(tag))


# The answer of a command during which the server closed the connection.
DISCONNECTED = b"(disconnected)"


def item_name(item):
    """The name a FETCH answer gives item: BODY.PEEK[1]<0.5> -> BODY[1]<0>."""
    name = re.sub(r"\.PEEK", "", item.upper())
    return re.sub(r"<(\d+)\.\d+>$", r"<\1>", name)


# ---- IMAP values ----

def skip_value(data, i):
    """Index after the value (atom, string, literal, list) at data[i]."""
    c = data[i:i + 1]
    if c == b"(":
        i += 1
        while True:
            while data[i:i + 1] == b" ":
                i += 1
            if data[i:i + 1] == b")":
                return i + 1
            if i >= len(data):
                raise ValueError("unterminated list")
            i = skip_value(data, i)
    if c == b'"':
        i += 1
        while i < len(data):
            if data[i] == 0x5c:
                i += 2
            elif data[i] == 0x22:
                return i + 1
            else:
                i += 1
        raise ValueError("unterminated string")
    m = re.compile(rb"~?\{(\d+)\}\r\n").match(data, i)
    if m:
        return m.end() + int(m.group(1))
    depth = 0
    while i < len(data):
        ch = data[i]
        if ch == 0x5b:
            depth += 1
        elif ch == 0x5d:
            depth -= 1
        elif depth == 0 and ch in b" ()\r":
            break
        i += 1
    return i


def parse_value(data, i=0):
    """(Python value, end): list, bytes (string), str (atom), None (NIL)."""
    c = data[i:i + 1]
    if c == b"(":
        out = []
        i += 1
        while True:
            while data[i:i + 1] == b" ":
                i += 1
            if data[i:i + 1] == b")":
                return out, i + 1
            v, i = parse_value(data, i)
            out.append(v)
    if c == b'"':
        end = skip_value(data, i)
        return re.sub(rb"\\(.)", rb"\1", data[i + 1:end - 1]), end
    m = re.compile(rb"~?\{(\d+)\}\r\n").match(data, i)
    if m:
        end = m.end() + int(m.group(1))
        return data[m.end():end], end
    end = skip_value(data, i)
    atom = data[i:end].decode("latin-1")
    return (None if atom.upper() == "NIL" else atom), end


def fetch_items(line):
    """'* n FETCH (NAME value ...)' -> {NAME: raw value bytes}."""
    m = re.match(rb"\* \d+ FETCH \(", line)
    if not m:
        return None
    out, i = {}, m.end()
    while i < len(line):
        while line[i:i + 1] == b" ":
            i += 1
        if line[i:i + 1] in (b")", b""):
            break
        j = skip_value(line, i)
        name = line[i:j].decode("latin-1").upper()
        k = skip_value(line, j + 1)
        out[name] = line[j + 1:k]
        i = k
    return out


def literal_data(raw):
    """The string an nstring value holds (None for NIL)."""
    v, _ = parse_value(raw)
    return v


# ---- part numbers from a BODYSTRUCTURE ----

def is_multipart(bs):
    return isinstance(bs, list) and bs and isinstance(bs[0], list)


def is_message_rfc822(bs):
    return (isinstance(bs, list) and len(bs) > 8 and
            isinstance(bs[0], bytes) and isinstance(bs[1], bytes) and
            bs[0].lower() == b"message" and bs[1].lower() == b"rfc822" and
            isinstance(bs[8], list))


def part_size(p):
    """The octets BODYSTRUCTURE gives a part (a multipart: its parts')."""
    if is_multipart(p):
        return sum(part_size(c) for c in p if isinstance(c, list))
    if isinstance(p, list) and len(p) > 6 and isinstance(p[6], str) and \
            p[6].isdigit():
        return int(p[6])
    return 0


def part_paths(bs):
    """{path: (kind, size)} for a message's BODYSTRUCTURE; kind 'message'
    marks message/rfc822 parts (HEADER and TEXT apply), 'part' the
    others; size is the part's octets."""
    out = {}

    def children(container, prefix):
        # container is a message's body: numbered parts are its children
        # when multipart, else the body itself is part 1
        if is_multipart(container):
            subs = [c for c in container if isinstance(c, list)]
            for n, c in enumerate(subs, 1):
                part(c, prefix + str(n))
        else:
            part(container, prefix + "1")

    def part(p, path):
        out[path] = ("message" if is_message_rfc822(p) else "part",
                     part_size(p))
        if is_message_rfc822(p):
            children(p[8], path + ".")
        elif is_multipart(p):
            for n, c in enumerate([c for c in p if isinstance(c, list)], 1):
                part(c, path + "." + str(n))

    children(bs, "")
    return out


def section_items(paths):
    """FETCH item lists for a message with these part paths: the first
    ones have everything but BINARY, then one list per part for its
    BINARY items (Dovecot closes the connection on some of those). Part
    bodies are asked for until SECTION_BUDGET octets: a message nested
    100 deep would otherwise send itself 100 times (MIME headers are
    always asked for)."""
    main = ["RFC822.SIZE", "ENVELOPE", "BODY", "BODYSTRUCTURE",
            "BODY.PEEK[]", "BODY.PEEK[HEADER]", "BODY.PEEK[TEXT]",
            "BODY.PEEK[TEXT]<2.9>", "BODY.PEEK[HEADER.FIELDS.NOT (To)]"]
    binary = []
    budget = SECTION_BUDGET
    for path in sorted(paths, key=lambda p: [int(x) for x in p.split(".")]):
        kind, size = paths[path]
        main.append("BODY.PEEK[%s.MIME]" % path)
        if size > budget:
            continue
        budget -= 3 * size
        main.append("BODY.PEEK[%s]" % path)
        if kind == "message":
            main += ["BODY.PEEK[%s.HEADER]" % path,
                     "BODY.PEEK[%s.TEXT]" % path]
        items = ["BINARY.PEEK[%s]" % path, "BINARY.SIZE[%s]" % path]
        if path == "1":
            items.append("BINARY.PEEK[1]<1.7>")
        binary.append(items)
    # parts that do not exist
    top = max([int(p.split(".")[0]) for p in paths] + [1])
    main += ["BODY.PEEK[%d]" % (top + 1), "BODY.PEEK[%d.MIME]" % (top + 1)]
    # moat takes at most 256 items per FETCH (IMAP_FETCH_MAX_ITEMS)
    groups = [main[i:i + ITEMS_PER_FETCH]
              for i in range(0, len(main), ITEMS_PER_FETCH)]
    # the message's header and text alone, under other names: moat parses
    # only the header for these (imap_section_header_only()), and the
    # next FETCH finds where it ends in the cache
    alone = ["RFC822.HEADER", "BODY.PEEK[TEXT]<0.40>",
             "BODY.PEEK[HEADER]<1.30>", "RFC822.TEXT"]
    cached = ["BODY.PEEK[HEADER]<2.100000000>",
              "BODY.PEEK[TEXT]<1.100000000>"]
    return [alone, cached] + groups + binary


# ---- running both servers ----

class Side:
    """One server's connection and answers, driven from its own thread so
    both servers work at the same time."""

    def __init__(self, name, host, port, user, password, mailbox):
        self.name = name
        self.login = (host, port, user, password)
        self.reconnects = 0
        self.imap = Imap(host, port, user, password)
        self.mailbox = mailbox.encode()
        resp = self.imap.command(b"CREATE " + self.mailbox)
        del resp
        self.imap.check(self.imap.command(b"SELECT " + self.mailbox))
        caps = b" ".join(self.imap.check(self.imap.command(b"CAPABILITY")))
        if b"BINARY" not in caps:
            raise ImapError("%s lacks BINARY" % name)

    def append(self, msgs):
        """UIDs (or an error string) of msgs appended in order."""
        res = []
        self.imap.pipeline([(b"APPEND " + self.mailbox, m) for m in msgs],
                           res)
        out = []
        for line, _ in res:
            m = re.search(rb"APPENDUID \d+ (\d+)", line)
            out.append(int(m.group(1)) if m else
                       "APPEND: " + line.decode("latin-1").strip())
        return out

    def reconnect(self):
        self.imap.sock.close()
        self.imap = Imap(*self.login)
        self.imap.check(self.imap.command(b"SELECT " + self.mailbox))
        self.reconnects += 1

    def pipeline(self, cmds):
        """Imap.pipeline that survives the server closing the connection
        (Dovecot does on BINARY of some broken encodings). Dovecot works
        on pipelined commands together, so the command it failed on is
        not known: the ones that were pending are sent again one at a
        time, and the one that closes the connection on its own gets
        DISCONNECTED."""
        out = []
        while len(out) < len(cmds):
            done = []
            try:
                self.imap.pipeline(cmds[len(out):], done)
                out += done
                continue
            except (ImapError, OSError):
                out += done
            self.reconnect()
            for cmd in cmds[len(out):len(out) + PIPELINE_DEPTH]:
                try:
                    out.append(self.imap.command(*cmd))
                except (ImapError, OSError):
                    out.append(DISCONNECTED)
                    self.reconnect()
        return out

    def fetch(self, uid_cmds):
        """[(uid, [[items], [items]...])] -> [{ITEM: raw}] per uid. Each
        item list is one command, so that a connection the server closes
        loses only that command's items. Answers are matched by UID, not
        by order: Dovecot runs pipelined FETCHes together and its tagged
        NO for one may follow the data of the next ones."""
        cmds, owner = [], []
        for n, (uid, groups) in enumerate(uid_cmds):
            for items in groups:
                cmds.append((b"UID FETCH %d (%s)" % (
                    uid, " ".join(items).encode()), None))
                owner.append((n, items))
        results = self.pipeline(cmds)
        by_uid = {}
        for res in results:
            if res is DISCONNECTED:
                continue
            for u in res[1]:
                got = fetch_items(u)
                if got and "UID" in got:
                    by_uid.setdefault(int(got["UID"]), {}).update(got)
        out = []
        for uid, _ in uid_cmds:
            got = by_uid.get(uid, {})
            got.pop("UID", None)
            got.pop("FLAGS", None)
            out.append(got)
        for (n, items), res in zip(owner, results):
            if res is DISCONNECTED:
                text = DISCONNECTED
            elif res[0].split(b" ")[1:2] != [b"OK"]:
                text = b"(tagged) " + res[0].split(b" ")[1]
            else:
                continue
            for item in items:
                out[n].setdefault(item_name(item), text)
        return out

    def expunge_all(self):
        self.imap.check(self.imap.command(
            b"UID STORE 1:* +FLAGS.SILENT (\\Deleted)"))
        self.imap.check(self.imap.command(b"EXPUNGE"))


def run_both(sides, fn):
    """fn(side) on every side at once; results in side order."""
    results = [None] * len(sides)
    errors = []

    def work(i):
        try:
            results[i] = fn(sides[i])
        except Exception as e:  # reported below, in the main thread
            errors.append((sides[i].name, e))

    threads = [threading.Thread(target=work, args=(i,))
               for i in range(len(sides))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise ImapError("%s: %s" % errors[0])
    return results


# ---- the comparison ----

class Stats:
    def __init__(self):
        self.messages = 0
        self.items = 0
        self.equal = 0
        self.known = {}      # name: differing items it explains
        self.known_items = 0
        self.new = []        # (source, item, ref, moat)
        self.errors = []     # (source, text)
        self.by_item = {}
        self.sources = set()
        self.repaired = 0    # messages also compared in repaired form

    def count(self, item, what):
        key = re.sub(r"\[[0-9.]+", "[n", item)
        cnt = self.by_item.setdefault(key, [0, 0, 0])
        cnt[what] += 1


class Plan:
    """What one message needs: the message itself on both servers, and
    when a known difference applies, the repaired forms (mime_known)."""

    def __init__(self, source, msg):
        self.source = source
        self.msg = msg
        view = mime_known.dovecot_view(msg)
        # moat also gets the message as Dovecot stored it
        self.moat_extra = view if view != mime_known.lf_to_crlf(msg) \
            else None
        self.subs, self.names = mime_known.repairs(view)
        # Dovecot also gets it with moat's readings written its way
        self.ref_extra = mime_known.apply_subs(view, self.subs) \
            if self.subs else None
        if self.moat_extra is not None:
            self.names.add("dovecot-drops-cr")
        self.answers = {}


def compare_item(item, ref_all, moat_all, msg):
    """The name of the known difference item shows, or None."""
    ref, moat = ref_all.get(item), moat_all.get(item)
    return mime_known.known_item(item, ref, moat, ref_all, moat_all,
                                 struct_of(moat_all), struct_of(ref_all),
                                 msg)


def literal8_as_literal(raw):
    """A repair may remove the NUL that made an answer a literal8."""
    return raw[1:] if raw.startswith(b"~{") else raw


def struct_of(answers):
    raw = answers.get("BODYSTRUCTURE")
    if raw is None:
        return None
    try:
        return parse_value(raw)[0]
    except (ValueError, IndexError):
        return None


def compare_plan(stats, plan, items):
    r, m = plan.answers["ref"], plan.answers["moat"]
    m_bs = struct_of(m)
    stats.messages += 1
    stats.sources.add(plan.source)
    for item, text in mime_known.consistency(m, m_bs):
        stats.new.append((plan.source, item + " (moat alone)", None,
                          text.encode()))
    repaired = plan.moat_extra is not None or plan.ref_extra is not None
    if repaired:
        stats.repaired += 1
        rr = plan.answers.get("ref_extra", r)
        mr = plan.answers.get("moat_extra", m)
        # the rewrites apply to what moat sent; BINARY checks decode
        # what moat really sent (a rewrite can change base64 text)
        mr_sent = mr
        mr = {k: literal8_as_literal(mime_known.apply_subs(v, plan.subs,
                                                           True))
              for k, v in mr.items()}
        rr = {k: literal8_as_literal(v) for k, v in rr.items()}
    for item in items:
        stats.items += 1
        if r.get(item) == m.get(item):
            stats.equal += 1
            stats.count(item, 0)
            continue
        name = compare_item(item, r, m, plan.msg)
        if name is None and repaired:
            # the difference must vanish once the known causes are
            # undone: then the message's known differences explain it
            if rr.get(item) == mr.get(item):
                name = sorted(plan.names)
            else:
                sub = compare_item(item, rr, mr_sent, plan.msg)
                if sub is not None:
                    name = sorted(plan.names | {sub})
                else:
                    item_r, ref_v, moat_v = item + " (repaired)", \
                        rr.get(item), mr.get(item)
        if name is not None:
            # an item explained by several known differences together
            # counts for each of them
            for n in ([name] if isinstance(name, str) else name):
                stats.known[n] = stats.known.get(n, 0) + 1
            stats.known_items += 1
            stats.count(item, 1)
            continue
        stats.count(item, 2)
        if repaired:
            stats.new.append((plan.source, item_r, ref_v, moat_v))
        else:
            stats.new.append((plan.source, item, r.get(item), m.get(item)))


def compare_batch(sides, batch, stats):
    """batch: [(source, message bytes)]."""
    ref, moat = sides
    plans = [Plan(src, msg) for src, msg in batch]
    # what each side gets: (plan, role, message)
    uploads = {"dovecot": [], "moat": []}
    for p in plans:
        uploads["dovecot"].append((p, "ref", p.msg))
        uploads["moat"].append((p, "moat", p.msg))
        if p.ref_extra is not None:
            uploads["dovecot"].append((p, "ref_extra", p.ref_extra))
        if p.moat_extra is not None:
            uploads["moat"].append((p, "moat_extra", p.moat_extra))
    uids = run_both(sides, lambda s: s.append(
        [u[2] for u in uploads[s.name]]))
    for side, side_uids in zip(sides, uids):
        for (p, role, _), uid in zip(uploads[side.name], side_uids):
            p.answers[role] = uid
    live = []
    for p in plans:
        errs = {k: v for k, v in p.answers.items() if isinstance(v, str)}
        if errs:
            if len(errs) != len(p.answers):
                stats.errors.append((p.source, "APPEND %r" % errs))
            continue
        live.append(p)
    todo = {"dovecot": [], "moat": []}
    for p in live:
        for role in list(p.answers):
            todo["dovecot" if role.startswith("ref") else "moat"].append(
                (p, role))
    structs = run_both(sides, lambda s: s.fetch(
        [(p.answers[role], [["BODYSTRUCTURE"]])
         for p, role in todo[s.name]]))
    paths = {}
    for side, answers in zip(sides, structs):
        for (p, role), ans in zip(todo[side.name], answers):
            bs = struct_of(ans)
            if bs is None:
                stats.errors.append((p.source, "%s: no BODYSTRUCTURE: %r" %
                                     (role, ans)))
                continue
            paths.setdefault(id(p), {}).update(part_paths(bs))
    groups = {id(p): section_items(paths.get(id(p), {})) for p in live}
    answers = run_both(sides, lambda s: s.fetch(
        [(p.answers[role], groups[id(p)]) for p, role in todo[s.name]]))
    for side, side_answers in zip(sides, answers):
        for (p, role), ans in zip(todo[side.name], side_answers):
            p.answers[role] = ans
    for p in live:
        items = [item_name(i) for g in groups[id(p)] for i in g]
        compare_plan(stats, p, items)
    run_both(sides, lambda s: s.expunge_all())


def corpus_messages(corpus):
    out = []
    for root, _, names in os.walk(corpus):
        for n in sorted(names):
            if n.endswith(".eml"):
                path = os.path.join(root, n)
                with open(path, "rb") as f:
                    data = f.read()
                if data:
                    out.append((os.path.relpath(path, corpus), data))
    out.sort()
    return out


def generated_messages(seed, count):
    return [("gen seed %d #%d [%s]" % (seed, i, " ".join(muts)), data)
            for i, (data, muts) in enumerate(mime_gen.messages(seed, count))]


def show(value, limit=300):
    if value is None:
        return "(missing)"
    return repr(value[:limit]) + ("... (%d bytes)" % len(value)
                                  if len(value) > limit else "")


def report(stats, out=sys.stdout, show_new=20, by_mutation=False,
           item_re=None):
    print("messages %d (%d also repaired), items %d: equal %d, known "
          "differences %d, new %d, errors %d" % (
              stats.messages, stats.repaired, stats.items, stats.equal,
              stats.known_items, len(stats.new), len(stats.errors)),
          file=out)
    for name, cnt in sorted(stats.known.items()):
        print("  known %-36s %6d" % (name, cnt), file=out)
    for key, (eq, kn, new) in sorted(stats.by_item.items()):
        print("  item %-24s equal %6d known %5d new %5d" % (key, eq, kn, new),
              file=out)
    if by_mutation:
        # which generator mutations the messages with new differences had
        bad = {src for src, _, _, _ in stats.new}
        counts = {}
        for src in stats.sources:
            m = re.search(r"\[(.*)\]$", src)
            for mut in (m.group(1).split() if m else ["(corpus)"]):
                c = counts.setdefault(mut, [0, 0])
                c[0] += 1
                c[1] += src in bad
        for mut, (total, nbad) in sorted(counts.items(),
                                         key=lambda kv: -kv[1][1] / kv[1][0]):
            print("  mutation %-32s %5d of %5d differ" % (mut, nbad, total),
                  file=out)
    for source, err in stats.errors[:show_new]:
        print("ERROR %s: %s" % (source, err), file=out)
    shown = [n for n in stats.new
             if item_re is None or re.search(item_re, n[1])]
    for source, item, ref, moat in shown[:show_new]:
        print("NEW %s %s\n  dovecot: %s\n  moat:    %s" %
              (source, item, show(ref), show(moat)), file=out)


def run(args, out=sys.stdout):
    sides = [Side("dovecot", args.ref_host, args.ref_port, args.ref_user,
                  args.ref_pass, args.mailbox),
             Side("moat", args.moat_host, args.moat_port, args.moat_user,
                  args.moat_pass, args.mailbox)]
    stats = Stats()
    todo = []
    if args.corpus:
        todo += corpus_messages(args.corpus)
    for seed in args.seed:
        todo += generated_messages(seed, args.count)
    if args.match:
        todo = [t for t in todo if args.match in t[0]]
    start = time.monotonic()
    for i in range(0, len(todo), BATCH):
        compare_batch(sides, todo[i:i + BATCH], stats)
    for s in sides:
        s.imap.close()
    print("%d messages in %.1f s" % (len(todo), time.monotonic() - start),
          file=out)
    report(stats, out, args.show, args.by_mutation, args.item)
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ref-host", default="127.0.0.1")
    ap.add_argument("--ref-port", type=int, required=True)
    ap.add_argument("--ref-user", default="test")
    ap.add_argument("--ref-pass", default="test")
    ap.add_argument("--moat-host", default="127.0.0.1")
    ap.add_argument("--moat-port", type=int, required=True)
    ap.add_argument("--moat-user", default="testuser1")
    ap.add_argument("--moat-pass", default="pass")
    ap.add_argument("--mailbox", default="mimediff")
    ap.add_argument("--corpus", help="also every .eml under this directory")
    ap.add_argument("--seed", type=int, action="append", default=[],
                    help="generator seed (repeatable)")
    ap.add_argument("--count", type=int, default=1000,
                    help="generated messages per seed")
    ap.add_argument("--match", help="only messages whose source has this")
    ap.add_argument("--show", type=int, default=20)
    ap.add_argument("--by-mutation", action="store_true",
                    help="count differing messages per generator mutation")
    ap.add_argument("--item", help="show only differences of items "
                    "matching this regular expression")
    args = ap.parse_args()
    if not args.seed and not args.corpus:
        args.seed = [random.randrange(1 << 30)]
    stats = run(args)
    return 1 if stats.new or stats.errors else 0


if __name__ == "__main__":
    sys.exit(main())
