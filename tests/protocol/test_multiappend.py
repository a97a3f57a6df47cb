"""MULTIAPPEND (RFC 3502), APPENDLIMIT (RFC 7889) and literals in APPEND
(RFC 7888): several messages in one APPEND, all or none."""

import re

import pytest

MSG = b"From: a@example.com\r\nSubject: m%d\r\n\r\nbody %d\r\n"


def msg(i):
    return MSG % (i, i)


def count_messages(c, box="INBOX"):
    r = c.command(f"STATUS {box} (MESSAGES)")
    assert r.ok, r
    return int(re.search(rb"MESSAGES (\d+)", r.untagged[0]).group(1))


def multiappend_nonsync(c, box, parts):
    """parts: [(flags or None, message)] sent as {n+} literals at once."""
    tag = c.next_tag()
    data = f"{tag} APPEND {box}".encode()
    for flags, m in parts:
        data += b" "
        if flags is not None:
            data += b"(" + flags.encode() + b") "
        data += b"{%d+}\r\n" % len(m) + m
    c.send(data + b"\r\n")
    return c.read_tagged(tag)


def test_capability_advertises_multiappend_and_appendlimit(moat_server):
    c = moat_server.login()
    caps = c.command("CAPABILITY").untagged[0].split()
    assert b"MULTIAPPEND" in caps
    limits = [x for x in caps if x.startswith(b"APPENDLIMIT=")]
    assert len(limits) == 1 and int(limits[0].split(b"=")[1]) > 0, caps


def test_multiappend_sync_literals(moat_server):
    c = moat_server.login()
    tag = c.next_tag()
    m1, m2, m3 = msg(1), msg(2), msg(3)
    c.send(f"{tag} APPEND INBOX (\\Seen) {{{len(m1)}}}\r\n")
    assert c.read_tagged(tag).status == "+"
    c.send(m1 + f' (\\Flagged) "01-Jan-2020 10:00:00 +0000" {{{len(m2)}}}\r\n'
           .encode())
    assert c.read_tagged(tag).status == "+"
    c.send(m2 + f" {{{len(m3)}}}\r\n".encode())
    assert c.read_tagged(tag).status == "+"
    c.send(m3 + b"\r\n")
    r = c.read_tagged(tag)
    assert r.ok, r
    m = re.search(rb"\[APPENDUID (\d+) (\d+):(\d+)\]", r.line)
    assert m, r
    first, last = int(m.group(2)), int(m.group(3))
    assert last - first == 2
    assert c.command("SELECT INBOX").ok
    r = c.command(f"UID FETCH {first}:{last} (UID FLAGS INTERNALDATE "
                  "BODY.PEEK[])")
    assert r.ok, r
    f = r.fetches()
    assert len(f) == 3
    by_uid = {int(v["UID"]): v for v in f.values()}
    assert "\\Seen" in by_uid[first]["FLAGS"]
    assert "\\Flagged" in by_uid[first + 1]["FLAGS"]
    assert b"01-Jan-2020" in by_uid[first + 1]["INTERNALDATE"]
    assert by_uid[first + 2]["BODY[]"] == m3


def test_multiappend_nonsync_literals(moat_server):
    c = moat_server.login()
    parts = [(None, msg(i)) for i in range(5)]
    r = multiappend_nonsync(c, "INBOX", parts)
    assert r.ok, r
    m = re.search(rb"\[APPENDUID \d+ 1:5\]", r.line)
    assert m, r
    assert count_messages(c) == 5
    # a single message still gets a single UID
    r = c.append("INBOX", msg(9))
    assert r.ok and re.search(rb"\[APPENDUID \d+ 6\]", r.line), r


def test_multiappend_too_big_in_middle_stores_nothing(moat_server):
    c = moat_server.login()
    limit = None
    for cap in c.command("CAPABILITY").untagged[0].split():
        if cap.startswith(b"APPENDLIMIT="):
            limit = int(cap.split(b"=")[1])
    tag = c.next_tag()
    m1 = msg(1)
    c.send(f"{tag} APPEND INBOX {{{len(m1)}}}\r\n")
    assert c.read_tagged(tag).status == "+"
    # the second literal announces more than APPENDLIMIT: NO instead of +
    c.send(m1 + f" {{{limit + 1}}}\r\n".encode())
    r = c.read_tagged(tag)
    assert r.status == "NO" and r.code == "TOOBIG", r
    assert count_messages(c) == 0
    assert c.command("NOOP").ok


