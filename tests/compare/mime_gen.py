"""MIME mutation generator for the differential test against Dovecot
(mime_diff.py). Python standard library only.

generate(rng) returns (message bytes, list of mutation names). Every message
is built from a random part tree, then mutated where parsers disagree most:
boundaries that are long (over RFC 2046's 70 characters), missing, empty,
duplicated or prefixes of each other; multipart/digest default types;
message/rfc822 at the top and inside, also base64 or quoted-printable
encoded; parameters with unterminated quotes, RFC 2231 continuations,
doubled ';'; broken base64 and quoted-printable; bare CR, NUL and 8-bit
bytes; deep nesting; LF, CRLF and mixed line endings, a last line without
a line break; truncated messages.

The same seed gives the same messages (random.Random only), so a failure
seen with a printed seed can be reproduced.
"""
import base64
import binascii
import random

WORDS = ("alpha beta gamma delta epsilon zeta theta iota kappa lambda mu nu "
         "xi omicron pi rho sigma tau upsilon phi chi psi omega").split()
CHARSETS = ("us-ascii", "utf-8", "iso-8859-1", "UTF-8", "windows-1252",
            "koi8-r", "iso-2022-jp")
LEAF_TYPES = ("text/plain", "text/html", "application/octet-stream",
              "image/png", "text/enriched", "application/pdf",
              "message/delivery-status", "text/rfc822-headers",
              "application/x-unknown")
MULTI_SUBTYPES = ("mixed", "alternative", "related", "digest", "signed",
                  "report", "parallel", "x-weird")


def mime_token(s):
    return s != "" and not any(c in s for c in ' ()<>@,;:\\"/[]?=\t')


