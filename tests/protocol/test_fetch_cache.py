"""ENVELOPE, BODY and BODYSTRUCTURE from the mail cache (imap/imap-fetch-cache.c).

The first FETCH of these items parses the message files and caches the
answers; later FETCHes (any session, any process of the user) answer from
moat.index.cache without opening a message file. Proved two ways: the
message files are made unreadable after the first FETCH (the imap process
runs as the mail user, so mode 000 stops it even when the test runs as
root) and the answers stay the same while BODY[] fails; and the imap
process's debug line counts the files each FETCH opened.
A garbled cache costs parsing, never a wrong answer."""

import os
import zlib
import re

import pytest

from moatserver import wait_for

MULTIPART = (b"From: =?ISO-8859-1?Q?Ren=E9e?= <renee@example.org>\r\n"
             b"To: a@example.org, \"Bob B\" <bob@example.org>\r\n"
             b"Cc: list@example.org\r\n"
             b"Subject: multipart %d\r\n"
             b"Date: Mon, 29 Apr 2019 08:41:45 +1000\r\n"
             b"Message-ID: <mp%d@example.org>\r\n"
             b"MIME-Version: 1.0\r\n"
             b"Content-Type: multipart/mixed; boundary=\"XX\"\r\n\r\n"
             b"preamble\r\n--XX\r\n"
             b"Content-Type: text/plain; charset=utf-8\r\n"
             b"Content-Transfer-Encoding: quoted-printable\r\n\r\n"
             b"Gr=C3=BC=C3=9Fe part one\r\n--XX\r\n"
             b"Content-Type: message/rfc822\r\n\r\n"
             b"From: inner@example.org\r\nSubject: inner\r\n\r\n"
             b"inner body\r\n--XX\r\n"
             b"Content-Type: application/octet-stream; name=\"a.bin\"\r\n"
             b"Content-Transfer-Encoding: base64\r\n"
             b"Content-Disposition: attachment; filename=\"a.bin\"\r\n\r\n"
             b"AAECAwQ=\r\n--XX--\r\n")
PLAIN = (b"From: Plain Sender <plain@example.org>\r\n"
         b"To: someone@example.org\r\n"
         b"Subject: plain %d \xc3\xa9 8-bit\r\n"
         b"In-Reply-To: <mp%d@example.org>\r\n\r\n"
         b"plain body line\r\n")
N_MESSAGES = 12
ITEMS = "(UID FLAGS INTERNALDATE ENVELOPE BODY BODYSTRUCTURE)"
DEBUG_RE = re.compile(r"FETCH: (\d+) messages, (\d+) message files opened, "
                      r"(\d+) texts from the cache, (\d+) parsed")


def message(i):
    template = MULTIPART if i % 2 else PLAIN
    return template % (i, i)


def fill(server):
    c = server.login()
    for i in range(N_MESSAGES):
        r = c.append("INBOX", message(i))
        assert r.ok, r
    # the first SELECT takes \Recent (RFC 3501 2.3.2): later sessions
    # then answer the same FLAGS
    assert c.command("SELECT INBOX").ok and c.command("CLOSE").ok
    return c


def fetch_all(c, items=ITEMS):
    r = c.command(f"FETCH 1:* {items}")
    assert r.ok, r
    assert len(r.untagged) == N_MESSAGES, r
    return r.untagged


def message_files(server):
    cur = server.maildir("testuser1") / "cur"
    return [cur / name for name in os.listdir(cur)]


def set_mode(server, mode):
    for path in message_files(server):
        os.chmod(path, mode)


def rewrite_cache_then_fetch(server, c, first, change):
    """Logs c out, lets change() edit testuser1's moat.index.cache in place,
    then checks that a new session's FETCH answers as before (first) and
    that the answers were cached again: with the message files unreadable
    the FETCH still answers. Returns the cache file's path."""
    c.command("LOGOUT")
    server.close_clients()
    cache = server.maildir("testuser1") / "moat.index.cache"
    data = bytearray(cache.read_bytes())
    change(data)
    cache.write_bytes(bytes(data))
    c = server.login()
    assert c.command("SELECT INBOX").ok
    assert fetch_all(c) == first
    set_mode(server, 0)
    try:
        assert fetch_all(c) == first
    finally:
        set_mode(server, 0o600)
    return cache


