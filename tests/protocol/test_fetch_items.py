"""FETCH data items (RFC 3501 6.4.5 / 7.4.2, RFC 9051 6.4.5 / 7.5.2) and
BINARY (RFC 3516): ENVELOPE, BODY, BODYSTRUCTURE, every BODY[section] form
with <partial>, RFC822.*, BINARY[]/BINARY.PEEK[]/BINARY.SIZE[], the macros,
\\Seen, and the error paths. Expected strings are Dovecot 2.3's answers for
the same messages (tests/compare/compare-dovecot-mime.sh --serve)."""

import base64
import pathlib
import re

import pytest

from moatserver import REPO

CORPUS = pathlib.Path(REPO) / ".." / "shared" / "corpus" / "mime"

INNER = (b"From: inner@example.org\r\nSubject: inner\r\n"
         b"Content-Type: text/plain\r\n\r\ninner body\r\n")
HEADER = (b"From: =?ISO-8859-1?Q?Ren=E9e?= <renee@example.org>\r\n"
          b"To: a@example.org, \"Bob B\" <bob@example.org>\r\n"
          b"Subject: =?UTF-8?Q?caf=C3=A9?= test\r\n"
          b"X-Long: one\r\n two\r\n"
          b"MIME-Version: 1.0\r\n"
          b"Content-Type: multipart/mixed; boundary=\"XX\"\r\n"
          b"\r\n")
MIME1 = (b"Content-Type: text/plain; charset=utf-8\r\n"
         b"Content-Transfer-Encoding: quoted-printable\r\n\r\n")
BODY1 = b"Gr=C3=BC=C3=9Fe=\r\n soft  \r\nline=00end"
MIME2 = (b"Content-Type: application/octet-stream; name*0=\"long\"; "
         b"name*1=\"name.bin\"\r\nContent-Transfer-Encoding: base64\r\n"
         b"Content-Disposition: attachment; filename*=utf-8''caf%C3%A9.bin\r\n"
         b"\r\n")
BODY2 = b"AAECAwQ="
MIME3 = b"Content-Type: message/rfc822\r\n\r\n"
MIME4 = (b"Content-Type: text/plain\r\n"
         b"Content-Transfer-Encoding: x-uuencode\r\n\r\n")
BODY4 = b"begin"
TEXT = (b"preamble\r\n--XX\r\n" + MIME1 + BODY1 + b"\r\n--XX\r\n" + MIME2 +
        BODY2 + b"\r\n--XX\r\n" + MIME3 + INNER + b"--XX\r\n" + MIME4 +
        BODY4 + b"\r\n--XX--\r\n")
MSG = HEADER + TEXT

ENVELOPE = (b'ENVELOPE (NIL "=?UTF-8?Q?caf=C3=A9?= test" '
            b'(("=?ISO-8859-1?Q?Ren=E9e?=" NIL "renee" "example.org")) '
            b'(("=?ISO-8859-1?Q?Ren=E9e?=" NIL "renee" "example.org")) '
            b'(("=?ISO-8859-1?Q?Ren=E9e?=" NIL "renee" "example.org")) '
            b'((NIL NIL "a" "example.org")("Bob B" NIL "bob" "example.org")) '
            b'NIL NIL NIL NIL)')
INNER_ENV = (b'(NIL "inner" ((NIL NIL "inner" "example.org")) '
             b'((NIL NIL "inner" "example.org")) '
             b'((NIL NIL "inner" "example.org")) NIL NIL NIL NIL NIL)')
BODY = (b'BODY (("text" "plain" ("charset" "utf-8") NIL NIL '
        b'"quoted-printable" 37 2)("application" "octet-stream" '
        b'("name" "longname.bin") NIL NIL "base64" 8)("message" "rfc822" '
        b'NIL NIL NIL "7bit" 79 ' + INNER_ENV + b' ("text" "plain" '
        b'("charset" "us-ascii") NIL NIL "7bit" 10 0) 4)("text" "plain" '
        b'("charset" "us-ascii") NIL NIL "x-uuencode" 5 0) "mixed")')
