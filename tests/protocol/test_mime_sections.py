"""BODY[section] and BINARY through moat's FETCH, from the RFCs:
RFC 3501 / RFC 9051 6.4.5 (what HEADER, TEXT, MIME and part numbers name,
also for a message whose top-level type is message/rfc822), RFC 3516 (the
size BINARY.SIZE gives is that of what BINARY sends, partial BINARY counts
decoded octets), RFC 2046 5.1.1 (boundaries of any length, an empty one),
RFC 2045 5.1 (a quote never closed ends the value at its line), RFC 3501
7.4.2 (an empty display name is NIL), and RFC822.SIZE being the size of
BODY[] whatever the line ends."""

import base64
import pathlib
import re
import sys

import pytest

COMPARE = pathlib.Path(__file__).resolve().parent.parent / "compare"
sys.path.insert(0, str(COMPARE))
from mime_diff import fetch_items  # noqa: E402
from mime_known import data_of  # noqa: E402

OUTER = (b"From: outer@example.org\r\nSubject: outer\r\n"
         b"Content-Type: message/rfc822\r\n\r\n")
INNER_HDR = b"From: inner@example.org\r\nSubject: inner\r\n\r\n"
INNER_BODY = b"inner body\r\n"
INNER_MULTI = (b"Subject: inner\r\nMIME-Version: 1.0\r\n"
               b"Content-Type: multipart/mixed; boundary=b\r\n\r\n"
               b"--b\r\n\r\none\r\n--b\r\nX-Part: two\r\n\r\ntwo\r\n--b--\r\n")


def fetch(client, msg, items):
    """APPEND msg, FETCH items of it: {ITEM: data or raw answer}."""
    r = client.append("INBOX", msg)
    assert r.ok, r
    uid = re.search(rb"APPENDUID \d+ (\d+)", r.line).group(1).decode()
    r = client.command("UID FETCH %s (%s)" % (uid, " ".join(items)))
    assert r.ok, r
    out = {}
    for line in r.untagged:
        got = fetch_items(line)
        if got:
            out.update(got)
    return {k: (data_of(v) if data_of(v) is not None else v)
            for k, v in out.items()}


@pytest.fixture
def client(moat_server):
    c = moat_server.login()
    assert c.command("SELECT INBOX").ok
    return c


def test_top_level_message_rfc822(client):
    got = fetch(client, OUTER + INNER_HDR + INNER_BODY, [
        "BODY.PEEK[HEADER]", "BODY.PEEK[TEXT]", "BODY.PEEK[1]",
        "BODY.PEEK[1.HEADER]", "BODY.PEEK[1.TEXT]", "BODY.PEEK[1.MIME]",
        "BODY.PEEK[1.1]", "BODY.PEEK[1.1.MIME]", "BODY.PEEK[1.2]",
        "BODY.PEEK[2]", "BODY.PEEK[1.1.1]"])
    assert got["BODY[HEADER]"] == OUTER
    assert got["BODY[TEXT]"] == INNER_HDR + INNER_BODY
    assert got["BODY[1]"] == INNER_HDR + INNER_BODY
    assert got["BODY[1.HEADER]"] == INNER_HDR
    assert got["BODY[1.TEXT]"] == INNER_BODY
    assert got["BODY[1.MIME]"] == OUTER
    assert got["BODY[1.1]"] == INNER_BODY
    assert got["BODY[1.1.MIME]"] == INNER_HDR
    for empty in ("BODY[1.2]", "BODY[2]", "BODY[1.1.1]"):
        assert got[empty] == b""
    # and the parts of an encapsulated multipart
    got = fetch(client, OUTER + INNER_MULTI, [
        "BODY.PEEK[1.1]", "BODY.PEEK[1.2]", "BODY.PEEK[1.2.MIME]",
        "BODYSTRUCTURE"])
    assert got["BODY[1.1]"] == b"one"
    assert got["BODY[1.2]"] == b"two"
    assert got["BODY[1.2.MIME]"] == b"X-Part: two\r\n\r\n"