def debug_lines(server, count, regex=DEBUG_RE):
    """The first count FETCH debug lines as (messages, files opened, texts
    from the cache, texts parsed) (or what regex's groups say); the log
    arrives through master."""
    def lines():
        text = server.log_path.read_text(errors="replace")
        found = [tuple(int(x) for x in m.groups())
                 for m in regex.finditer(text)]
        return found if len(found) >= count else None
    found = wait_for(lines, 30)
    assert found, "missing FETCH debug lines:\n" + server.logs()
    return found


@pytest.mark.moat_settings(log_debug="yes")
def test_second_fetch_opens_no_file(moat_server):
    c = fill(moat_server)
    assert c.command("SELECT INBOX").ok
    first = fetch_all(c)
    assert len(message_files(moat_server)) == N_MESSAGES
    set_mode(moat_server, 0)
    try:
        # the same session, and a new one (a later command of the process)
        second = fetch_all(c)
        assert second == first
        c2 = moat_server.login()
        assert c2.command("EXAMINE INBOX").ok
        assert fetch_all(c2) == first
        # each item alone, and in another order
        env = fetch_all(c2, "(ENVELOPE)")
        assert [re.sub(rb"^\* \d+ FETCH \(", b"", x)[:9] for x in env] == \
            [b"ENVELOPE "] * N_MESSAGES
        fetch_all(c2, "(BODYSTRUCTURE ENVELOPE BODY)")
        # proof that the files really are unreadable to the server
        r = c2.command("FETCH 1 BODY.PEEK[]")
        assert b"plain body line" not in b"".join(r.untagged)
    finally:
        set_mode(moat_server, 0o600)
    stats = debug_lines(moat_server, 6)
    # (messages, files opened, from the cache, parsed)
    assert stats[0] == (N_MESSAGES, N_MESSAGES, 0, 3 * N_MESSAGES)
    for s in stats[1:5]:
        assert s[1] == 0 and s[3] == 0 and s[2] > 0, stats
    # after the chmod back, BODY[] works again
    r = c.command("FETCH 1 BODY.PEEK[TEXT]")
    assert r.ok and b"plain body line" in b"".join(r.untagged)


@pytest.mark.moat_settings(log_debug="yes")
def test_only_fetched_items_are_cached(moat_server):
    c = fill(moat_server)
    assert c.command("SELECT INBOX").ok
    fetch_all(c, "(ENVELOPE)")
    fetch_all(c, "(ENVELOPE BODYSTRUCTURE)")
    stats = debug_lines(moat_server, 2)
    # BODYSTRUCTURE was not cached by the first FETCH: parsed now
    assert stats[0][1:] == (N_MESSAGES, 0, N_MESSAGES)
    assert stats[1][1:] == (N_MESSAGES, N_MESSAGES, N_MESSAGES)
    # sections still parse the file (their offsets are not cached)
    r = c.command("FETCH 2 (BODY.PEEK[1] BODY.PEEK[2.HEADER] ENVELOPE)")
    assert r.ok and b"part one" in b"".join(r.untagged)
    # one parse, whose open file the sections read too; the ENVELOPE
    # came from the cache
    assert debug_lines(moat_server, 3)[2][1:] == (1, 1, 0)


def test_cache_survives_expunge_and_restart(moat_server):
    c = fill(moat_server)
    assert c.command("SELECT INBOX").ok
    first = fetch_all(c)
    assert c.command("STORE 1,5 +FLAGS.SILENT (\\Deleted)").ok
    assert c.command("EXPUNGE").ok
    c.command("LOGOUT")
    moat_server.close_clients()
    set_mode(moat_server, 0)
    try:
        c = moat_server.login()
        assert c.command("SELECT INBOX").ok
        r = c.command(f"FETCH 1:* {ITEMS}")
        assert r.ok
    finally:
        set_mode(moat_server, 0o600)
    # sequence numbers moved down; the answers by UID did not change
    def by_uid(lines):
        return {re.search(rb"UID (\d+)", x).group(1):
                re.sub(rb"^\* \d+ FETCH ", b"", x) for x in lines}
    expected = by_uid(first)
    del expected[b"1"], expected[b"5"]
    assert by_uid(r.untagged) == expected


