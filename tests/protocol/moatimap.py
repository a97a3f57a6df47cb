"""A small raw-socket IMAP client for the protocol tests.

It sends exactly the bytes a test asks for and reads responses line by
line, reading literals ({N} at the end of a line) by count, so tests can
check the protocol byte for byte. Response data is parsed on demand into
Python values: atoms are str, quoted strings and literals are bytes, NIL
is None and parenthesized lists are lists.
"""

import re
import socket
import time

LITERAL_RE = re.compile(rb"\{(\d+)\+?\}$")
CODE_RE = re.compile(rb"^\[([^\]]*)\]")
EXPUNGE_RE = re.compile(rb"^\* (\d+) EXPUNGE\b", re.IGNORECASE)
# A response line (without literals) longer than this is a server bug.
MAX_LINE = 1024 * 1024


class ConnectionClosed(Exception):
    """The server closed the connection; untagged holds what came before."""

    def __init__(self, untagged=None, partial=b""):
        super().__init__(f"connection closed (untagged={untagged!r}, partial={partial!r})")
        self.untagged = untagged or []
        self.partial = partial


def read_greeting(sock):
    """Reads one CRLF-terminated line from a plain socket."""
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionClosed(partial=data)
        data += chunk
        if len(data) > MAX_LINE:
            raise ValueError("greeting too long")
    return data[:-2]


class Response:
    """The untagged lines and the tagged status line of one command."""

    def __init__(self, tag, line, untagged):
        self.tag = tag
        self.line = line
        self.untagged = untagged
        rest = line[len(tag) + 1:] if tag else line
        status, _, self.text = rest.partition(b" ")
        self.status = status.decode("ascii", "replace").upper()

    @property
    def ok(self):
        return self.status == "OK"

    @property
    def code(self):
        """The response code in [brackets] of the tagged line, or None."""
        return response_code(self.text)

    def untagged_with(self, word):
        """Untagged lines whose first or second word is word (e.g. EXISTS)."""
        word = word.upper().encode()
        found = []
        for line in self.untagged:
            parts = line.split(b" ", 3)
            if len(parts) > 1 and parts[1].upper() == word:
                found.append(line)
            elif len(parts) > 2 and parts[2].upper() == word:
                found.append(line)
        return found

    def fetches(self):
        """{seq: {ITEM: value}} of the untagged FETCH responses (merged),
        numbered as after the last response: each "* N EXPUNGE" drops N
        and renumbers the messages above it (RFC 9051 7.5.1), so a FETCH
        sent after it (an unsolicited flag update at the end of a UID
        command) merges with the message it names, not its neighbour."""
        result = {}
        for line in self.untagged:
            m = EXPUNGE_RE.match(line)
            if m:
                gone = int(m.group(1))
                result = {(seq - 1 if seq > gone else seq): items
                          for seq, items in result.items() if seq != gone}
                continue
            parsed = parse_fetch(line)
            if parsed:
                seq, items = parsed
                result.setdefault(seq, {}).update(items)
        return result

    def __repr__(self):
        return f"Response({self.line!r}, untagged={self.untagged!r})"


def response_code(text):
    m = CODE_RE.match(text)
    return m.group(1).decode("ascii", "replace") if m else None


