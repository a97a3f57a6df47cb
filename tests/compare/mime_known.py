"""The differences between moat and Dovecot 2.3 that doc/mime-differences.md
lists, each recognised by a narrow check, so that any other difference is
new (mime_diff.py fails on it).

Two kinds of checks:

* Message-level: Dovecot stores or parses a message differently in a way
  that can be undone on the message itself.
  - Dovecot's save drops a CR that comes before CRLF and a CR that ends
    the message (dovecot_view()). moat keeps every byte. Checked by also
    giving moat the message as Dovecot stored it: every answer must then
    be equal.
  - moat reads more of a broken header than Dovecot does (an unterminated
    quoted parameter, a parameter after ";;", a closing delimiter of a
    boundary longer than 80 characters). repairs() rewrites each such
    spot, keeping the length, into what Dovecot reads the way moat does;
    Dovecot gets the repaired message, and moat's answers get the same
    rewrite: every answer must then be equal.
* Answer-level, for BINARY (known_item()): Dovecot decodes the parts inside
  a multipart or message/rfc822 section, refuses (NO or a closed
  connection) to decode malformed base64/quoted-printable, and does not
  decode a base64 or quoted-printable message/rfc822 part. moat must then
  answer what the RFCs say, which is checked against decoders written
  here from RFC 2045.

consistency() checks moat alone: RFC822.SIZE is the size of BODY[],
BINARY.SIZE[n] that of BINARY[n], a partial BINARY is a slice of the
whole one, and BINARY[n] is the RFC 2045 decoding of BODY[n].
"""
import binascii
import re

# ---- what Dovecot stores ----


def lf_to_crlf(data):
    """Every LF not after a CR gets one (how both servers send a message)."""
    return re.sub(rb"(?<!\r)\n", b"\r\n", data)


def dovecot_view(data):
    """The message as Dovecot 2.3 serves it: its maildir save turns CRs
    before an LF into nothing (CRLF and CR CR LF alike become LF) and
    drops a CR at the very end (it waits for an LF that never comes);
    reading turns LF back into CRLF. Other bare CRs stay."""
    stored = re.sub(rb"\r+\n", b"\n", data)
    if stored.endswith(b"\r"):
        stored = stored[:-1]
    return lf_to_crlf(stored)


# ---- repairs: same-length rewrites of what moat reads and Dovecot not ----

TOKEN_RE = re.compile(rb"^[!#$%&'*+\-.0-9A-Z^_`a-z{|}~\x80-\xff]+$")
FIELD_RE = re.compile(rb"(?im)^(content-type|content-disposition)[ \t]*:")


def header_fields(data):
    """(start, end) of every Content-Type/Content-Disposition field of any
    part: its line and the continuation lines after it. Any line may be a
    header line of some part, which is good enough for rewriting."""
    out = []
    for m in FIELD_RE.finditer(data):
        end = data.find(b"\n", m.end())
        while end != -1 and data[end + 1:end + 2] in (b" ", b"\t"):
            end = data.find(b"\n", end + 1)
        out.append((m.start(), len(data) if end == -1 else end + 1))
    return out


def quote_end(field, i):
    """Index of the quote closing the quoted string opened at field[i]."""
    j = i + 1
    while j < len(field):
        c = field[j:j + 1]
        if c == b"\\":
            j += 2
            continue
        if c == b'"':
            return j
        j += 1
    return None


MIME_TOKEN = re.compile(rb"[^\x00- ()<>@,;:\\\"/\[\]?=\x7f]+")


def skip_cfws(data, i):
    """Index after white space (CR and LF too) and comments at data[i]."""
    while i < len(data):
        c = data[i:i + 1]
        if c in (b" ", b"\t", b"\r", b"\n"):
            i += 1
        elif c == b"(":
            depth = 0
            while i < len(data):
                c = data[i:i + 1]
                if c == b"\\":
                    i += 2
                    continue
                depth += c == b"("
                depth -= c == b")"
                i += 1
                if depth == 0:
                    break
        else:
            break
    return i