def test_garbled_cache_is_a_miss(moat_server):
    c = fill(moat_server)
    assert c.command("SELECT INBOX").ok
    first = fetch_all(c)
    def flip_records(data):
        assert len(data) > 2072
        # every record byte flipped: every lookup fails its checks
        for i in range(2072, len(data)):
            data[i] ^= 0x55
    rewrite_cache_then_fetch(moat_server, c, first, flip_records)


BYTES_RE = re.compile(r"FETCH: (\d+) messages, (\d+) message files opened, "
                      r"(\d+) texts from the cache, (\d+) parsed, "
                      r"\d+ records looked at, (\d+) bytes read to parse")


@pytest.mark.moat_settings(log_debug="yes")
def test_envelope_reads_only_the_header(moat_server):
    """An ENVELOPE miss reads the message only up to the end of its
    header: a message with a 2 MB attachment costs one 32 KiB read, and
    the envelope equals the one a full parse gives."""
    c = moat_server.login()
    big = (b"From: Big Sender <big@example.org>\r\nTo: a@example.org\r\n"
           b"Subject: big attachment\r\nMessage-ID: <big@example.org>\r\n"
           b"MIME-Version: 1.0\r\n"
           b"Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n"
           b"--b\r\nContent-Type: application/octet-stream\r\n"
           b"Content-Transfer-Encoding: base64\r\n\r\n" +
           b"QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\r\n"
           * 34000 + b"--b--\r\n")
    assert len(big) > 2_000_000
    for mbox in ("a", "b"):
        assert c.command(f"CREATE {mbox}").ok
        assert c.append(mbox, big).ok
    assert c.command("SELECT a").ok
    r = c.command("FETCH 1 (ENVELOPE)")
    assert r.ok, r
    env_alone = r.untagged[0].split(b"ENVELOPE ", 1)[1]
    assert c.command("SELECT b").ok
    # a section needs the whole tree: its ENVELOPE comes from that parse
    r = c.command("FETCH 1 (BODY.PEEK[1.MIME] ENVELOPE)")
    assert r.ok, r
    env_full = r.untagged[0].split(b"ENVELOPE ", 1)[1].split(b" BODY[", 1)[0]
    assert env_alone.startswith(env_full.rstrip(b")")), (env_alone, env_full)
    stats = debug_lines(moat_server, 2, BYTES_RE)
    # (messages, files opened, from the cache, parsed, bytes read)
    assert stats[0][:4] == (1, 1, 0, 1) and 0 < stats[0][4] <= 32768, stats
    assert stats[1][4] == len(big), stats


