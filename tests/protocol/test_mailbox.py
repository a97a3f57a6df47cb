"""SELECT, FETCH and APPEND on a Maildir INBOX (RFC 9051 6.3.2, 6.3.12,
6.4.5; RFC 4315 APPENDUID; RFC 7888 literals)."""

import re

import pytest

# Messages are stored with CRLF line ends; FETCH must return them byte-exact.
MSG_SEEN = (b"From: Alice <alice@example.org>\r\n"
            b"To: testuser1@example.org\r\n"
            b"Subject: first\r\n"
            b"Date: Mon, 1 Jan 2024 10:00:00 +0000\r\n"
            b"Message-ID: <first@example.org>\r\n"
            b"\r\n"
            b"Hello one.\r\n")
MSG_FLAGGED = (b"From: Bob <bob@example.org>\r\n"
               b"To: testuser1@example.org\r\n"
               b"Subject: second, flagged and answered\r\n"
               b"Date: Tue, 2 Jan 2024 11:00:00 +0000\r\n"
               b"Message-ID: <second@example.org>\r\n"
               b"\r\n"
               b"Hello two,\r\nwith two lines.\r\n")
MSG_NEW = (b"From: Carol <carol@example.org>\r\n"
           b"To: testuser1@example.org\r\n"
           b"Subject: third, still in new/\r\n"
           b"Date: Wed, 3 Jan 2024 12:00:00 +0000\r\n"
           b"Message-ID: <third@example.org>\r\n"
           b"\r\n"
           b"Hello three.\r\n" + b"x" * 300 + b"\r\n")

# (directory, file name, content, flags IMAP must report)
PLACED = [
    ("cur", "1704103200.M1P100.moattest:2,S", MSG_SEEN, {"\\Seen"}),
    ("cur", "1704196800.M2P100.moattest:2,FR", MSG_FLAGGED, {"\\Flagged", "\\Answered"}),
    ("new", "1704283200.M3P100.moattest", MSG_NEW, set()),
]
SYSTEM_FLAGS = {"\\Seen", "\\Answered", "\\Flagged", "\\Deleted", "\\Draft"}


def place_messages(server, user="testuser1"):
    md = server.maildir(user)
    for sub, name, content, _ in PLACED:
        (md / sub / name).write_bytes(content)
    server.chown_home(server.users[user])


def select(c, mailbox="INBOX"):
    r = c.command(f"SELECT {mailbox}")
    assert r.ok, r
    info = {}
    for line in r.untagged:
        m = re.match(rb"^\* (\d+) EXISTS$", line, re.I)
        if m:
            info["exists"] = int(m.group(1))
        m = re.match(rb"^\* FLAGS \((.*)\)$", line, re.I)
        if m:
            info["flags"] = set(m.group(1).decode().split())
        m = re.match(rb"^\* OK \[(UIDVALIDITY|UIDNEXT) (\d+)\]", line, re.I)
        if m:
            info[m.group(1).decode().lower()] = int(m.group(2))
        m = re.match(rb"^\* OK \[PERMANENTFLAGS \((.*)\)\]", line, re.I)
        if m:
            info["permanentflags"] = set(m.group(1).decode().split())
    info["code"] = r.code
    return info


def user_flags(flags):
    """Flags of a FETCH without \\Recent (its value depends on the session)."""
    return {f for f in flags if f.lower() != "\\recent"}


@pytest.fixture
def inbox(moat_server):
    place_messages(moat_server)
    c = moat_server.login("testuser1")
    return moat_server, c


def test_select_inbox(inbox):
    server, c = inbox
    info = select(c)
    assert info.get("exists") == 3, info
    assert info.get("uidvalidity", 0) > 0, info
    assert info.get("uidnext") == 4, info
    assert SYSTEM_FLAGS <= info.get("flags", set()), info
    assert info["code"] == "READ-WRITE", info


def test_fetch_flags_uid_size_body_peek(inbox):
    server, c = inbox
    select(c)
    r = c.command("FETCH 1:* (FLAGS UID RFC822.SIZE BODY.PEEK[])")
    assert r.ok, r
    fetched = r.fetches()
    assert sorted(fetched) == [1, 2, 3], r
    by_body = {items["BODY[]"]: items for items in fetched.values()}
    for _, _, content, flags in PLACED:
        assert content in by_body, f"message not returned byte-exact: {content[:40]!r}"
        items = by_body[content]
        assert int(items["RFC822.SIZE"]) == len(content)
        assert user_flags(items["FLAGS"]) == flags, items
    uids = sorted(int(items["UID"]) for items in fetched.values())
    assert uids == [1, 2, 3]
    # Sequence numbers follow UID order.
    assert [int(fetched[s]["UID"]) for s in (1, 2, 3)] == uids

    # PEEK must not have set \Seen anywhere.
    r = c.command("FETCH 1:* (FLAGS)")
    after = {int(fetched[s]["UID"]): user_flags(i["FLAGS"])
             for s, i in r.fetches().items()}
    before = {int(i["UID"]): user_flags(i["FLAGS"]) for i in fetched.values()}
    assert after == before


def find_seq(fetched, content):
    for seq, items in fetched.items():
        if items.get("BODY[]") == content:
            return seq
    raise AssertionError(f"message {content[:30]!r} not found")