class Gen:
    """One message's worth of choices; `muts` names what was applied."""

    def __init__(self, rng):
        self.rng = rng
        self.muts = []
        self.boundaries = []
        self.max_depth = rng.choice((2, 3, 3, 4, 6, 12, 30))
        self.parts = 0
        # most messages carry few mutations, so a difference points at
        # its cause; some carry many
        self.intensity = rng.choice((0.1, 0.3, 0.5, 0.7, 1.0))

    def mut(self, name, prob):
        if self.rng.random() < prob * self.intensity:
            self.muts.append(name)
            return True
        return False

    # ---- small pieces ----

    def words(self, n):
        r = self.rng
        out = []
        for _ in range(n):
            w = r.choice(WORDS)
            if r.random() < 0.03:
                w = r.choice(("caf\xe9", "\u00fcber", "\u65e5\u672c",
                              "na\u00efve")).encode("utf-8").decode("latin-1")
            out.append(w)
        return " ".join(out)

    def text_lines(self, count):
        r = self.rng
        lines = []
        for _ in range(count):
            c = r.random()
            if c < 0.05:
                lines.append("")
            elif c < 0.08:
                lines.append("--" + r.choice(("", " ", "-", "sig", "x" * 5)))
            elif c < 0.10:
                lines.append("x" * r.choice((999, 1000, 2100)))
            elif c < 0.12:
                lines.append("From someone")
            elif c < 0.14:
                lines.append(" leading space " + self.words(3))
            else:
                lines.append(self.words(r.randint(1, 12)))
        return lines

    def boundary(self):
        r = self.rng
        c = r.random()
        if c < 0.10 and self.mut("boundary-long", 1):
            b = "=_long_" + "".join(r.choice("abcdefXYZ0123456789")
                                    for _ in range(r.choice((64, 71, 75,
                                                             100, 200, 260,
                                                             300, 500))))
        elif c < 0.14 and self.boundaries and self.mut("boundary-duplicate", 1):
            b = r.choice(self.boundaries)
        elif c < 0.18 and self.boundaries and self.mut("boundary-prefix", 1):
            b = r.choice(self.boundaries)[:r.randint(1, 6)]
        elif c < 0.21 and [b for b in self.boundaries if len(b) < 80] \
                and self.mut("boundary-extends", 1):
            # (not of a boundary over 80 characters: Dovecot tells
            # those apart by their first 80 only, mime_known.py)
            b = r.choice([b for b in self.boundaries if len(b) < 80]) + "x"
        elif c < 0.24 and self.mut("boundary-spaces", 1):
            b = "b with  spaces " + str(r.randint(0, 999))
        elif c < 0.27 and self.mut("boundary-specials", 1):
            b = "----=_NextPart_" + str(r.randint(0, 99999)) + "'()+_,-./:=?"
        else:
            b = "b%d_%s" % (len(self.boundaries),
                            "".join(r.choice("abcdef0123456789")
                                    for _ in range(r.randint(1, 30))))
        self.boundaries.append(b)
        return b

    def param(self, name, value, quote=None):
        r = self.rng
        if quote is None:
            quote = r.random() < 0.7 or any(c in value for c in
                                            ' ()<>@,;:\\"/[]?=')
        if quote:
            return '%s="%s"' % (name, value.replace('\\', '\\\\')
                                .replace('"', '\\"'))
        return "%s=%s" % (name, value)

    def content_type(self, ctype, params):
        """params: list of strings 'name=value' already formatted."""
        r = self.rng
        sep = "; "
        if self.mut("ct-folded", 0.15):
            sep = ";\n\t"
        typ = ctype
        if self.mut("ct-case", 0.1):
            typ = "".join(c.upper() if r.random() < 0.5 else c for c in typ)
        if self.mut("ct-comment", 0.03):
            typ = typ.replace("/", " (c) / ")
        if self.mut("ct-no-subtype", 0.015):
            typ = typ.split("/")[0]
        elif self.mut("ct-trailing-garbage", 0.015):
            typ += r.choice((" garbage", " x y", "\rX-Next: z", " \"q;\" z"))
        value = typ + "".join(sep + p for p in params)
        if self.mut("ct-double-semicolon", 0.04):
            value = value.replace("; ", ";; ", 1) if "; " in value \
                else value + ";;"
        if self.mut("ct-trailing-semicolon", 0.03):
            value += ";"
        return "Content-Type: " + value

    def charset_param(self):
        r = self.rng
        cs = r.choice(CHARSETS)
        if self.mut("param-unterminated-quote", 0.04):
            return 'charset="' + cs
        if self.mut("param-rfc2231", 0.03):
            return "charset*=%s''%s" % (cs, cs)
        return self.param("charset", cs)

    def name_params(self):
        r = self.rng
        out = []
        if r.random() < 0.3:
            c = r.random()
            if c < 0.2 and self.mut("param-continuation", 1):
                out += ["name*0=\"part one \"", "name*1=\"and two.txt\""]
            elif c < 0.3 and self.mut("param-ext-continuation", 1):
                out += ["name*0*=utf-8''%C3%A9t%C3%A9", "name*1=\".txt\""]
            elif c < 0.4 and self.mut("param-encoded-word", 1):
                out.append('name="=?utf-8?B?w6l0w6kudHh0?="')
            elif c < 0.45 and self.mut("param-8bit", 1):
                out.append('name="\xc3\xa9t\xc3\xa9.txt"')
            elif c < 0.5 and self.mut("param-unterminated-quote", 1):
                out.append('name="unterminated.txt')
            else:
                out.append(self.param("name", r.choice(WORDS) + ".dat"))
        return out

    # ---- encodings ----

    def base64_body(self, data):
        r = self.rng
        text = base64.encodebytes(data).decode("ascii")
        if self.mut("b64-no-padding", 0.1):
            text = text.replace("=", "")
        if self.mut("b64-junk", 0.1):
            pos = r.randint(0, len(text))
            text = text[:pos] + r.choice(("!!", "*", "%$", " ", "\t", "@",
                                          "\x00", "\x80")) + text[pos:]
        if self.mut("b64-mid-padding", 0.06):
            pos = r.randint(0, len(text))
            text = text[:pos] + "=" + text[pos:]
        if self.mut("b64-trunc", 0.1) and len(text) > 3:
            text = text[:r.randint(1, len(text) - 1)]
        if self.mut("b64-long-lines", 0.05):
            text = text.replace("\n", "") + "\n"
        if self.mut("b64-trailing-text", 0.05):
            text += "this is not base64\n"
        return text.rstrip("\n").split("\n") if text else []

    def qp_body(self, data):
        r = self.rng
        text = binascii.b2a_qp(data).decode("latin-1")
        if self.mut("qp-bad-escape", 0.12):
            pos = r.randint(0, len(text))
            text = text[:pos] + r.choice(("=ZZ", "=4", "=", "=\t", "= ",
                                          "=g0", "=3d")) + text[pos:]
        if self.mut("qp-trailing-ws", 0.1):
            text = text.replace("\n", "  \t\n", 2)
        if self.mut("qp-soft-break-end", 0.08):
            text = text.rstrip("\n") + "="
        if self.mut("qp-lowercase-hex", 0.05):
            text = text.replace("=C3", "=c3")
        if self.mut("qp-eq-space-break", 0.05):
            text = text.replace("\n", "= \n", 1)
        return text.split("\n")

    def cte_header(self, cte):
        r = self.rng
        if self.mut("cte-case", 0.1):
            cte = cte.upper()
        if self.mut("cte-garbage", 0.02):
            cte = r.choice(("quoted printable", cte + ";", "x-uuencode",
                            "bas64", cte + " (comment)"))
        return "Content-Transfer-Encoding: " + cte

    def encode_lines(self, lines, force=None):
        """Encode text lines with a random CTE: (cte header or None, lines)."""
        r = self.rng
        cte = force or r.choice((None, None, "7bit", "8bit",
                                 "quoted-printable", "base64"))
        data = "\n".join(lines).encode("latin-1")
        if cte == "base64":
            return self.cte_header(cte), self.base64_body(data)
        if cte == "quoted-printable":
            return self.cte_header(cte), self.qp_body(data)
        if cte is None:
            return None, lines
        return self.cte_header(cte), lines

    # ---- headers ----

    def address(self):
        r = self.rng
        local = r.choice(WORDS) + str(r.randint(0, 99))
        dom = r.choice(("example.org", "example.com", "b.example"))
        c = r.random()
        if c < 0.10 and self.mut("addr-empty-name", 1):
            return '"" <%s@%s>' % (local, dom)
        if c < 0.15 and self.mut("addr-empty-name-spaces", 1):
            return '" " <%s@%s>' % (local, dom)
        if c < 0.25:
            return '"%s %s" <%s@%s>' % (r.choice(WORDS).title(),
                                        r.choice(WORDS).title(), local, dom)
        if c < 0.30 and self.mut("addr-encoded-name", 1):
            return "=?utf-8?Q?Ren=C3=A9e?= <%s@%s>" % (local, dom)
        if c < 0.33 and self.mut("addr-group", 1):
            return "undisclosed-recipients:;"
        if c < 0.35 and self.mut("addr-no-domain", 1):
            return local
        if c < 0.38 and self.mut("addr-comment", 1):
            return "%s@%s (%s)" % (local, dom, r.choice(WORDS))
        if c < 0.40 and self.mut("addr-8bit-name", 1):
            return "J\xc3\xb6rg <%s@%s>" % (local, dom)
        if c < 0.42 and self.mut("addr-route", 1):
            return "<@relay.example:%s@%s>" % (local, dom)
        if c < 0.60:
            return "%s %s <%s@%s>" % (r.choice(WORDS).title(),
                                      r.choice(WORDS), local, dom)
        return "%s@%s" % (local, dom)

    def envelope_headers(self):
        r = self.rng
        h = []
        if r.random() < 0.95:
            h.append("From: " + self.address())
        if self.mut("from-twice", 0.02):
            h.append("From: " + self.address())
        n = r.choice((0, 1, 1, 2, 3))
        if n:
            h.append("To: " + ", ".join(self.address() for _ in range(n)))
        if r.random() < 0.3:
            h.append("Cc: " + ",\n\t".join(self.address()
                                            for _ in range(r.randint(1, 3))))
        if self.mut("sender-empty", 0.03):
            h.append("Sender: ")
        elif r.random() < 0.1:
            h.append("Sender: " + self.address())
        if r.random() < 0.15:
            h.append("Reply-To: " + self.address())
        c = r.random()
        if c < 0.05 and self.mut("subject-encoded", 1):
            h.append("Subject: =?utf-8?B?w6l0w6k=?= and =?iso-8859-1?Q?caf=E9?=")
        elif c < 0.08 and self.mut("subject-folded", 1):
            h.append("Subject: " + self.words(4) + "\n\t " + self.words(4))
        elif c < 0.10 and self.mut("subject-8bit", 1):
            h.append("Subject: caf\xc3\xa9 " + self.words(2))
        elif c < 0.11 and self.mut("subject-quotes", 1):
            h.append('Subject: say "hi" \\ there')
        elif c < 0.95:
            h.append("Subject: " + self.words(r.randint(1, 8)))
        if r.random() < 0.9:
            h.append("Date: Mon, %d Apr 2019 08:41:45 +1000" % r.randint(1, 28))
        if r.random() < 0.8:
            h.append("Message-ID: <%d.%d@example.org>" % (r.randint(0, 1 << 30),
                                                         r.randint(0, 99)))
        if r.random() < 0.2:
            h.append("In-Reply-To: <%d@example.org>" % r.randint(0, 1 << 30))
        if self.mut("header-no-colon", 0.02):
            h.append("This line has no colon")
        if self.mut("header-8bit", 0.04):
            h.append("X-Eight: \xe9t\xe9 \xff")
        if self.mut("header-nul", 0.02):
            h.append("X-Nul: a\x00b")
        if self.mut("header-bare-cr", 0.03):
            h.append("X-CR: a\rb")
        if self.mut("header-long-line", 0.02):
            h.append("X-Long: " + "y" * r.choice((998, 2000)))
        if self.mut("header-continuation-first", 0.01):
            h.insert(0, " continuation of nothing")
        r.shuffle(h)
        return h

    # ---- parts ----

    def entity(self, depth, digest_child=False, message=False):
        """Header lines and body lines of one entity."""
        r = self.rng
        self.parts += 1
        headers = []
        if message:
            headers += self.envelope_headers()
            if r.random() < 0.8:
                headers.append("MIME-Version: 1.0")
        c = r.random()
        if depth >= self.max_depth or self.parts > 60:
            kind = "leaf"
        elif c < 0.35:
            kind = "multipart"
        elif c < 0.45:
            kind = "message"
        else:
            kind = "leaf"
        if digest_child and r.random() < 0.6:
            # no Content-Type: message/rfc822 by default (RFC 2046 5.1.5)
            self.muts.append("digest-default-type")
            h, b = self.entity(depth + 1, message=True)
            return headers, h + [""] + b
        if kind == "multipart":
            return self.multipart(depth, headers)
        if kind == "message":
            return self.message_part(depth, headers)
        return self.leaf(headers)

    def leaf(self, headers):
        r = self.rng
        ctype = r.choice(LEAF_TYPES)
        params = []
        if ctype.startswith("text/"):
            if r.random() < 0.8:
                params.append(self.charset_param())
            lines = self.text_lines(r.randint(0, 12))
        else:
            lines = None
        params += self.name_params()
        if self.mut("ct-missing", 0.1):
            ct = None
        else:
            ct = self.content_type(ctype, params)
        if ct:
            headers.append(ct)
        if lines is None:
            data = bytes(r.randrange(256) for _ in range(r.randint(0, 300)))
            cte, lines = self.encode_binary(data)
        else:
            cte, lines = self.encode_lines(lines)
        if cte:
            headers.append(cte)
        if r.random() < 0.15:
            headers.append("Content-Disposition: " + r.choice((
                "attachment", "inline", 'attachment; filename="a b.txt"',
                "attachment; filename*=utf-8''%C3%A9.txt", "", "=?x?q?y?=")))
        if r.random() < 0.05:
            headers.append("Content-ID: <%d@x>" % r.randint(0, 999))
        if r.random() < 0.05:
            headers.append("Content-Description: " + self.words(3))
        if r.random() < 0.03:
            headers.append("Content-Language: en, de")
        if r.random() < 0.02:
            headers.append("Content-Location: http://example.org/a")
        return headers, lines

    def encode_binary(self, data):
        r = self.rng
        cte = r.choice(("base64", "base64", "base64", "quoted-printable",
                        "binary", None))
        if cte == "base64":
            return self.cte_header(cte), self.base64_body(data)
        if cte == "quoted-printable":
            return self.cte_header(cte), self.qp_body(data)
        text = data.decode("latin-1").replace("\r", "").split("\n")
        self.muts.append("raw-binary")
        return (self.cte_header(cte) if cte else None), text

    def message_part(self, depth, headers):
        r = self.rng
        headers.append(self.content_type("message/rfc822", []))
        h, b = self.entity(depth + 1, message=True)
        inner = h + [""] + b
        if self.mut("rfc822-no-blank", 0.05):
            inner = h
        c = r.random()
        if c < 0.12 and self.mut("rfc822-base64", 1):
            headers.append(self.cte_header("base64"))
            return headers, self.base64_body("\r\n".join(inner)
                                             .encode("latin-1"))
        if c < 0.2 and self.mut("rfc822-qp", 1):
            headers.append(self.cte_header("quoted-printable"))
            return headers, self.qp_body("\n".join(inner).encode("latin-1"))
        if c < 0.25:
            headers.append(self.cte_header(r.choice(("7bit", "8bit",
                                                     "binary"))))
        return headers, inner

    def multipart(self, depth, headers):
        r = self.rng
        sub = r.choice(MULTI_SUBTYPES)
        b = self.boundary()
        params = []
        bp = self.param("boundary", b)
        c = r.random()
        if c < 0.05 and self.mut("boundary-missing", 1):
            pass
        elif c < 0.09 and self.mut("boundary-empty", 1):
            params.append('boundary=""')
            b = ""
        elif c < 0.12 and self.mut("boundary-param-twice", 1):
            params += [bp, self.param("boundary", "other" + b)]
        elif c < 0.15 and self.mut("boundary-after-double-semicolon", 1):
            params += ["charset=x;", bp]
        elif c < 0.17 and self.mut("boundary-uppercase-name", 1):
            params.append(bp.replace("boundary", "BOUNDARY", 1))
        elif c < 0.19 and self.mut("boundary-rfc2231", 1):
            params += ['boundary*0="%s"' % b[:3], 'boundary*1="%s"' % b[3:]]
        elif c < 0.21 and mime_token(b) and \
                self.mut("boundary-unterminated-quote", 1):
            params.append('boundary="' + b)
        else:
            params.append(bp)
        if sub == "signed" and r.random() < 0.5:
            params.append('protocol="application/pgp-signature"')
        if self.mut("multipart-no-ct", 0.02):
            pass
        else:
            headers.append(self.content_type("multipart/" + sub, params))
        if self.mut("multipart-cte", 0.03):
            headers.append(self.cte_header(r.choice(("7bit", "base64",
                                                     "quoted-printable"))))
        lines = []
        if r.random() < 0.4:
            lines += self.text_lines(r.randint(1, 3))
        delim = "--" + b
        n = r.choice((0, 1, 1, 2, 2, 3, 4, 6))
        for _ in range(n):
            line = delim
            if self.mut("delimiter-trailing-ws", 0.04):
                line += "  \t"
            if self.mut("delimiter-trailing-garbage", 0.02):
                line += " garbage"
            lines.append(line)
            h, body = self.entity(depth + 1, digest_child=sub == "digest")
            if self.mut("part-no-header", 0.05):
                h = []
            if self.mut("part-no-blank-line", 0.04):
                lines += h
                continue
            lines += h + [""] + body
        c = r.random()
        if c < 0.08 and self.mut("close-delimiter-missing", 1):
            pass
        else:
            lines.append(delim + "--")
            if self.mut("close-delimiter-twice", 0.02):
                lines.append(delim + "--")
            if r.random() < 0.3:
                lines += self.text_lines(r.randint(1, 3))
        return headers, lines