@pytest.mark.moat_settings(log_debug="yes")
def test_header_and_text_read_only_the_header(moat_server):
    """BODY[HEADER], RFC822.HEADER, BODY[TEXT] and HEADER.FIELDS.NOT of
    the message need only where its header ends: the first parses the
    header alone (one 32 KiB read of a 2 MB message) and caches where it
    ends, the others parse nothing, TEXT streams the rest, and each is
    byte for byte what the file holds (with LF line ends made CRLF, as
    BODY[] sends them). BODY[1] parses it all."""
    c = moat_server.login()
    header = (b"From: Big Sender <big@example.org>\nTo: a@example.org\n"
              b"Subject: big attachment\nMIME-Version: 1.0\n"
              b"Content-Type: multipart/mixed; boundary=\"b\"\n\n")
    body = (b"--b\nContent-Type: application/octet-stream\n"
            b"Content-Transfer-Encoding: base64\n\n" +
            b"QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\n"
            * 34000 + b"--b--\n")
    assert c.append("INBOX", header + body).ok
    assert c.command("SELECT INBOX").ok
    crlf = lambda b: b.replace(b"\n", b"\r\n")
    for item, name, want in (
            ("BODY.PEEK[HEADER]", "BODY[HEADER]", crlf(header)),
            ("RFC822.HEADER", "RFC822.HEADER", crlf(header)),
            ("BODY.PEEK[TEXT]", "BODY[TEXT]", crlf(body)),
            ("BODY.PEEK[TEXT]<100.50>", "BODY[TEXT]<100>",
             crlf(body)[100:150]),
            ("BODY.PEEK[HEADER.FIELDS.NOT (To From)]",
             "BODY[HEADER.FIELDS.NOT (TO FROM)]",
             crlf(b"".join(line + b"\n" for line in header.split(b"\n")
                           if line and not line.startswith((b"To", b"From")))
                  + b"\n"))):
        r = c.command(f"FETCH 1 ({item})")
        assert r.ok, r
        got = r.fetches()[1][name]
        assert got == want, (item, got[:200], want[:200])
    r = c.command("FETCH 1 (BODY.PEEK[1])")
    assert r.ok, r
    stats = debug_lines(moat_server, 6, BYTES_RE)
    # (messages, files opened, from the cache, parsed, bytes read)
    assert stats[0][1] == 1 and 0 < stats[0][4] <= 32768, stats
    for s in stats[1:5]:
        assert s[1] == 1 and s[4] == 0, stats
    assert stats[5][4] == len(header + body), stats
    # a new session (no memory of the parse) finds it in the cache too
    c2 = moat_server.login()
    assert c2.command("EXAMINE INBOX").ok
    r = c2.command("FETCH 1 (BODY.PEEK[TEXT]<0.20>)")
    assert r.ok and r.fetches()[1]["BODY[TEXT]<0>"] == crlf(body)[:20], r
    assert debug_lines(moat_server, 7, BYTES_RE)[6][4] == 0


@pytest.mark.moat_settings(log_debug="yes")
def test_parse_for_a_section_caches_the_envelope(moat_server):
    """A FETCH that parsed messages for something else (a section,
    BODYSTRUCTURE) caches their ENVELOPE too, so the first FETCH ENVELOPE
    afterwards opens no file."""
    c = fill(moat_server)
    assert c.command("SELECT INBOX").ok
    assert c.command("FETCH 1:* (BODY.PEEK[1])").ok
    assert c.command("FETCH 1:6 (BODYSTRUCTURE)").ok
    first = fetch_all(c, "(ENVELOPE)")
    stats = debug_lines(moat_server, 3)
    # (one open per message: the parse's file serves the section)
    assert stats[0][1] == N_MESSAGES and stats[0][3] == 0, stats
    assert stats[2] == (N_MESSAGES, 0, N_MESSAGES, 0), stats
    # and it is the ENVELOPE a parse for it alone gives
    c2 = moat_server.login()
    assert c2.command("CREATE copy").ok
    assert c2.command("SELECT INBOX").ok
    for i in range(N_MESSAGES):
        assert c2.append("copy", message(i)).ok
    assert c2.command("SELECT copy").ok
    again = c2.command("FETCH 1:* (ENVELOPE)").untagged
    assert [re.sub(rb"^\* \d+ ", b"", x) for x in again] == \
        [re.sub(rb"^\* \d+ ", b"", x) for x in first]


def test_header_only_envelope_equals_full_parse(moat_server):
    """Over generated adversarial messages (tests/compare/mime_gen.py:
    broken headers, bare CRs, top-level message/rfc822, no blank line...)
    the ENVELOPE of a header-only parse equals that of a full parse."""
    import pathlib
    import sys
    compare = pathlib.Path(__file__).resolve().parent.parent / "compare"
    sys.path.insert(0, str(compare))
    import mime_gen
    from mime_diff import fetch_items
    msgs = [data for data, _ in mime_gen.messages(3, 150)]
    c = moat_server.login()
    for mbox in ("alone", "full"):
        assert c.command(f"CREATE {mbox}").ok
        for data in msgs:
            assert c.append(mbox, data).ok
    envelopes = {}
    for mbox, items in (("alone", "(ENVELOPE)"),
                        ("full", "(BODYSTRUCTURE ENVELOPE)")):
        assert c.command(f"SELECT {mbox}").ok
        r = c.command(f"FETCH 1:* {items}")
        assert r.ok and len(r.untagged) == len(msgs), r
        envelopes[mbox] = [fetch_items(line)["ENVELOPE"]
                           for line in r.untagged]
    for i, (a, b) in enumerate(zip(envelopes["alone"], envelopes["full"])):
        assert a == b, (i, msgs[i][:300])