def blank(out, start, end):
    """Spaces over out[start:end], keeping its CRLF line breaks."""
    for k in range(start, end):
        if out[k:k + 1] == b"\n" or out[k:k + 2] == b"\r\n":
            continue
        out[k:k + 1] = b" "


def content_type_valid(out):
    """The field's value starts with type "/" subtype."""
    i = skip_cfws(out, out.index(b":") + 1)
    m = MIME_TOKEN.match(out, i)
    if not m:
        return False
    i = skip_cfws(out, m.end())
    return out[i:i + 1] == b"/" and \
        MIME_TOKEN.match(out, skip_cfws(out, i + 1)) is not None


def repair_content_type(out):
    """Content-Type: type/subtype, then something that is not ';' (or a
    bare CR in the white space): moat keeps the type and reads on at the
    next ';', Dovecot takes the whole type as broken. Blanked, Dovecot
    reads what moat reads. Returns True if out was changed."""
    i = skip_cfws(out, out.index(b":") + 1)
    m = MIME_TOKEN.match(out, i)
    if not m:
        return False
    i = skip_cfws(out, m.end())
    if out[i:i + 1] != b"/":
        return False
    m = MIME_TOKEN.match(out, skip_cfws(out, i + 1))
    if not m:
        return False
    start = m.end()
    stop = skip_cfws(out, start)
    changed = False
    if stop < len(out) and out[stop:stop + 1] != b";":
        # (moat skips to the next ';' as Dovecot skips junk after a
        # parameter: a quote in it quotes nothing)
        while stop < len(out) and out[stop:stop + 1] != b";":
            stop += 1
        changed = True
    for k in range(start, stop):
        if out[k:k + 1] == b"\r" and out[k + 1:k + 2] != b"\n":
            changed = True
    if changed:
        blank(out, start, stop)
    return changed


def repair_param(out, i, names):
    """The parameter at out[i] (a ';'): rewrites what moat reads and
    Dovecot does not. Returns the index of the next ';' (or the end)."""
    after = skip_cfws(out, i + 1)
    m = MIME_TOKEN.match(out, after)
    broken = m is None
    if not broken:
        after = skip_cfws(out, m.end())
        broken = out[after:after + 1] != b"="
    if not broken:
        k = after = skip_cfws(out, after + 1)
        if out[k:k + 1] == b'"':
            end = quote_end(out, k)
            if end is not None:
                after = end + 1
            else:
                # unterminated: moat takes the value to the first ';' or
                # the end of its line (mime/message-header.c), Dovecot
                # drops the parameter; written as a token Dovecot reads
                # it alike
                stop = k + 1
                while stop < len(out) and out[stop:stop + 1] not in (
                        b"\r", b"\n", b";"):
                    stop += 1
                value = bytes(out[k + 1:stop])
                if TOKEN_RE.match(value):
                    out[k:stop] = value + b" "
                    names.add("param-unterminated-quote")
                after = stop
        elif out[k:k + 2] != b"=?" and not MIME_TOKEN.match(out, k):
            broken = True
    # moat goes on at the next ';' after the value, or after the point
    # where the parameter broke (a quote there quotes nothing)
    stop = out.find(b";", after)
    stop = len(out) if stop == -1 else stop
    if broken:
        # a broken parameter ("x;", ";;", "=y"): moat drops it and reads
        # on at the next ';'; Dovecot's recovery skips that ';' and
        # loses the next parameter (or keeps "=y" as a parameter with
        # an empty name); blanked, Dovecot reads what moat reads
        blank(out, i, stop)
        names.add("param-after-broken-param")
    return stop


def repair_field(field):
    """(new field, names of the repairs) for one header field."""
    names = set()
    out = bytearray(field)
    if field[:12].lower() == b"content-type":
        if not content_type_valid(out):
            # no type/subtype: both read no parameters; blanking one
            # could leave a lone type, which reads differently
            return field, names
        if repair_content_type(out):
            names.add("content-type-trailing-garbage")
    i = out.find(b";")
    while 0 <= i < len(out):
        i = repair_param(out, i, names)
    return bytes(out), names