def finish(g, lines):
    """Join lines with mutated line endings, then message-level cuts."""
    r = g.rng
    c = r.random()
    if c < 0.40:
        eols = ["\r\n"]
    elif c < 0.75:
        eols = ["\n"]
    elif c < 0.9:
        g.muts.append("eol-mixed")
        eols = ["\r\n", "\n", "\r\n", "\r"]
    else:
        g.muts.append("eol-mixed-cr-crlf")
        eols = ["\r\n", "\n", "\r\r\n"]
    out = []
    for line in lines:
        out.append(line)
        eol = eols[0] if len(eols) == 1 else r.choice(eols)
        if line == "" and eol.startswith("\r\r") or \
                line == "" and eol == "\r":
            # no CR CR: Dovecot's save drops CRs around those in ways
            # mime_known.dovecot_view() does not model
            eol = "\r\n"
        out.append(eol)
    text = "".join(out)
    c = r.random()
    if c < 0.08 and g.mut("last-line-no-eol", 1):
        text = text.rstrip("\r\n")
    elif c < 0.12 and g.mut("last-line-bare-cr", 1):
        text = text.rstrip("\r\n") + "\r"
    elif c < 0.14 and g.mut("ends-cr-crlf", 1):
        text = text.rstrip("\r\n") + "\r\r\n"
    data = text.encode("latin-1")
    if g.mut("body-nul", 0.03):
        pos = outside_long_delimiter(g, data, r.randint(len(data) // 2,
                                                        len(data)))
        data = data[:pos] + b"\x00" + data[pos:]
    if g.mut("bare-cr-inside", 0.03):
        pos = outside_long_delimiter(g, data, r.randint(len(data) // 2,
                                                        len(data)))
        if data[pos - 1:pos] != b"\r" and data[pos:pos + 1] != b"\r":
            data = data[:pos] + b"\r" + data[pos:]
    if g.mut("truncated", 0.08) and len(data) > 20:
        cut = outside_quoted_header(data, outside_long_delimiter(
            g, data, r.randint(10, len(data) - 1)))
        data = data[:max(cut, 10)]
    return data