@pytest.mark.moat_settings(imap_max_append_size=1000)
def test_appendlimit_setting_and_nonsync_too_big(moat_server):
    c = moat_server.login()
    caps = c.command("CAPABILITY").untagged[0].split()
    assert b"APPENDLIMIT=1000" in caps, caps
    r = c.command("STATUS INBOX (APPENDLIMIT MESSAGES)")
    assert r.ok and b"APPENDLIMIT 1000" in r.untagged[0], r
    big = b"Subject: big\r\n\r\n" + b"x" * 2000 + b"\r\n"
    r = multiappend_nonsync(c, "INBOX", [(None, msg(1)), (None, big),
                                         (None, msg(3))])
    assert r.status == "NO" and r.code == "TOOBIG", r
    assert c.command("NOOP").ok
    assert count_messages(c) == 0


def test_multiappend_bad_flag_in_middle_stores_nothing(moat_server):
    c = moat_server.login()
    r = multiappend_nonsync(c, "INBOX", [(None, msg(1)), ("\\Bogus", msg(2)),
                                         (None, msg(3))])
    assert r.status == "BAD", r
    assert c.command("NOOP").ok
    assert count_messages(c) == 0
    # nothing left behind in tmp/ either
    tmp = moat_server.maildir("testuser1") / "tmp"
    assert not list(tmp.iterdir())


def test_multiappend_empty_literal_cancels(moat_server):
    c = moat_server.login()
    r = multiappend_nonsync(c, "INBOX", [(None, msg(1)), (None, b"")])
    assert r.status == "NO", r
    assert count_messages(c) == 0
    assert c.command("NOOP").ok


def test_multiappend_syntax_error_after_literal(moat_server):
    c = moat_server.login()
    m1 = msg(1)
    tag = c.next_tag()
    c.send(f"{tag} APPEND INBOX {{{len(m1)}+}}\r\n".encode() + m1 +
           b" (\\Seen\r\n")
    r = c.read_tagged(tag)
    assert r.status == "BAD", r
    assert count_messages(c) == 0
    assert c.command("NOOP").ok


def test_multiappend_to_missing_mailbox(moat_server):
    c = moat_server.login()
    r = multiappend_nonsync(c, "nosuch", [(None, msg(1)), (None, msg(2))])
    assert r.status == "NO" and r.code == "TRYCREATE", r
    assert c.command("NOOP").ok


def test_multiappend_selected_mailbox_sees_all(moat_server):
    c = moat_server.login()
    assert c.command("SELECT INBOX").ok
    r = multiappend_nonsync(c, "INBOX", [(None, msg(i)) for i in range(3)])
    assert r.ok, r
    assert b"* 3 EXISTS" in r.untagged, r


def test_status_appendlimit_in_list_status(moat_server):
    c = moat_server.login()
    r = c.command('LIST "" INBOX RETURN (STATUS (APPENDLIMIT))')
    assert r.ok, r
    st = r.untagged_with("STATUS")
    assert st and b"APPENDLIMIT " in st[0], r


def test_nonsync_literal_in_other_commands(moat_server):
    """{n+} works outside APPEND too (RFC 7888 LITERAL+)."""
    c = moat_server.login()
    name = b"lit box"
    tag = c.next_tag()
    c.send(tag.encode() + b" CREATE {%d+}\r\n" % len(name) + name + b"\r\n")
    assert c.read_tagged(tag).ok
    tag = c.next_tag()
    c.send(tag.encode() + b" STATUS {%d+}\r\n" % len(name) + name +
           b" (MESSAGES)\r\n")
    r = c.read_tagged(tag)
    assert r.ok and b"MESSAGES 0" in r.untagged[0], r