def test_encoded_message_rfc822(client):
    """base64 is not allowed for message/rfc822 (RFC 2046 5.2.1); BODY[]
    sections never decode (the encoded text is what 1.HEADER parses),
    BINARY[1] does (RFC 3516): it is the only way to the message."""
    inner = INNER_HDR + INNER_BODY
    encoded = base64.encodebytes(inner).replace(b"\n", b"\r\n")
    msg = (b"From: outer@example.org\r\nMIME-Version: 1.0\r\n"
           b"Content-Type: message/rfc822\r\n"
           b"Content-Transfer-Encoding: base64\r\n\r\n" + encoded)
    got = fetch(client, msg, ["BODY.PEEK[1]", "BINARY.PEEK[1]",
                              "BINARY.SIZE[1]", "BODY.PEEK[1.HEADER]"])
    assert got["BODY[1]"] == encoded
    assert got["BINARY[1]"] == inner
    assert got["BINARY.SIZE[1]"] == str(len(inner)).encode()
    assert got["BODY[1.HEADER]"] == encoded   # no blank line in it


def test_mime_of_single_part(client):
    msg = b"From: a@example.org\r\nSubject: one part\r\n\r\nbody\r\n"
    got = fetch(client, msg, ["BODY.PEEK[1.MIME]", "BODY.PEEK[1]",
                              "BINARY.PEEK[1]"])
    assert got["BODY[1.MIME]"] == b"From: a@example.org\r\nSubject: one part\r\n\r\n"
    assert got["BODY[1]"] == b"body\r\n"


@pytest.mark.parametrize("length", [71, 80, 81, 150, 300, 2000])
def test_long_boundary(client, length):
    b = (b"0123456789abcdefghij" * 100)[:length]
    msg = (b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"" +
           b + b"\"\r\n\r\npreamble\r\n--" + b + b"\r\n\r\none\r\n--" + b +
           b"\r\nX: 2\r\n\r\ntwo\r\n--" + b + b"\r\n\r\nthree\r\n--" + b +
           b"--\r\nepilogue\r\n")
    got = fetch(client, msg, ["BODY.PEEK[1]", "BODY.PEEK[2]",
                              "BODY.PEEK[2.MIME]", "BODY.PEEK[3]",
                              "BODY.PEEK[4]"])
    assert [got["BODY[1]"], got["BODY[2]"], got["BODY[3]"]] == \
        [b"one", b"two", b"three"]
    assert got["BODY[2.MIME]"] == b"X: 2\r\n\r\n"
    assert got["BODY[4]"] == b""


def test_empty_boundary(client):
    msg = (b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; "
           b"boundary=\"\"\r\n\r\n--\r\n\r\none\r\n--\r\n\r\ntwo\r\n----\r\n")
    got = fetch(client, msg, ["BODY.PEEK[1]", "BODY.PEEK[2]", "BODY.PEEK[3]"])
    assert (got["BODY[1]"], got["BODY[2]"], got["BODY[3]"]) == \
        (b"one", b"two", b"")


def test_unterminated_quote(client):
    """The value ends at its line (here a bare CR): the following header
    line is not in it."""
    msg = (b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=\"utf-8"
           b"\rReturn-Path: <x@example.org>\r\n\r\nbody\r\n")
    got = fetch(client, msg, ["BODYSTRUCTURE"])
    assert got["BODYSTRUCTURE"].startswith(
        b'("text" "plain" ("charset" "utf-8") NIL NIL "7bit"')


def test_empty_display_name(client):
    msg = (b'From: "" <list@example.org>\r\nTo: " " <a@example.org>, '
           b'"Name" <b@example.org>\r\n\r\nx\r\n')
    got = fetch(client, msg, ["ENVELOPE"])
    env = got["ENVELOPE"]
    assert env.startswith(b'(NIL NIL ((NIL NIL "list" "example.org"))'), env
    assert b'("Name" NIL "b" "example.org")' in env


def binary_case(mime, body):
    return (b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; "
            b"boundary=X\r\n\r\n--X\r\n" + mime + b"\r\n\r\n" + body +
            b"\r\n--X--\r\n")


BINARY_CASES = [
    (b"Content-Transfer-Encoding: base64", b"aGVsbG8gd29ybGQ="),
    (b"Content-Transfer-Encoding: base64", b"aGVs\r\nbG8gd29y\r\nbGQ"),
    (b"Content-Transfer-Encoding: base64", b"aGV!!sbG8*gd2%9ybGQ=x"),
    (b"Content-Transfer-Encoding: base64", b"aGVsb=G8gd29ybGQ"),
    (b"Content-Transfer-Encoding: base64", b"a"),
    (b"Content-Transfer-Encoding: BASE64", b"AAECAwQFBgcICQ=="),
    (b"Content-Transfer-Encoding: quoted-printable",
     b"caf=C3=A9 =3D=\r\nsoft  \r\nend="),
    (b"Content-Transfer-Encoding: quoted-printable",
     b"bad =ZZ =4 = x =\t\r\n=c3=a9=00"),
    (b"Content-Transfer-Encoding: quoted-printable;", b"a=41b"),
    (b"Content-Transfer-Encoding: 8bit", b"caf\xc3\xa9 \x00 nul"),
    (b"Content-Transfer-Encoding: binary", b"\x00\x01\x02\r\n\xff"),
    (b"Content-Type: text/plain", b""),
]