def outside_quoted_header(data, pos):
    """pos, or the start of its line if that is a Content-Type or
    Content-Disposition field with a quote: a value cut open there with a
    space in it is one Dovecot drops and no same-length rewrite makes it
    read as moat does (mime_known.py)."""
    start = data.rfind(b"\n", 0, pos) + 1
    line = data[start:pos]
    if line[:8].lower() == b"content-" and b'"' in line:
        return start
    return pos


def outside_long_delimiter(g, data, pos):
    """pos, or the start of the delimiter line of a boundary over 80
    characters that pos is inside: Dovecot reads only 80 characters of
    those (mime_known.py), so a line cut or changed after them is still
    a delimiter to it and not to moat."""
    for b in g.boundaries:
        if len(b) > 80:
            start = data.rfind(b"--" + b[:80].encode("latin-1"), 0, pos)
            if start >= 0:
                eol = data.find(b"\n", start)
                if eol == -1 or pos <= eol:
                    pos = start
    return pos


def generate(rng):
    """One message: (bytes, sorted mutation names)."""
    g = Gen(rng)
    c = rng.random()
    if c < 0.12:
        # a top-level message/rfc822
        g.muts.append("top-rfc822")
        headers = g.envelope_headers() + ["MIME-Version: 1.0"]
        h, b = g.message_part(1, headers)
    elif c < 0.14:
        g.muts.append("deep-nesting")
        g.max_depth = 60
        h, b = deep(g)
    else:
        h, b = g.entity(0, message=True)
    data = finish(g, h + [""] + b if not g.mut("no-body", 0.02) else h)
    if not data:
        data = b"X: y\r\n"
    return data, sorted(set(g.muts))