BOUNDARY_RE = re.compile(rb'(?i)boundary\s*=\s*(?:"([^"\r\n]*)"|([^\s;"]+))')
# Dovecot (lib-mail/message-parser.c) keeps the first 80 characters of a
# boundary, so it cannot tell a closing delimiter of a longer one.
DOVECOT_BOUNDARY_MAX = 80


FIELD_LINE_NUL_RE = re.compile(rb"(?m)^(?=[^\n]*\x00)"
                               rb"(?:[\x00!-9;-~]+[ \t]*:|[ \t])[^\n]*$")


BOUNDARY_PIECE_RE = re.compile(
    rb'(?i)boundary\*(\d+)\*?\s*=\s*(?:"([^"\r\n]*)"|([^\s;"]+))')


def field_boundaries(field):
    """The boundary values of a Content-Type field, RFC 2231 pieces
    (boundary*0, boundary*1) joined."""
    out = [m.group(1) if m.group(1) is not None else m.group(2)
           for m in BOUNDARY_RE.finditer(field)]
    pieces = {}
    for m in BOUNDARY_PIECE_RE.finditer(field):
        pieces.setdefault(int(m.group(1)),
                          m.group(2) if m.group(2) is not None
                          else m.group(3))
    joined, i = b"", 0
    while i in pieces:
        joined += pieces[i]
        i += 1
    if joined:
        out.append(joined)
    return out


def repairs(data):
    """[(old bytes, new bytes)] of equal length, and the names applied."""
    subs, names = [], set()
    for m in FIELD_LINE_NUL_RE.finditer(data):
        # moat reads a NUL in a header as the 8-bit byte 0x80 (what
        # BODY[] sends for it), Dovecot as the end of a token or atom
        line = m.group(0)
        subs.append((line, line.replace(b"\0", b"\x80")))
        names.add("nul-in-header")
    if subs:
        data = apply_subs(data, subs)
    for start, end in header_fields(data):
        field = data[start:end]
        new, n = repair_field(field)
        if new != field:
            subs.append((field, new))
            names |= n
        for b in field_boundaries(new):
            if len(b) > DOVECOT_BOUNDARY_MAX:
                close = b"--" + b + b"--"
                if close in data:
                    subs.append((close, b"--" + b[:DOVECOT_BOUNDARY_MAX] +
                                 b"--" + b"x" * (len(b) -
                                                 DOVECOT_BOUNDARY_MAX)))
                    names.add("boundary-over-80-close")
    return subs, names


def apply_subs(data, subs, cut_tail=False):
    """Each old replaced by its new. cut_tail: data may end inside an old
    one (an answer holding a header that a boundary cut): that end gets
    the same part of the new one."""
    for old, new in subs:
        if old.endswith(b"\n"):
            # a whole field: not where it is the start of a longer one
            data = re.sub(re.escape(old) + rb"(?![ \t])",
                          lambda m, new=new: new, data)
        else:
            data = data.replace(old, new)
    if cut_tail:
        for old, new in subs:
            for k in range(len(old) - 1, 15, -1):
                if data.endswith(old[:k]):
                    data = data[:-k] + new[:k]
                    break
    return data


# ---- RFC 2045 decoders (moat's reading of the rules) ----

B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
B64_VALUE = {c: i for i, c in enumerate(B64)}


NOT_B64 = bytes(c for c in range(256) if c not in B64)


def base64_decode(data):
    """RFC 2045 6.8: characters outside the alphabet are ignored ("=" too:
    moat decodes on past padding, which the RFC allows but does not
    require); a last group of 2 or 3 characters gives 1 or 2 bytes, a
    lone last character nothing."""
    text = data.translate(None, NOT_B64)
    text = text[:len(text) - len(text) % 4 if len(text) % 4 == 1
                else len(text)]
    return binascii.a2b_base64(text + b"=" * (-len(text) % 4))


HEX = set(b"0123456789abcdefABCDEF")


QP_ESCAPE_RE = re.compile(rb"=([0-9A-Fa-f]{2})")