BODYSTRUCTURE = (
    b'BODYSTRUCTURE (("text" "plain" ("charset" "utf-8") NIL NIL '
    b'"quoted-printable" 37 2 NIL NIL NIL NIL)("application" "octet-stream" '
    b'("name" "longname.bin") NIL NIL "base64" 8 NIL ("attachment" '
    b'("filename*" "utf-8\'\'caf%C3%A9.bin")) NIL NIL)("message" "rfc822" '
    b'NIL NIL NIL "7bit" 79 ' + INNER_ENV + b' ("text" "plain" '
    b'("charset" "us-ascii") NIL NIL "7bit" 10 0 NIL NIL NIL NIL) 4 NIL NIL '
    b'NIL NIL)("text" "plain" ("charset" "us-ascii") NIL NIL "x-uuencode" '
    b'5 0 NIL NIL NIL NIL) "mixed" ("boundary" "XX") NIL NIL NIL)')

PLAIN = (b"From: x@example.org\r\nSubject: plain\r\n\r\n"
         b"line one\r\nline two\r\n")


def lit(name, data, literal8=False):
    """One item as sent: NAME {n}CRLF data."""
    return (name.encode() + b" " + (b"~" if literal8 else b"") +
            b"{%d}\r\n" % len(data) + data)


@pytest.fixture
def box(moat_server):
    """INBOX: 1 = MSG (CRLF), 2 = MSG with bare LF line ends (stored as
    received), 3 = PLAIN. All unseen."""
    c = moat_server.login("testuser1")
    for m in (MSG, MSG.replace(b"\r\n", b"\n"), PLAIN):
        assert c.append("INBOX", m).ok
    # the first SELECT takes \Recent (RFC 3501 2.3.2): the tests want
    # the flags without it
    assert c.command("SELECT INBOX").ok
    assert c.command("SELECT INBOX").ok
    return moat_server, c


def fetch_line(c, cmd):
    r = c.command(cmd)
    assert r.ok, (cmd, r)
    lines = [l for l in r.untagged if re.match(rb"\* \d+ FETCH ", l)]
    assert len(lines) == 1, (cmd, r.untagged)
    return lines[0]


def fetch_items(c, seq, items):
    """The bytes between "(" and ")" of the answer."""
    line = fetch_line(c, f"FETCH {seq} ({items})")
    prefix = b"* %d FETCH (" % seq
    assert line.startswith(prefix) and line.endswith(b")"), line
    return line[len(prefix):-1]


def flags_of(c, seq):
    line = fetch_line(c, f"FETCH {seq} FLAGS")
    return re.search(rb"FLAGS \(([^)]*)\)", line).group(1).split()


# ---- ENVELOPE, BODY, BODYSTRUCTURE, macros --------------------------------

@pytest.mark.parametrize("seq", [1, 2])
def test_structure_exact(box, seq):
    server, c = box
    got = fetch_items(c, seq, "ENVELOPE BODY BODYSTRUCTURE RFC822.SIZE")
    assert got == (ENVELOPE + b" " + BODY + b" " + BODYSTRUCTURE +
                   b" RFC822.SIZE %d" % len(MSG))


def test_macros(box):
    server, c = box
    fast = fetch_items(c, 1, "FAST")
    assert re.fullmatch(rb'FLAGS \(\) INTERNALDATE "[^"]+" RFC822\.SIZE 763',
                        fast), fast
    assert len(MSG) == 763
    line = fetch_line(c, "FETCH 1 ALL")
    assert line.endswith(b" RFC822.SIZE 763 " + ENVELOPE + b")"), line
    line = fetch_line(c, "FETCH 1 FULL")
    assert line.endswith(b" RFC822.SIZE 763 " + ENVELOPE + b" " + BODY + b")")
    # several items parse the message once, and asking twice answers once
    got = fetch_items(c, 3, "BODY BODY ENVELOPE")
    assert got.count(b"BODY (") == 1 and got.count(b"ENVELOPE") == 1
    assert flags_of(c, 1) == []


# ---- sections -----------------------------------------------------------------

