"""FETCH PREVIEW (RFC 8970): the examples of section 5, the text rules of
3.3 (UTF-8, decoded, at most 256 characters: moat keeps to the SHOULD of
200), the empty preview of 3.2, LAZY (4.1: NIL only with LAZY, and only
while the preview is not in the cache), the cache (a session whose
message files are unreadable still gets every preview it computed once),
the syntax errors, and a differential run against a private Dovecot
over real mail (doc/extensions.md lists the differences)."""

import glob
import os
import random
import time

import pytest

from moatimap import ImapClient
from test_mime_dovecot import CORPUS, dovecot  # noqa: F401 (a fixture)

LOREM = (b"Lorem ipsum dolor sit amet, consectetur adipiscing elit.\r\n"
         b"Curabitur aliquam turpis et ante dictum, et pulvinar dui congue.\r\n"
         b"Maecenas hendrerit, lorem non imperdiet pellentesque, nulla\r\n"
         b"ligula nullam vitae elit, sed do eiusmod tempor incididunt ut\r\n"
         b"labore et dolore magna aliqua.\r\n")
MESSAGES = [
    b"Subject: lorem\r\nFrom: a@example.org\r\n\r\n" + LOREM,
    b"Subject: empty\r\nFrom: b@example.org\r\nMIME-Version: 1.0\r\n"
    b"Content-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    b"iVBORw0KGgo=\r\n",
    b"Subject: qp\r\nFrom: foo@example.org\r\nMIME-Version: 1.0\r\n"
    b"Content-Type: text/plain; charset=iso-8859-1\r\n"
    b"Content-Transfer-Encoding: quoted-printable\r\n\r\n"
    b"Message data from message 3 =E9t=E9.\r\n",
    b"Subject: html\r\nFrom: foo@example.org\r\nMIME-Version: 1.0\r\n"
    b"Content-Type: multipart/alternative; boundary=zz\r\n\r\n--zz\r\n"
    b"Content-Type: text/html; charset=utf-8\r\n"
    b"Content-Transfer-Encoding: base64\r\n\r\n"
    b"PGh0bWw+PGJvZHk+PHA+TWVzc2FnZSA0PC9wPjxwPnByZXZpZXc8L3A+PC9ib2R5PjwvaHRtbD4=\r\n"
    b"--zz--\r\n",
]


def ok(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    return r


def previews(r):
    return {seq: items.get("PREVIEW", "missing")
            for seq, items in r.fetches().items()}


@pytest.fixture
def box(moat_server):
    c = moat_server.login()
    for m in MESSAGES:
        assert c.append("INBOX", m).ok
    ok(c, "SELECT INBOX")
    return c


def test_capability(moat_server):
    c = moat_server.login()
    assert b"PREVIEW" in ok(c, "CAPABILITY").untagged[0].split()


def test_example_1_preview_without_lazy(box):
    """RFC 8970 5, example 1: the text as a string (a literal here, as in
    the RFC's example, only when it has to be), at most 200 characters."""
    r = ok(box, "FETCH 1 (RFC822.SIZE PREVIEW)")
    f = r.fetches()[1]
    assert int(f["RFC822.SIZE"]) == len(MESSAGES[0])
    text = f["PREVIEW"]
    assert text.startswith(b"Lorem ipsum dolor sit amet, consectetur "
                           b"adipiscing elit. Curabitur aliquam")
    assert b"\r" not in text and b"\n" not in text and b"  " not in text
    assert len(text.decode()) <= 200 and not text.endswith(b" ")


def test_example_2_lazy_then_background(box):
    """RFC 8970 5, example 2: with LAZY, previews not computed yet are
    NIL, an empty one is "" (once computed); FETCH without LAZY computes
    them, and a LAZY FETCH then has them. 4.1: the ones a LAZY FETCH
    missed are computed afterwards, so a later LAZY FETCH has them too
    (waited for, without a command in between to run them)."""
    r = ok(box, "FETCH 1:4 (ENVELOPE PREVIEW (LAZY))")
    assert previews(r) == {1: None, 2: None, 3: None, 4: None}
    assert all(b"ENVELOPE" in line for line in r.untagged)
    r = ok(box, "FETCH 2:4 (PREVIEW)")
    got = previews(r)
    assert got[2] == b""      # nothing to preview (RFC 8970 3.2)
    assert got[3] == "Message data from message 3 été.".encode()
    assert got[4] == b"Message 4 preview"
    deadline = time.monotonic() + 10
    while True:
        r = ok(box, "FETCH 1:4 (PREVIEW (LAZY) ENVELOPE)")
        got = previews(r)
        if got[1] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.05)   # polling for the background computation
    # the text a FETCH without LAZY gives (3.3: 200 characters)
    assert got[1] == b" ".join(LOREM.split())[:200].rstrip()
    assert got[2] == b"" and got[4] == b"Message 4 preview"
    assert got[3] == "Message data from message 3 été.".encode()