class ImapClient:
    def __init__(self, host, port, timeout=30.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.buf = b""
        self.tag_no = 0
        self.greeting = None
        self.closed = False

    # -- raw I/O

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            self.closed = True
            raise ConnectionClosed(partial=self.buf)
        self.buf += chunk

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_raw_line(self):
        """One line up to CRLF (not included)."""
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            if len(self.buf) > MAX_LINE:
                raise ValueError(f"response line longer than {MAX_LINE}")
            self._fill()

    def read_line(self):
        """One response: a line with its literals kept inline as sent
        ({N} CRLF data), without the final CRLF."""
        line = self.read_raw_line()
        while True:
            m = LITERAL_RE.search(line)
            if not m:
                return line
            line += b"\r\n" + self.read_exact(int(m.group(1)))
            line += self.read_raw_line()

    def read_greeting(self):
        return self.read_line()

    def read_line_within(self, timeout):
        """read_line() if a line starts arriving within timeout, else None
        (nothing is consumed then)."""
        deadline = time.monotonic() + timeout
        old = self.sock.gettimeout()
        try:
            while b"\r\n" not in self.buf:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.sock.settimeout(remaining)
                try:
                    self._fill()
                except socket.timeout:
                    return None
        finally:
            self.sock.settimeout(old)
        return self.read_line()

    # -- commands

    def next_tag(self):
        self.tag_no += 1
        return f"a{self.tag_no:03d}"

    def read_tagged(self, tag):
        """Reads until the tagged response of tag; untagged lines are kept.
        A continuation request ('+') ends the read too (status '+')."""
        untagged = []
        btag = tag.encode() if isinstance(tag, str) else tag
        while True:
            try:
                line = self.read_line()
            except ConnectionClosed as e:
                raise ConnectionClosed(untagged, e.partial) from None
            if line.startswith(b"* "):
                untagged.append(line)
            elif line.startswith(b"+"):
                r = Response(None, line, untagged)
                r.status = "+"
                return r
            elif line.startswith(btag + b" "):
                return Response(btag.decode(), line, untagged)
            else:
                raise AssertionError(f"unexpected line waiting for {tag}: {line!r}")

    def command(self, cmd, tag=None):
        """Sends 'tag cmd CRLF' and returns its Response."""
        tag = tag or self.next_tag()
        if isinstance(cmd, str):
            cmd = cmd.encode()
        self.send(tag.encode() + b" " + cmd + b"\r\n")
        return self.read_tagged(tag)

    def continue_with(self, tag, data):
        """Sends data (a continuation response) and reads on for tag."""
        if isinstance(data, str):
            data = data.encode()
        self.send(data)
        return self.read_tagged(tag)

    def append(self, mailbox, message, flags=None, sync=True):
        """APPEND with a synchronizing or non-synchronizing literal."""
        tag = self.next_tag()
        head = f"{tag} APPEND {mailbox} "
        if flags is not None:
            head += "(" + " ".join(flags) + ") "
        if sync:
            self.send(f"{head}{{{len(message)}}}\r\n")
            cont = self.read_tagged(tag)
            if cont.status != "+":
                return cont
            self.send(message + b"\r\n")
        else:
            self.send(f"{head}{{{len(message)}+}}\r\n".encode() + message + b"\r\n")
        return self.read_tagged(tag)

    def wait_closed(self, timeout):
        """Reads (and returns) whatever comes until the server closes the
        connection; raises socket.timeout if it does not within timeout."""
        deadline = time.monotonic() + timeout
        data = self.buf
        self.buf = b""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout(f"still open after {timeout}s; got {data!r}")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.closed = True
                return data
            data += chunk

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
        self.closed = True


# ---- response data parser --------------------------------------------------

ATOM_END = b" ()"


def parse_value(data, pos):
    """Parses one value at data[pos:]; returns (value, new_pos)."""
    c = data[pos:pos + 1]
    if c == b"(":
        items = []
        pos += 1
        while True:
            while data[pos:pos + 1] == b" ":
                pos += 1
            if data[pos:pos + 1] == b")":
                return items, pos + 1
            if pos >= len(data):
                raise ValueError(f"unterminated list in {data!r}")
            value, pos = parse_value(data, pos)
            items.append(value)
    if c == b'"':
        out = bytearray()
        pos += 1
        while True:
            ch = data[pos:pos + 1]
            if ch == b"":
                raise ValueError(f"unterminated string in {data!r}")
            if ch == b"\\":
                out += data[pos + 1:pos + 2]
                pos += 2
            elif ch == b'"':
                return bytes(out), pos + 1
            else:
                out += ch
                pos += 1
    if c == b"{":
        end = data.index(b"}", pos)
        size = int(data[pos + 1:end].rstrip(b"+"))
        start = end + 1
        if data[start:start + 2] != b"\r\n":
            raise ValueError(f"literal without CRLF in {data!r}")
        start += 2
        return data[start:start + size], start + size
    # atom, possibly with [section] (which may hold spaces) and <partial>
    start = pos
    depth = 0
    while pos < len(data):
        ch = data[pos:pos + 1]
        if ch == b"[":
            depth += 1
        elif ch == b"]":
            depth -= 1
        elif depth == 0 and ch in (b" ", b"(", b")"):
            break
        pos += 1
    atom = data[start:pos].decode("ascii", "replace")
    return (None if atom.upper() == "NIL" else atom), pos


def parse_fetch(line):
    """'* N FETCH (...)' -> (N, {ITEM: value}); None for other lines."""
    m = re.match(rb"^\* (\d+) FETCH ", line, re.IGNORECASE)
    if not m:
        return None
    value, _ = parse_value(line, m.end())
    if not isinstance(value, list) or len(value) % 2:
        raise ValueError(f"bad FETCH response {line!r}")
    items = {}
    for i in range(0, len(value), 2):
        items[str(value[i]).upper()] = value[i + 1]
    return int(m.group(1)), items