def deep(g):
    """A chain of multiparts (and message/rfc822 every few levels)."""
    r = g.rng
    depth = r.choice((20, 40, 60))
    headers = g.envelope_headers() + ["MIME-Version: 1.0"]
    boundaries = ["d%d" % i for i in range(depth)]
    inner = ["Content-Type: text/plain", "", "deep " * 3]
    for i in reversed(range(depth)):
        if i % 7 == 3:
            inner = ["Content-Type: message/rfc822", ""] + \
                ["From: level%d@example.org" % i, "Subject: l%d" % i,
                 "MIME-Version: 1.0"] + inner
            continue
        b = boundaries[i]
        inner = ["Content-Type: multipart/mixed; boundary=" + b, "",
                 "--" + b] + inner + ["--" + b, "", "sibling %d" % i,
                                      "--" + b + "--"]
    return headers + inner[:1], inner[2:]


def messages(seed, count):
    """count generated messages for seed: [(bytes, mutations)]."""
    rng = random.Random(seed)
    return [generate(rng) for _ in range(count)]


if __name__ == "__main__":
    import sys
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    for data, muts in messages(seed, n):
        sys.stdout.buffer.write(b"=== " + " ".join(muts).encode() + b"\n")
        sys.stdout.buffer.write(data + b"\n")