def qp_decode(data):
    """RFC 2045 6.7: =XX (either case) is the byte; "=" at a line end,
    after optional white space, is a soft line break (the end of the data
    ends the last line); white space at a line end goes (rule 3); a line
    break is CRLF; an "=" that starts no escape stays as it is (the
    "reasonable approach" of rule 1), so does a bare CR."""
    out = []
    lines = data.split(b"\n")
    for k, line in enumerate(lines):
        last = k == len(lines) - 1
        if not last and line.endswith(b"\r"):
            line = line[:-1]
        line = line.rstrip(b" \t")
        soft = line.endswith(b"=")
        if soft:
            line = line[:-1]
        if b"=" in line:
            line = QP_ESCAPE_RE.sub(lambda m: bytes((int(m.group(1), 16),)),
                                    line)
        out.append(line)
        if not last and not soft:
            out.append(b"\r\n")
    return b"".join(out)


# ---- the parts of a BODYSTRUCTURE ----

def is_multipart(bs):
    return isinstance(bs, list) and len(bs) > 0 and isinstance(bs[0], list)


def is_message_rfc822(bs):
    return (isinstance(bs, list) and len(bs) > 8 and
            isinstance(bs[0], bytes) and isinstance(bs[1], bytes) and
            bs[0].lower() == b"message" and bs[1].lower() == b"rfc822" and
            isinstance(bs[8], list))


def subparts(bs):
    return [c for c in bs if isinstance(c, list)] if is_multipart(bs) else []


def part_at(bs, path):
    """The BODYSTRUCTURE of part path ("1.2"), or None."""
    container, part = bs, None
    for num in path.split("."):
        n = int(num)
        if container is None:
            return None
        if is_multipart(container):
            subs = subparts(container)
            if n < 1 or n > len(subs):
                return None
            part = subs[n - 1]
        elif n == 1:
            part = container
        else:
            return None
        # as moat (and Dovecot) count: a message/rfc822's parts are its
        # message's; a part reached as a multipart's child is its own 1,
        # once
        if is_message_rfc822(part):
            container = part[8]
        elif part is not container:
            container = part
        else:
            container = None
    return part


def part_cte(part):
    if part is None or is_multipart(part) or len(part) < 6:
        return None
    cte = part[5]
    return cte.lower() if isinstance(cte, bytes) else None


IDENTITY_CTES = (None, b"7bit", b"8bit", b"binary")


# ---- answer-level known differences (BINARY) ----

BINARY_RE = re.compile(r"^BINARY(\.SIZE)?\[([0-9.]+)\](<(\d+)>)?$")


def data_of(raw):
    """Bytes of a string/literal answer, or None."""
    if raw is None:
        return None
    m = re.match(rb"~?\{(\d+)\}\r\n", raw)
    if m:
        return raw[m.end():]
    if raw.startswith(b'"'):
        return re.sub(rb"\\(.)", rb"\1", raw[1:-1])
    return None


def refused(raw):
    return raw is not None and (raw.startswith(b"(tagged) NO") or
                                raw == b"(disconnected)")


def binary_view(item, whole):
    """What item (BINARY[n], BINARY.SIZE[n] or BINARY[n]<o>) answers when
    BINARY[n] is whole: data for BINARY, a number for BINARY.SIZE."""
    m = BINARY_RE.match(item)
    if m.group(1):
        return str(len(whole)).encode()
    if m.group(3):
        start = int(m.group(4))
        return whole[start:start + 7]
    return whole


def same_data(got, want):
    """got (a BINARY answer) is want (decoded from BODY[], which sends a
    NUL of the message as 0x80: a literal may hold none)."""
    if got == want:
        return True
    if got is None or want is None or len(got) != len(want):
        return False
    return all(g == w or (g == 0 and w == 0x80) for g, w in zip(got, want))