def test_lazy_computed_while_idling(box, moat_server):
    """4.1 with IDLE, as clients use it: the session that missed idles,
    and another session's LAZY FETCH soon finds the previews (the mail
    cache is shared)."""
    r = ok(box, "FETCH 1,3 (PREVIEW (LAZY))")
    assert previews(r) == {1: None, 3: None}
    tag = box.next_tag()
    box.send(f"{tag} IDLE\r\n")
    assert box.read_line().startswith(b"+ ")
    other = moat_server.login()
    ok(other, "EXAMINE INBOX")
    deadline = time.monotonic() + 10
    while True:
        got = previews(ok(other, "FETCH 1,3 (PREVIEW (LAZY))"))
        if None not in got.values() or time.monotonic() > deadline:
            break
        time.sleep(0.05)   # polling for the background computation
    assert got[3] == "Message data from message 3 été.".encode(), got
    assert got[1] == b" ".join(LOREM.split())[:200].rstrip()
    box.send("DONE\r\n")
    assert box.read_tagged(tag).ok


def test_example_3_searchres(box):
    """RFC 8970 5, example 3: PREVIEW (LAZY) of a saved search result,
    then the missing one by UID."""
    box.send("C2 SEARCH RETURN (SAVE) FROM \"FOO\"\r\n"
             "C3 FETCH $ (UID PREVIEW (LAZY))\r\n")
    assert box.read_tagged("C2").ok
    r = box.read_tagged("C3")
    assert r.ok, r
    got = r.fetches()
    assert sorted(got) == [3, 4]
    assert all(f["PREVIEW"] is None for f in got.values())
    r = ok(box, f"UID FETCH {got[4]['UID']} (PREVIEW)")
    assert r.fetches()[4]["PREVIEW"] == b"Message 4 preview"


def test_never_nil_without_lazy(box):
    r = ok(box, "FETCH 1:* PREVIEW")
    assert all(v is not None and v != "missing"
               for v in previews(r).values())
    # asked both ways in one FETCH: not lazy, answered once
    r = ok(box, "FETCH 2:4 (PREVIEW (LAZY) PREVIEW)")
    assert all(line.count(b"PREVIEW") == 1 for line in r.untagged)
    assert previews(r)[4] == b"Message 4 preview"


def test_length_and_utf8_boundary(moat_server):
    """RFC 8970 3.3: UTF-8, not content-transfer-encoded, never more
    than 256 characters; cut on a character boundary."""
    c = moat_server.login()
    body = ("€ " * 50 + "ü" * 400).encode()
    msg = (b"Subject: long\r\nMIME-Version: 1.0\r\n"
           b"Content-Type: text/plain; charset=utf-8\r\n"
           b"Content-Transfer-Encoding: 8bit\r\n\r\n" + body + b"\r\n")
    assert c.append("INBOX", msg).ok
    ok(c, "SELECT INBOX")
    text = ok(c, "FETCH 1 PREVIEW").fetches()[1]["PREVIEW"]
    decoded = text.decode("utf-8")   # valid UTF-8: it was cut whole
    assert len(decoded) <= 200
    assert decoded.startswith("€ € ") and decoded.endswith("ü")