@pytest.mark.parametrize("mime,body", BINARY_CASES)
def test_binary_size_is_binary(client, mime, body):
    """RFC 3516 4.3: BINARY.SIZE "MUST match the size" BINARY returns;
    a partial BINARY is a slice of the decoded data (RFC 3516 4.2)."""
    msg = binary_case(mime, body)
    # (the answer names only the start: one count per start)
    partials = [(0, 5), (1, 3), (3, 100), (5, 1), (20, 10), (1000, 5)]
    items = ["BINARY.PEEK[1]", "BINARY.SIZE[1]"] + \
        ["BINARY.PEEK[1]<%d.%d>" % p for p in partials]
    got = fetch(client, msg, items)
    whole = got["BINARY[1]"]
    assert got["BINARY.SIZE[1]"] == str(len(whole)).encode()
    for start, count in partials:
        assert got["BINARY[1]<%d>" % start] == whole[start:start + count]


def test_rfc822_size_is_body_size(client):
    """Whatever the line ends (CRLF, bare LF, bare CR, CR before CRLF, a
    last line without one), RFC822.SIZE counts what BODY[] sends and the
    partial sections are slices of it."""
    ends = [b"", b"\n", b"\r\n", b"\r", b"\r\r\n", b"\n\r", b"\r\n\r"]
    for hdr_eol in (b"\n", b"\r\n"):
        for end in ends:
            msg = (b"From: a@example.org" + hdr_eol + b"Subject: x" +
                   hdr_eol + hdr_eol + b"line1\nline2\r\nline3" + end)
            got = fetch(client, msg, ["RFC822.SIZE", "BODY.PEEK[]",
                                      "BODY.PEEK[]<3.20>", "BODY.PEEK[TEXT]",
                                      "BODY.PEEK[HEADER]"])
            body = got["BODY[]"]
            assert got["RFC822.SIZE"] == str(len(body)).encode(), msg
            assert got["BODY[]<3>"] == body[3:23]
            assert got["BODY[HEADER]"] + got["BODY[TEXT]"] == body


def test_binary_of_leaf_part_one(client):
    """RFC 3501 6.4.5: "x.1" of a part that is not a multipart is the part
    itself, so BINARY[x.1] undoes x's encoding, which counts because x is
    a multipart's child even with no Content-Type of its own (what MIME
    seed 751206067 #454 did, nested deeper; the differential checker
    wrongly wanted it left encoded)."""
    msg = (b"From: a@example.org\r\nMIME-Version: 1.0\r\n"
           b"Content-Type: multipart/signed; boundary=\"=_s\"\r\n\r\n"
           b"--=_s\r\nContent-Transfer-Encoding: base64\r\n\r\n"
           + base64.b64encode(b"mu psi\nxi tau") + b"\r\n--=_s--\r\n")
    got = fetch(client, msg, ["BODY.PEEK[1]", "BODY.PEEK[1.1]",
                              "BINARY.PEEK[1]", "BINARY.PEEK[1.1]",
                              "BINARY.SIZE[1.1]"])
    assert got["BODY[1.1]"] == got["BODY[1]"]
    assert got["BINARY[1]"] == b"mu psi\nxi tau"
    assert got["BINARY[1.1]"] == b"mu psi\nxi tau"
    assert got["BINARY.SIZE[1.1]"] == b"13"


def test_header_fields_not_keeps_a_cut_last_line(client):
    """A header that ends at the end of the file in a line without a
    colon (a truncated message): that line names no field, so
    HEADER.FIELDS.NOT keeps it, as it keeps any line without a colon
    (Dovecot answers the same); HEADER.FIELDS does not."""
    msg = b"From: a@example.org\r\nTo: b@example.org\r\nSub"
    got = fetch(client, msg, ["BODY.PEEK[HEADER.FIELDS.NOT (To)]",
                              "BODY.PEEK[HEADER.FIELDS (From)]"])
    assert got["BODY[HEADER.FIELDS.NOT (TO)]"] == b"From: a@example.org\r\nSub"
    assert got["BODY[HEADER.FIELDS (FROM)]"] == b"From: a@example.org\r\n\r\n"