def test_fetch_body_sets_seen(inbox):
    server, c = inbox
    select(c)
    seq = find_seq(c.command("FETCH 1:* BODY.PEEK[]").fetches(), MSG_NEW)
    r = c.command(f"FETCH {seq} BODY[]")
    assert r.ok, r
    items = r.fetches()[seq]
    assert items["BODY[]"] == MSG_NEW
    # The implicit \Seen is reported, in this or a separate FETCH response.
    assert "\\Seen" in items.get("FLAGS", []), r
    r = c.command(f"FETCH {seq} FLAGS")
    assert "\\Seen" in r.fetches()[seq]["FLAGS"], r

    # Another session sees it too.
    c2 = server.login("testuser1")
    select(c2)
    r = c2.command(f"FETCH {seq} (FLAGS BODY.PEEK[])")
    assert r.fetches()[seq]["BODY[]"] == MSG_NEW
    assert "\\Seen" in r.fetches()[seq]["FLAGS"], r


def test_seen_flag_reaches_maildir(inbox):
    """Flags are kept in the standard Maildir file name suffix too."""
    server, c = inbox
    select(c)
    seq = find_seq(c.command("FETCH 1:* BODY.PEEK[]").fetches(), MSG_NEW)
    assert c.command(f"FETCH {seq} BODY[]").ok
    c.command("LOGOUT")
    cur = server.maildir("testuser1") / "cur"
    names = [p.name for p in cur.iterdir() if p.name.startswith("1704283200.M3P100.moattest")]
    assert len(names) == 1, names
    assert re.search(r":2,[A-Z]*S", names[0]), names


def test_append_roundtrip(moat_server):
    c = moat_server.login("testuser1")
    message = (b"From: Dave <dave@example.org>\r\n"
               b"Subject: appended\r\n"
               b"\r\n"
               b"Body line 1\r\nBody line 2\r\n")
    r = c.append("INBOX", message, flags=["\\Flagged"])
    assert r.ok, r
    m = re.match(r"APPENDUID (\d+) (\d+)$", r.code or "")
    assert m, r
    uidvalidity, uid = int(m.group(1)), int(m.group(2))

    info = select(c)
    assert info["exists"] == 1, info
    assert info["uidvalidity"] == uidvalidity, info
    assert info["uidnext"] > uid, info
    r = c.command(f"UID FETCH {uid} (UID FLAGS RFC822.SIZE BODY.PEEK[])")
    assert r.ok, r
    items = r.fetches()[1]
    assert int(items["UID"]) == uid
    assert items["BODY[]"] == message
    assert int(items["RFC822.SIZE"]) == len(message)
    assert "\\Flagged" in items["FLAGS"]

    # The message is a plain Maildir file with the same bytes.
    md = moat_server.maildir("testuser1")
    stored = [p.read_bytes() for sub in ("cur", "new") for p in (md / sub).iterdir()]
    assert stored == [message]


def test_append_sync_and_nonsync_literals(moat_server):
    c = moat_server.login("testuser1")
    caps = c.command("CAPABILITY").untagged[0].upper().split()
    assert b"LITERAL+" in caps or b"LITERAL-" in caps, caps
    one = b"Subject: sync\r\n\r\nsynchronizing literal\r\n"
    two = b"Subject: nonsync\r\n\r\nnon-synchronizing literal\r\n"
    assert c.append("INBOX", one, sync=True).ok
    assert c.append("INBOX", two, sync=False).ok
    select(c)
    r = c.command("FETCH 1:2 BODY.PEEK[]")
    bodies = [r.fetches()[s]["BODY[]"] for s in (1, 2)]
    assert bodies == [one, two]


def test_login_with_literals(moat_server):
    c = moat_server.connect()
    # Synchronizing: wait for "+" before each literal's bytes.
    tag = c.next_tag()
    c.send(f"{tag} LOGIN {{9}}\r\n")
    assert c.read_tagged(tag).status == "+"
    c.send("testuser1 {4}\r\n")
    assert c.read_tagged(tag).status == "+"
    r = c.continue_with(tag, "pass\r\n")
    assert r.ok, r
    assert c.command("NOOP").ok

    # Non-synchronizing: everything in one write.
    c2 = moat_server.connect()
    r = c2.command("LOGIN {9+}\r\ntestuser2 {7+}\r\nsecret2")
    assert r.ok, r
    assert c2.command("NOOP").ok


def test_imaplib_roundtrip(moat_server):
    """The same through Python's imaplib, a real-world client."""
    import imaplib
    m = imaplib.IMAP4(moat_server.host, moat_server.port, timeout=10)
    try:
        assert m.login("testuser2", "secret2")[0] == "OK"
        typ, _ = m.append("INBOX", None, None, b"Subject: via imaplib\r\n\r\nhi\r\n")
        assert typ == "OK"
        typ, data = m.select("INBOX")
        assert typ == "OK" and data == [b"1"]
        typ, data = m.fetch("1", "(BODY.PEEK[])")
        assert typ == "OK"
        assert data[0][1] == b"Subject: via imaplib\r\n\r\nhi\r\n"
    finally:
        m.logout()