SECTIONS = {
    "": MSG,
    "HEADER": HEADER,
    "TEXT": TEXT,
    "1": BODY1,
    "1.MIME": MIME1,
    "2": BODY2,
    "2.MIME": MIME2,
    # the CRLF before a boundary belongs to the boundary
    "3": INNER[:-2],
    "3.MIME": MIME3,
    "3.HEADER": INNER.split(b"\r\n\r\n")[0] + b"\r\n\r\n",
    "3.TEXT": b"inner body",
    "3.1": b"inner body",
    "3.1.MIME": INNER.split(b"\r\n\r\n")[0] + b"\r\n\r\n",
    "4": BODY4,
    "4.MIME": MIME4,
    # no such part, or HEADER/TEXT of a part that is no message: empty
    "5": b"",
    "1.2.3": b"",
    "1.HEADER": b"",
    "1.TEXT": b"",
}


@pytest.mark.parametrize("seq", [1, 2])
def test_every_section(box, seq):
    server, c = box
    for section, data in SECTIONS.items():
        got = fetch_items(c, seq, f"BODY.PEEK[{section}]")
        assert got == lit(f"BODY[{section}]", data), (section, got)
    assert flags_of(c, seq) == []


def test_rfc822_items(box):
    server, c = box
    got = fetch_items(c, 1, "RFC822.HEADER")
    assert got == lit("RFC822.HEADER", HEADER)
    assert flags_of(c, 1) == []          # RFC822.HEADER is a peek
    got = fetch_items(c, 1, "RFC822.TEXT")
    assert got == b"FLAGS (\\Seen) " + lit("RFC822.TEXT", TEXT)
    got = fetch_items(c, 2, "RFC822")
    assert got == b"FLAGS (\\Seen) " + lit("RFC822", MSG)


def test_header_fields(box):
    server, c = box
    got = fetch_items(c, 1, 'BODY.PEEK[HEADER.FIELDS (from "To" x-long)]')
    want = HEADER.split(b"Subject")[0] + b"X-Long: one\r\n two\r\n\r\n"
    # the list echoes as the client wrote it, upper-cased (as Dovecot)
    assert got == lit('BODY[HEADER.FIELDS (FROM "TO" X-LONG)]', want)
    got = fetch_items(c, 2, "BODY.PEEK[HEADER.FIELDS.NOT (From to X-LONG)]")
    want = (b"Subject: =?UTF-8?Q?caf=C3=A9?= test\r\nMIME-Version: 1.0\r\n"
            b"Content-Type: multipart/mixed; boundary=\"XX\"\r\n\r\n")
    assert got == lit("BODY[HEADER.FIELDS.NOT (FROM TO X-LONG)]", want)
    got = fetch_items(c, 1, "BODY.PEEK[HEADER.FIELDS (nonexistent)]")
    assert got == lit("BODY[HEADER.FIELDS (NONEXISTENT)]", b"\r\n")
    got = fetch_items(c, 1, "BODY.PEEK[3.HEADER.FIELDS (SUBJECT)]")
    assert got == lit("BODY[3.HEADER.FIELDS (SUBJECT)]",
                      b"Subject: inner\r\n\r\n")
    # a partial of filtered data counts the filtered bytes
    got = fetch_items(c, 1, "BODY.PEEK[HEADER.FIELDS (TO)]<4.10>")
    assert got == lit("BODY[HEADER.FIELDS (TO)]<4>",
                      b"To: a@example.org, \"Bob B\""[4:14])


@pytest.mark.parametrize("seq", [1, 2])
def test_partials(box, seq):
    server, c = box
    cases = [("", 0, 10), ("", 700, 100), ("", 763, 5), ("", 9999, 5),
             ("TEXT", 5, 10), ("HEADER", 50, 1), ("1", 3, 1000),
             ("3", 10, 20), ("3.TEXT", 0, 4), ("3.MIME", 2, 5)]
    for section, start, count in cases:
        got = fetch_items(c, seq, f"BODY.PEEK[{section}]<{start}.{count}>")
        data = SECTIONS[section][start:start + count]
        assert got == lit(f"BODY[{section}]<{start}>", data), (section, got)