# moat keeps this much of one header field (mime/message-parser.h,
# MESSAGE_PARSER_DEFAULT_MAX_FIELD_SIZE); Dovecot keeps it all.
MOAT_MAX_FIELD_SIZE = 64 * 1024
LONG_FIELD_RE = re.compile(rb"(?m)^[!-9;-~]+:(?:[^\n]*\n[ \t])*[^\n]*")


def has_long_field(msg):
    return len(msg) > MOAT_MAX_FIELD_SIZE and any(
        len(m.group(0)) > MOAT_MAX_FIELD_SIZE
        for m in LONG_FIELD_RE.finditer(msg))


def field_cut(item, ref, moat, msg):
    """moat's ENVELOPE/BODYSTRUCTURE holds a header field cut at 64 KiB
    where Dovecot's holds it whole: the same up to a literal that is
    shorter in moat's."""
    if item not in ("ENVELOPE", "BODY", "BODYSTRUCTURE") or ref is None \
            or moat is None or len(moat) >= len(ref) or \
            not has_long_field(msg):
        return False
    i = 0
    while i < len(moat) and moat[i] == ref[i]:
        i += 1
    start = moat.rfind(b"{", 0, i + 1)
    m = re.match(rb"\{(\d+)\}\r\n", moat[start:])
    return m is not None and int(m.group(1)) <= MOAT_MAX_FIELD_SIZE and \
        start + m.end() + int(m.group(1)) >= i


def known_item(item, ref, moat, ref_all, moat_all, moat_bs, ref_bs,
               msg=b""):
    """Name of the answer-level known difference of item, or None. moat's
    answer must first be what the RFCs give (expected_binary())."""
    if field_cut(item, ref, moat, msg):
        return "header-field-cut-at-64k"
    m = BINARY_RE.match(item)
    if not m or moat_bs is None:
        return None
    path = m.group(2)
    part = part_at(moat_bs, path)
    body = data_of(moat_all.get("BODY[%s]" % path))
    want, decoded = expected_binary(moat_all, moat_bs, path)
    if part is None or body is None or want is None:
        return None
    got = data_of(moat) if not m.group(1) else moat
    if not same_data(got, binary_view(item, want)):
        return None
    ref_got = data_of(ref) if not m.group(1) else ref
    if m.group(1):
        # Dovecot's BINARY.SIZE is not always the size of its BINARY
        # (RFC 3516 4.3 says it must be): moat's is, and Dovecot's
        # BINARY agrees with it
        ref_whole = data_of(ref_all.get("BINARY[%s]" % path))
        if ref_whole is not None and same_data(ref_whole, want):
            return "dovecot-binary-size-not-its-binary"
    if refused(ref):
        # malformed base64 or quoted-printable (somewhere in the part):
        # Dovecot answers NO or closes the connection
        return "binary-refused-by-dovecot"
    if is_multipart(part) or (is_message_rfc822(part) and not decoded):
        # RFC 3516: the section's own CTE is undone, nothing inside it;
        # Dovecot converts the parts within (and rewrites their headers)
        return "binary-of-nested-parts"
    if is_message_rfc822(part):
        # Dovecot does not decode an encoded message/rfc822 (it sends
        # it as it is, converts the parts it finds in the encoded text,
        # or refuses): moat's answer is the decoding
        return "binary-of-encoded-message"
    if not decoded:
        # the Content-Transfer-Encoding does not count (the part is not
        # MIME): BODYSTRUCTURE says 7bit and moat's BINARY agrees;
        # Dovecot's BINARY decodes anyway
        ref_part = part_at(ref_bs, path) if ref_bs is not None else None
        if part_cte(ref_part) in IDENTITY_CTES:
            return "binary-by-cte-that-does-not-count"
        return None
    ref_part = part_at(ref_bs, path) if ref_bs is not None else None
    ref_body = data_of(ref_all.get("BODY[%s]" % path))
    if part_cte(ref_part) == part_cte(part) and ref_body is not None and \
            ref_got == binary_view(item, ref_body):
        # Dovecot's BINARY left the part encoded although its own
        # BODYSTRUCTURE gives the encoding (a header it reads otherwise)
        return "dovecot-binary-ignores-its-cte"
    return None