@pytest.mark.moat_settings(log_debug="yes")
def test_cache_file_of_the_older_format_is_rebuilt(moat_server):
    """A moat.index.cache of an older format (2: records checked with
    zlib's crc32, not CRC-32C) is never read: the next FETCH parses the
    messages again,
    answers byte for byte the same, and writes a file of the current
    format that later FETCHes are served from."""
    c = fill(moat_server)
    assert c.command("SELECT INBOX").ok
    first = fetch_all(c)
    def claim_format_2(data):
        assert data[:4] == b"MOCA" and data[4] == 3
        # the same file claiming format 2, with a valid header crc
        data[4] = 2
        data[20:24] = b"\0\0\0\0"
        data[20:24] = zlib.crc32(bytes(data[:2072])).to_bytes(4, "little")
    cache = rewrite_cache_then_fetch(moat_server, c, first, claim_format_2)
    assert cache.read_bytes()[4] == 3
    stats = debug_lines(moat_server, 3)
    # (messages, files opened, from the cache, parsed)
    assert stats[1][1] == N_MESSAGES and stats[1][2] == 0, stats
    assert stats[2][1] == 0 and stats[2][3] == 0, stats
    assert "corrupted" not in moat_server.logs()


MEMO_RE = re.compile(r"FETCH: (\d+) messages, .*, (\d+) texts already "
                     r"unpacked")


def sessions_fetch_three_times(server):
    """A FETCH that parses, then one from the cache in another session,
    then one in a third; all three answer the same. Returns the debug
    lines' (messages, texts already unpacked)."""
    c = fill(server)
    assert c.command("SELECT INBOX").ok
    first = fetch_all(c)
    for _ in range(2):
        other = server.login()
        assert other.command("EXAMINE INBOX").ok
        assert fetch_all(other) == first
    return debug_lines(server, 3, MEMO_RE)


@pytest.mark.moat_settings(log_debug="yes")
def test_sessions_share_unpacked_texts(moat_server):
    # imap_fetch_text_memo (imap/imap-text-memo.h): the second FETCH
    # unpacks the cached texts, the third session gets them unpacked.
    # The memo goes by the stored bytes, so equal texts of different
    # messages are unpacked once: the plain messages share their BODY
    # and BODYSTRUCTURE, and so do the multipart ones (only the headers
    # differ): 12 ENVELOPEs and 4 others are unpacked, 20 come unpacked.
    stats = sessions_fetch_three_times(moat_server)
    assert stats == [(N_MESSAGES, 0), (N_MESSAGES, 3 * N_MESSAGES - 16),
                     (N_MESSAGES, 3 * N_MESSAGES)], stats


@pytest.mark.moat_settings(log_debug="yes", imap_fetch_text_memo="0")
def test_text_memo_off(moat_server):
    stats = sessions_fetch_three_times(moat_server)
    assert stats == [(N_MESSAGES, 0)] * 3, stats


@pytest.mark.moat_settings(log_debug="yes", imap_fetch_text_memo="4k")
def test_small_text_memo_answers_right(moat_server):
    # a memo too small for the folder's texts: overwritten and wrapped
    # many times within one FETCH; every answer is still the message's own
    c = fill(moat_server)
    assert c.command("SELECT INBOX").ok
    first = fetch_all(c)
    for _ in range(4):
        assert fetch_all(c) == first
    # and another session, reading them in the other direction
    c2 = moat_server.login()
    assert c2.command("EXAMINE INBOX").ok
    r = c2.command(f"FETCH {N_MESSAGES}:1 {ITEMS}")
    assert r.ok and sorted(r.untagged) == sorted(first)