def test_body_sets_seen(box):
    server, c = box
    got = fetch_items(c, 1, "BODY[TEXT]<5.10>")
    # \Seen changed: the new FLAGS come unasked, before the item
    assert got == b"FLAGS (\\Seen) " + lit("BODY[TEXT]<5>", TEXT[5:15])
    assert flags_of(c, 1) == [b"\\Seen"]
    got = fetch_items(c, 1, "BODY[1.MIME]")
    assert got == lit("BODY[1.MIME]", MIME1)   # already seen: no FLAGS
    # FLAGS asked for: not sent twice
    got = fetch_items(c, 3, "FLAGS BODY[]")
    assert got == b"FLAGS (\\Seen) " + lit("BODY[]", PLAIN)


def test_examine_does_not_set_seen(box):
    server, c = box
    assert c.command("EXAMINE INBOX").ok
    got = fetch_items(c, 1, "BODY[1]")
    assert got == lit("BODY[1]", BODY1)
    assert flags_of(c, 1) == []


# ---- BINARY (RFC 3516) --------------------------------------------------------

QP_DECODED = "Grüße".encode() + b" soft\r\nline\0end"


@pytest.mark.parametrize("seq", [1, 2])
def test_binary(box, seq):
    server, c = box
    got = fetch_items(c, seq, "BINARY.PEEK[1] BINARY.SIZE[1]")
    # decoded data goes as literal8 (NUL inside, and decoded, as Dovecot)
    assert got == (lit("BINARY[1]", QP_DECODED, literal8=True) +
                   b" BINARY.SIZE[1] %d" % len(QP_DECODED))
    got = fetch_items(c, seq, "BINARY.PEEK[2] BINARY.SIZE[2]")
    assert got == (lit("BINARY[2]", bytes(range(5)), literal8=True) +
                   b" BINARY.SIZE[2] 5")
    got = fetch_items(c, seq, "BINARY.PEEK[1]<1.4>")
    assert got == lit("BINARY[1]<1>", QP_DECODED[1:5], literal8=True)
    # 7bit parts and composite parts are sent as they are
    got = fetch_items(c, seq, "BINARY.PEEK[3.1] BINARY.SIZE[3]")
    assert got == (lit("BINARY[3.1]", b"inner body") +
                   b" BINARY.SIZE[3] %d" % (len(INNER) - 2))
    got = fetch_items(c, seq, "BINARY.PEEK[9] BINARY.SIZE[9]")
    assert got == lit("BINARY[9]", b"") + b" BINARY.SIZE[9] 0"
    assert flags_of(c, seq) == []
    got = fetch_items(c, seq, "BINARY[2]")
    assert got == b"FLAGS (\\Seen) " + lit("BINARY[2]", bytes(range(5)),
                                            literal8=True)


def test_binary_unknown_cte(box):
    server, c = box
    for items in ("BINARY[4]", "BINARY.PEEK[4]", "BINARY.SIZE[4]",
                  "(BINARY[1] BINARY[4])"):
        r = c.command(f"FETCH 1 {items}")
        assert r.status == "NO" and r.code == "UNKNOWN-CTE", (items, r)
        assert not [l for l in r.untagged if b"FETCH" in l], r
    # nothing was read, so nothing became \Seen
    assert flags_of(c, 1) == []
    # BODY[4] is fine: no decoding asked for
    assert fetch_items(c, 1, "BODY.PEEK[4]") == lit("BODY[4]", BODY4)
    # other messages of the set stop too; the server stays usable
    r = c.command("FETCH 1:3 BINARY.PEEK[4]")
    assert r.status == "NO" and r.code == "UNKNOWN-CTE", r
    assert c.command("NOOP").ok


def test_capability_binary(box):
    server, c = box
    r = c.command("CAPABILITY")
    assert b" BINARY" in r.untagged[0], r


# ---- syntax errors ------------------------------------------------------------