CTE_FIELD_RE = re.compile(rb"(?im)^content-transfer-encoding[ \t]*:"
                          rb"((?:[^\n]*\n[ \t])*[^\n]*)")
MIME_FIELD_RE = re.compile(rb"(?im)^(mime-version|content-type)[ \t]*:")


def header_cte(header, multipart_child):
    """The mechanism moat's BINARY undoes for a part with this header:
    the first token of its first Content-Transfer-Encoding, if the part
    is MIME (a multipart's child, or MIME-Version or Content-Type)."""
    if header is None or not (multipart_child or
                              MIME_FIELD_RE.search(header)):
        return None
    values = [m.group(1) for m in CTE_FIELD_RE.finditer(header)]
    if not values:
        return None
    # the first value that is one token (what moat keeps), else the first
    chosen = values[0]
    for v in values:
        tok = MIME_TOKEN.match(v, skip_cfws(v, 0))
        if tok and skip_cfws(v, tok.end()) >= len(v.rstrip(b"\r\n")):
            chosen = v
            break
    tok = MIME_TOKEN.match(chosen, skip_cfws(chosen, 0))
    return tok.group(0).lower() if tok else None


def parent_is_multipart(bs, path):
    """Part path is a multipart's child (so its header is MIME)."""
    if "." not in path:
        return is_multipart(bs)
    parent_path = path.rsplit(".", 1)[0]
    parent = part_at(bs, parent_path)
    if parent is not None and parent is part_at(bs, path):
        # "x.1" of a part that is not a multipart is x itself (RFC 3501
        # 6.4.5), so its header is MIME when x's is
        return parent_is_multipart(bs, parent_path)
    if is_message_rfc822(parent):
        parent = parent[8]   # the parts of its message
    return is_multipart(parent)


def expected_binary(moat_all, moat_bs, path):
    """(What moat's BINARY[path] must be, whether that is decoded), from
    its BODY[path] and the part's header (BODY[path.MIME]); (None, False)
    when that cannot be told."""
    part = part_at(moat_bs, path)
    body = data_of(moat_all.get("BODY[%s]" % path))
    if part is None or body is None:
        return None, False
    if is_multipart(part):
        return body, False
    cte = header_cte(data_of(moat_all.get("BODY[%s.MIME]" % path)),
                     parent_is_multipart(moat_bs, path))
    if cte == b"base64":
        return base64_decode(body), True
    if cte == b"quoted-printable":
        return qp_decode(body), True
    return body, False


def consistency(moat_all, moat_bs):
    """Problems of moat's answers on their own: [(item, text)]."""
    problems = []
    body = data_of(moat_all.get("BODY[]"))
    size = moat_all.get("RFC822.SIZE")
    if body is not None and size is not None and \
            str(len(body)).encode() != size:
        problems.append(("RFC822.SIZE", "%s but BODY[] has %d bytes" %
                         (size, len(body))))
    for item, raw in moat_all.items():
        m = BINARY_RE.match(item)
        if not m or m.group(1) or m.group(3):
            continue
        path = m.group(2)
        whole = data_of(raw)
        if raw.startswith(b"(tagged) NO"):
            continue   # an unknown encoding; compared with Dovecot's
        if whole is None:
            problems.append((item, "not a string: %r" % raw[:60]))
            continue
        for other in ("BINARY.SIZE[%s]" % path, "BINARY[%s]<1>" % path):
            if other in moat_all and moat_all[other] != \
                    binary_view(other, whole) and not (
                        other.endswith("<1>") and
                        data_of(moat_all[other]) == binary_view(other,
                                                                whole)):
                problems.append((other, "%r does not match BINARY[%s] "
                                 "(%d bytes)" % (moat_all[other][:60], path,
                                                 len(whole))))
        want = expected_binary(moat_all, moat_bs, path)[0] \
            if moat_bs is not None else None
        if want is not None and not same_data(whole, want):
            problems.append((item, "is not BODY[%s] decoded (%d bytes, "
                             "want %d)" % (path, len(whole), len(want))))
    return problems
