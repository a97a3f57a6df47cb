"""BODY[HEADER.FIELDS (...)] from the mail cache (imap/imap-fetch-hdr.c).

The first FETCH of a field of a message reads the file and caches what the
header holds of it; later FETCHes of cached fields, in any combination and
order of names, are composed from the cache. The reference is always an
answer from the file: the same messages in a second mailbox whose fields
were never fetched before. That the cache really served is proved by
making the message files unreadable (mode 000: the imap process runs as
the mail user) while the answers stay the same."""

import os
import pathlib
import re
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# ../shared next to the main tree, ../../shared next to a worktree
CORPUS = next((p for p in (REPO / ".." / "shared" / "corpus" / "mime",
                           REPO / ".." / ".." / "shared" / "corpus" / "mime")
               if p.is_dir()), REPO / "no-corpus")

NAMES = ["From", "To", "Cc", "Subject", "References", "In-Reply-To",
         "Message-ID", "Received", "Content-Type", "X-Absent", "X-A"]
# Lists asked after every name was cached one by one: several names (in
# the header's order, not the list's), repeats, case, absent fields.
LISTS = ["Subject From", "Received To From Subject", "To Cc X-Absent",
         "From FROM from", "X-Absent", "message-id references in-reply-to",
         "X-A Received Subject"]

ODD = [
    # folded lines, a repeated field around another, space before a colon
    (b"Received: from a\r\n\tby b; Mon, 1 Jan 2024 00:00:00 +0000\r\n"
     b"X-A: one\r\nReceived: from c\r\n by d\r\n"
     b"Subject : spaced\r\nFrom: x@example.org\r\nX-A:two\r\n"
     b"To: y@example.org,\r\n    z@example.org\r\n\r\nbody\r\n"),
    # a continuation before the first field, a line without a colon
    (b" leading continuation\r\nFrom: a@example.org\r\nno colon here\r\n"
     b"\tcontinued\r\nSubject: after\r\n\r\nbody\r\n"),
    # LF only, and no body
    (b"From: lf@example.org\nSubject: lf only\n  folded\nX-A: 1\n\n"),
    # header without the blank line
    (b"From: end@example.org\r\nSubject: no blank line"),
]


def corpus_messages(limit=60):
    if not CORPUS.is_dir():
        return []
    files = sorted(CORPUS.rglob("*.eml"))
    step = max(1, len(files) // limit)
    return [f.read_bytes() for f in files[::step][:limit]]


def literal(line, name):
    m = re.search(re.escape(name) + rb" ~?\{(\d+)\}\r\n", line)
    assert m, (name, line[:300])
    return line[m.end():m.end() + int(m.group(1))]


def answers(c, mailbox_count, spec):
    """{seq: the section's bytes} of FETCH 1:* BODY.PEEK[HEADER.FIELDS (spec)]."""
    r = c.command(f"FETCH 1:* (BODY.PEEK[HEADER.FIELDS ({spec})])")
    assert r.ok, r
    out = {}
    for line in r.untagged:
        m = re.match(rb"^\* (\d+) FETCH \(", line)
        if m:
            out[int(m.group(1))] = literal(line, b"BODY[HEADER.FIELDS")
    assert sorted(out) == list(range(1, mailbox_count + 1)), r
    return out


def literal_fixed(line):
    m = re.search(rb"BODY\[HEADER\.FIELDS \([^)]*\)\](<\d+>)? ~?\{(\d+)\}\r\n", line)
    assert m, line[:300]
    return line[m.end():m.end() + int(m.group(2))]


def fetch_sections(c, count, spec, partial=""):
    r = c.command(f"FETCH 1:* (BODY.PEEK[HEADER.FIELDS ({spec})]{partial})")
    assert r.ok, r
    out = {}
    for line in r.untagged:
        m = re.match(rb"^\* (\d+) FETCH \(", line)
        if m:
            out[int(m.group(1))] = literal_fixed(line)
    assert sorted(out) == list(range(1, count + 1)), r
    return out


def folder_files(server, mailbox):
    cur = server.maildir("testuser1") / f".{mailbox}" / "cur"
    return [cur / n for n in os.listdir(cur)]


def set_mode(server, mailbox, mode):
    for p in folder_files(server, mailbox):
        os.chmod(p, mode)


def fill_two(server, msgs):
    c = server.login("testuser1")
    for box in ("ref", "cached"):
        assert c.command(f"CREATE {box}").ok
        for m in msgs:
            assert c.append(box, m).ok, box
    return c


def drop_file(server, mailbox, data, tag):
    md = server.maildir("testuser1") / f".{mailbox}"
    name = f"{int(time.time())}.M{time.monotonic_ns()}P{os.getpid()}.{tag}"
    (md / "tmp" / name).write_bytes(data)
    os.rename(md / "tmp" / name, md / "new" / name)
    server.chown_home(server.users["testuser1"])


def test_cached_fields_equal_the_file(moat_server):
    msgs = corpus_messages() + ODD
    c = fill_two(moat_server, msgs)
    # the LF-only message also as a file another tool stored as it is
    for box in ("ref", "cached"):
        drop_file(moat_server, box, ODD[2].replace(b"lf only", b"dropped"),
                  "lf")
    count = len(msgs) + 1
    assert c.command("SELECT cached").ok
    # each name once from the file: the cache learns every one
    single = {n: fetch_sections(c, count, n) for n in NAMES}
    set_mode(moat_server, "cached", 0)
    try:
        cached = {spec: fetch_sections(c, count, spec) for spec in LISTS}
        cached_partial = fetch_sections(c, count, LISTS[1], "<5.40>")
        again = {n: fetch_sections(c, count, n) for n in NAMES}
        # proof that the files are unreadable to the server
        r = c.command("FETCH 1 BODY.PEEK[TEXT]")
        assert not r.ok or b"BODY[TEXT] {" not in b"".join(r.untagged)
    finally:
        set_mode(moat_server, "cached", 0o600)
    assert again == single
    # the reference: the same lists answered from the files
    assert c.command("SELECT ref").ok
    for spec in LISTS:
        assert fetch_sections(c, count, spec) == cached[spec], spec
    assert fetch_sections(c, count, LISTS[1], "<5.40>") == cached_partial
    for n in NAMES:
        assert fetch_sections(c, count, n) == single[n], n


def test_cached_fields_after_flag_change_and_rewrite(moat_server):
    c = fill_two(moat_server, ODD[:2])
    assert c.command("SELECT cached").ok
    first = fetch_sections(c, 2, "From Subject X-A")
    # a flag change renames the files: the cache still answers, the same
    assert c.command("STORE 1:2 +FLAGS (\\Flagged $Seen2)").ok
    set_mode(moat_server, "cached", 0)
    try:
        assert fetch_sections(c, 2, "From Subject X-A") == first
    finally:
        set_mode(moat_server, "cached", 0o600)
    # another tool rewrites message 1: a new file (a new UID), the old gone
    [old] = [p for p in folder_files(moat_server, "cached")
             if b"spaced" in p.read_bytes()]
    os.unlink(old)
    drop_file(moat_server, "cached", ODD[0].replace(b"spaced", b"rewritten"),
              "rw")
    r = c.command("NOOP")
    assert r.ok, r
    assert c.command("EXPUNGE").ok
    got = fetch_sections(c, 2, "From Subject X-A")
    texts = sorted(got.values())
    assert any(b"Subject : rewritten" in t for t in texts), texts
    assert not any(b"spaced" in t for t in texts), texts
    assert first[2] in texts