def test_from_the_cache(moat_server, box):
    """Once computed, previews come from the cache: another session gets
    them (LAZY included) while the message files cannot be read."""
    first = previews(ok(box, "FETCH 1:* (PREVIEW)"))
    cur = moat_server.maildir("testuser1") / "cur"
    paths = [cur / n for n in os.listdir(cur)]
    for p in paths:
        os.chmod(p, 0)
    try:
        c2 = moat_server.login()
        ok(c2, "EXAMINE INBOX")
        assert previews(ok(c2, "FETCH 1:* (PREVIEW)")) == first
        assert previews(ok(c2, "FETCH 1:* (PREVIEW (LAZY))")) == first
        # proof the files are unreadable to the server
        r = c2.command("FETCH 1 BODY.PEEK[]")
        assert b"Lorem" not in b"".join(r.untagged)
    finally:
        for p in paths:
            os.chmod(p, 0o600)


@pytest.mark.parametrize("items", [
    "(PREVIEW (FOO))", "(PREVIEW ())", "(PREVIEW (LAZY FOO))",
    "(PREVIEW LAZY)", "(PREVIEW (\"LAZY\"))", "PREVIEW.LAZY",
    "(PREVIEW (LAZY)", "(PREVIEW ((LAZY)))",
])
def test_syntax_errors(box, items):
    """RFC 8970 6: "PREVIEW" [SP "(" preview-mod *(SP preview-mod) ")"],
    LAZY the only modifier: anything else is a BAD, with no data."""
    r = box.command(f"FETCH 1 {items}")
    assert r.status == "BAD", r
    assert not r.untagged, r
    ok(box, "NOOP")


def normalized(text):
    """Without any whitespace (U+00A0 too), for comparing the words."""
    if text is None:
        return None
    return "".join(text.decode("utf-8", "replace").split())


def test_against_dovecot(moat_server, dovecot):  # noqa: F811
    """The same real mail in moat and a private Dovecot 2.3: moat's
    preview holds the same words as Dovecot's, or a prefix of them (moat
    stops at a signature and never ends in a cut-off space), for nearly
    every message. What differs is printed and counted; the known causes
    are in doc/extensions.md."""
    files = sorted(glob.glob(f"{CORPUS}/**/*.eml", recursive=True))
    if not files:
        pytest.skip("the corpus is not there")
    seed = random.randrange(10**6)
    print(f"seed {seed}")
    sample = random.Random(seed).sample(files, min(120, len(files)))
    d = ImapClient("127.0.0.1", dovecot)
    d.read_greeting()
    assert d.command("LOGIN test test").ok
    m = moat_server.login()
    for path in sample:
        with open(path, "rb") as f:
            data = f.read().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        assert d.append("INBOX", data).ok
        assert m.append("INBOX", data).ok
    ok(d, "SELECT INBOX")
    ok(m, "SELECT INBOX")
    dv = previews(ok(d, "FETCH 1:* (PREVIEW)"))
    mo = previews(ok(m, "FETCH 1:* (PREVIEW)"))
    assert len(dv) == len(mo) == len(sample)
    same = prefix = 0
    differ = []
    for seq, path in enumerate(sample, 1):
        a, b = normalized(dv[seq]), normalized(mo[seq])
        if a == b:
            same += 1
        elif a.startswith(b) or b.startswith(a):
            prefix += 1
        else:
            differ.append((path, dv[seq], mo[seq]))
    for path, a, b in differ:
        print(f"{path}\n  dovecot: {a!r}\n  moat:    {b!r}")
    print(f"same {same}, prefix {prefix}, differ {len(differ)}")
    assert len(differ) <= len(sample) // 10, differ