@pytest.mark.parametrize("item", [
    "BODY[HEADER.FIELDS ()]", "BODY[HEADER.FIELDS]", "BODY[HEADER.FIELDS (A]",
    "BODY[HEADER.FIELDS (A)", "BODY[HEADER.FIELDS (A) ]", "BODY[MIME]",
    "BODY[1.FOO]", "BODY[FOO]", "BODY[1.]", "BODY[HEADER]x", "BODY[TEXT]<0.0>",
    "BODY[TEXT]<a.5>", "BODY[TEXT]<5>", "BODY.PEEK", "BODY[1.MIME.TEXT]",
    "BINARY[1.MIME]", "BINARY[HEADER]", "BINARY.SIZE[1]<0.5>", "BINARY",
    "BINARY.SIZE", "ENVELOPES", "BODY[HEADER.FIELDS (A (B))]",
])
def test_bad_syntax(box, item):
    server, c = box
    r = c.command(f"FETCH 1 ({item})")
    assert r.status == "BAD", (item, r)
    assert flags_of(c, 1) == []


# ---- corpus: consistency on real messages ------------------------------------

def corpus_files(limit):
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    files = sorted(CORPUS.rglob("*.eml"))
    step = max(1, len(files) // limit)
    return files[::step][:limit]


def crlf(data):
    return re.sub(rb"(?<!\r)\n", b"\r\n", data)


def literal_of(got, name):
    m = re.search(re.escape(name.encode()) + rb" ~?\{(\d+)\}\r\n", got)
    assert m, (name, got[:300])
    return got[m.end():m.end() + int(m.group(1))]


def leaf_sections(bs, prefix="", out=None):
    """Leaf part numbers from a parsed BODYSTRUCTURE (nested lists)."""
    out = [] if out is None else out
    if isinstance(bs[0], list):
        for i, sub in enumerate([s for s in bs if isinstance(s, list)], 1):
            leaf_sections(sub, f"{prefix}{i}.", out)
    elif not (isinstance(bs[0], bytes) and bs[0].lower() == b"message"):
        out.append((prefix[:-1] or "1", bs))
    return out


def test_corpus_consistency(moat_server):
    """For corpus messages stored as they are (LF or CRLF): BODY[] is the
    CRLF form, HEADER + TEXT is BODY[], partials are slices of it,
    BINARY.SIZE is the literal's size, and BINARY of a base64 part is
    the part's BODY decoded."""
    from moatimap import parse_value
    files = corpus_files(120)
    c = moat_server.login("testuser1")
    assert c.command("CREATE corpus").ok
    for f in files:
        assert c.append("corpus", f.read_bytes()).ok
    assert c.command("SELECT corpus").ok
    for seq, f in enumerate(files, 1):
        want = crlf(f.read_bytes())
        got = fetch_items(c, seq, "BODY.PEEK[] BODY.PEEK[HEADER] "
                          "BODY.PEEK[TEXT] BODY.PEEK[]<17.300>")
        full = literal_of(got, "BODY[]")
        assert full == want, f
        assert literal_of(got, "BODY[HEADER]") + \
            literal_of(got, "BODY[TEXT]") == full, f
        assert literal_of(got, "BODY[]<17>") == full[17:317], f
        line = fetch_line(c, f"FETCH {seq} BODYSTRUCTURE")
        bs, _ = parse_value(line, line.index(b"BODYSTRUCTURE ") + 14)
        for section, part in leaf_sections(bs)[:20]:
            r = c.command(f"FETCH {seq} (BODY.PEEK[{section}] "
                          f"BINARY.PEEK[{section}] BINARY.SIZE[{section}])")
            if r.status == "NO" and r.code == "UNKNOWN-CTE":
                continue
            assert r.ok and len(r.untagged) == 1, (f, section, r)
            got = r.untagged[0]
            raw = literal_of(got, f"BODY[{section}]")
            binary = literal_of(got, f"BINARY[{section}]")
            size = int(re.search(rb"BINARY\.SIZE\[[0-9.]+\] (\d+)",
                                 got).group(1))
            assert size == len(binary), (f, section)
            cte = part[5] if len(part) > 5 else None
            if isinstance(cte, bytes) and cte.lower() == b"base64":
                clean = re.sub(rb"[^A-Za-z0-9+/]", b"", raw)
                clean = clean[:len(clean) - len(clean) % 4]
                assert binary.startswith(base64.b64decode(clean)), \
                    (f, section)
            elif not isinstance(cte, bytes) or cte.lower() in (
                    b"7bit", b"8bit", b"binary"):
                assert binary == raw, (f, section)


# ---- odd messages --------------------------------------------------------------

def test_nul_and_header_only(moat_server):
    """NUL in a BODY literal goes as 0x80 (RFC 3501 4.3 forbids NUL in a
    literal; Dovecot does the same); BINARY keeps it, in a literal8. A
    message that is all header (no blank line, no final CRLF) keeps its
    last line and gets no blank line from HEADER.FIELDS.NOT, but one from
    HEADER.FIELDS (as Dovecot)."""
    c = moat_server.login("testuser1")
    nul = b"Subject: nul\r\n\r\nab\0cd\r\n"
    only = b"Subject: s\r\nTo: t@example.org\r\nX-Last: no newline"
    for m in (nul, only):
        assert c.append("INBOX", m).ok
    assert c.command("SELECT INBOX").ok
    assert fetch_items(c, 1, "BODY.PEEK[TEXT]") == \
        lit("BODY[TEXT]", b"ab\x80cd\r\n")
    assert fetch_items(c, 1, "BINARY.PEEK[1] BINARY.SIZE[1]") == \
        lit("BINARY[1]", b"ab\0cd\r\n", literal8=True) + b" BINARY.SIZE[1] 7"
    assert fetch_items(c, 2, "BODY.PEEK[HEADER] BODY.PEEK[TEXT]") == \
        lit("BODY[HEADER]", only) + b" " + lit("BODY[TEXT]", b"")
    assert fetch_items(c, 2, "BODY.PEEK[HEADER.FIELDS.NOT (TO)]") == \
        lit("BODY[HEADER.FIELDS.NOT (TO)]",
            b"Subject: s\r\nX-Last: no newline")
    assert fetch_items(c, 2, "BODY.PEEK[HEADER.FIELDS (TO)]") == \
        lit("BODY[HEADER.FIELDS (TO)]", b"To: t@example.org\r\n\r\n")


def imap_hwm_kib(server):
    pids = server.wait_children("imap", 1)
    from moatserver import proc_status
    return int(proc_status(pids[0])["VmHWM"].split()[0])


def test_big_message_streams(moat_server):
    """A 27 MB message: sections and BINARY are streamed from the file,
    so the imap process does not grow by the message's size."""
    raw = bytes(range(256)) * (20 * 1024 * 1024 // 256)
    enc = base64.encodebytes(raw).replace(b"\n", b"\r\n")
    msg = (b"From: big@example.org\r\nSubject: big\r\nMIME-Version: 1.0\r\n"
           b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
           b"Content-Type: text/plain\r\n\r\nhello\r\n--b\r\n"
           b"Content-Type: application/octet-stream\r\n"
           b"Content-Transfer-Encoding: base64\r\n\r\n" + enc +
           b"\r\n--b--\r\n")
    c = moat_server.login("testuser1")
    assert c.append("INBOX", msg).ok
    assert c.command("SELECT INBOX").ok
    base = imap_hwm_kib(moat_server)
    got = fetch_items(c, 1, "BINARY.SIZE[2] BODY.PEEK[2]<1000000.100> "
                      "BINARY.PEEK[2]<15000000.300> ENVELOPE")
    assert got.startswith(b"BINARY.SIZE[2] %d " % len(raw)), got[:100]
    assert literal_of(got, "BODY[2]<1000000>") == enc[1000000:1000100]
    assert literal_of(got, "BINARY[2]<15000000>") == raw[15000000:15000300]
    got = fetch_items(c, 1, "BINARY.PEEK[2]")
    assert literal_of(got, "BINARY[2]") == raw
    got = fetch_items(c, 1, "BODY.PEEK[]")
    assert literal_of(got, "BODY[]") == msg
    grown = imap_hwm_kib(moat_server) - base
    assert grown < 8 * 1024, f"imap grew by {grown} KiB"
