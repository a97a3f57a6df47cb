"""Mailbox names and the mailbox list: LIST (RFC 9051 6.3.9, RFC 5258
LIST-EXTENDED, RFC 3348 CHILDREN, RFC 6154 SPECIAL-USE, RFC 5819
LIST-STATUS), LSUB, CREATE, DELETE, RENAME, SUBSCRIBE, UNSUBSCRIBE,
NAMESPACE (RFC 2342) and STATUS (RFC 8438 SIZE); modified UTF-7 names
(RFC 3501 5.1.3) and names that must never leave the mail root."""

import re

import pytest

from moatimap import parse_value

MSG = (b"From: Alice <alice@example.org>\r\n"
       b"To: testuser1@example.org\r\n"
       b"Subject: list test\r\n"
       b"\r\n"
       b"Hello.\r\n")
SPECIAL = {"Drafts": "\\Drafts", "Sent": "\\Sent", "Trash": "\\Trash",
           "Junk": "\\Junk", "Archive": "\\Archive"}


def as_str(v):
    return v.decode() if isinstance(v, bytes) else v


def parse_list_line(line, kind="LIST"):
    """'* LIST (attrs) "/" name [ext]' -> (attrs, delim, name, ext)."""
    prefix = f"* {kind} ".encode()
    assert line.startswith(prefix), line
    data = line[len(prefix):]
    attrs, pos = parse_value(data, 0)
    delim, pos = parse_value(data, pos + 1)
    name, pos = parse_value(data, pos + 1)
    ext = None
    if pos < len(data):
        ext, pos = parse_value(data, pos + 1)
    return ({as_str(a).lower() for a in attrs}, as_str(delim), as_str(name), ext)


def do_list(c, args, kind="LIST"):
    """Runs LIST/LSUB; returns {name: (attrs, ext)} in order, and the
    response."""
    r = c.command(f"{kind} {args}")
    assert r.ok, r
    out = {}
    for line in r.untagged:
        if line.startswith(f"* {kind} ".encode()):
            attrs, delim, name, ext = parse_list_line(line, kind)
            assert delim == "/"
            out[name] = (attrs, ext)
    return out, r


def names(c, args, kind="LIST"):
    return list(do_list(c, args, kind)[0])


def ok(c, cmd):
    r = c.command(cmd)
    assert r.ok, r
    return r


def no(c, cmd, code=None):
    r = c.command(cmd)
    assert r.status == "NO", r
    if code is not None:
        assert r.code is not None and r.code.upper().startswith(code), r
    return r


def status_of(c, mailbox, items="MESSAGES UIDNEXT UIDVALIDITY UNSEEN DELETED SIZE RECENT"):
    r = ok(c, f"STATUS {mailbox} ({items})")
    lines = [l for l in r.untagged if l.startswith(b"* STATUS ")]
    assert len(lines) == 1, r
    m = re.match(rb"^\* STATUS (.*) \(([^)]*)\)$", lines[0])
    vals = m.group(2).decode().split()
    return {vals[i].upper(): int(vals[i + 1]) for i in range(0, len(vals), 2)}


@pytest.fixture
def client(moat_server):
    return moat_server.login("testuser1")


# ---- capabilities, separator, namespace ----------------------------------

def test_capabilities(client):
    r = ok(client, "CAPABILITY")
    caps = set(r.untagged[0].decode().split()[2:])
    for cap in ("CHILDREN", "NAMESPACE", "LIST-EXTENDED", "LIST-STATUS",
                "SPECIAL-USE", "STATUS=SIZE"):
        assert cap in caps


def test_separator_query(client):
    # RFC 9051 6.3.9: "" "" returns the delimiter and the root
    r = ok(client, 'LIST "" ""')
    assert r.untagged == [b'* LIST (\\Noselect) "/" ""']
    r = ok(client, 'LSUB "" ""')
    assert r.untagged == [b'* LSUB (\\Noselect) "/" ""']


def test_namespace(client):
    r = ok(client, "NAMESPACE")
    assert r.untagged == [b'* NAMESPACE (("" "/")) NIL NIL']
    r = client.command("NAMESPACE x")
    assert r.status == "BAD"


# ---- SPECIAL-USE ---------------------------------------------------------

def test_special_use_folders_created_at_login(client, moat_server):
    listed, _ = do_list(client, '"" "*"')
    assert list(listed)[0] == "INBOX"
    for name, attr in SPECIAL.items():
        attrs, _ = listed[name]
        assert attr.lower() in attrs
        assert "\\hasnochildren" in attrs
        assert (moat_server.maildir("testuser1") / f".{name}" / "cur").is_dir()
    assert "\\hasnochildren" in listed["INBOX"][0]
    # subscribed too
    assert set(names(client, '"" "*"', "LSUB")) == set(SPECIAL)
    # RFC 6154: selection option SPECIAL-USE returns only those
    only, _ = do_list(client, '(SPECIAL-USE) "" "*"')
    assert set(only) == set(SPECIAL)
    ret, _ = do_list(client, '"" "*" RETURN (SPECIAL-USE)')
    assert "\\sent" in ret["Sent"][0]


@pytest.mark.moat_settings(mailbox_trash="Deleted Messages", mailbox_junk="",
                           mailbox_archive="INBOX/Archive")
def test_special_use_configured_names(client):
    listed, _ = do_list(client, '(SPECIAL-USE) "" "*"')
    assert set(listed) == {"Drafts", "Sent", "Deleted Messages", "INBOX/Archive"}
    assert "\\trash" in listed["Deleted Messages"][0]
    assert "\\archive" in listed["INBOX/Archive"][0]
    assert "Junk" not in names(client, '"" "*"')


# ---- CREATE --------------------------------------------------------------

def test_create_hierarchy(client, moat_server):
    ok(client, "CREATE foo/bar")
    top, _ = do_list(client, '"" "%"')
    assert "\\haschildren" in top["foo"][0]
    assert "foo/bar" not in top
    sub, _ = do_list(client, '"" "foo/%"')
    assert list(sub) == ["foo/bar"]
    assert "\\hasnochildren" in sub["foo/bar"][0]
    # RFC 3501 6.3.3: a trailing separator creates the name
    ok(client, "CREATE owatagusiam/")
    assert "owatagusiam" in names(client, '"" "*"')
    md = moat_server.maildir("testuser1")
    assert (md / ".foo.bar" / "cur").is_dir()
    assert (md / ".owatagusiam" / "cur").is_dir()


def test_create_errors(client):
    ok(client, "CREATE dup")
    no(client, "CREATE dup", "ALREADYEXISTS")
    no(client, "CREATE INBOX", "ALREADYEXISTS")
    no(client, "CREATE inbox", "ALREADYEXISTS")
    no(client, "CREATE Sent", "ALREADYEXISTS")
    assert client.command("CREATE").status == "BAD"
    assert client.command("CREATE a b").status == "BAD"


TRAVERSAL = ['".."', '"../x"', '"a/../../x"', '"../../etc/passwd"', '"/abs"',
             '"a//b"', '"."', '"a/./b"', '"x/.."', '"a*"', '"b%"']


@pytest.mark.parametrize("name", TRAVERSAL)
def test_create_traversal_refused(client, moat_server, name):
    before = sorted(p.name for p in moat_server.maildir("testuser1").parent.iterdir())
    no(client, f"CREATE {name}", "CANNOT")
    after = sorted(p.name for p in moat_server.maildir("testuser1").parent.iterdir())
    assert before == after
    # an impossible name simply does not exist
    no(client, f"SELECT {name}", "NONEXISTENT")


def test_create_control_and_long_names(client):
    r = client.command(b'CREATE {3+}\r\na\x01b')
    assert r.status == "NO" and r.code == "CANNOT", r
    no(client, "CREATE " + "x" * 300, "LIMIT")
    no(client, "CREATE " + "/".join(["a"] * 40), "LIMIT")


# ---- modified UTF-7 ------------------------------------------------------

def test_mutf7_names(client, moat_server):
    # RFC 3501 5.1.3 example
    ok(client, 'CREATE "~peter/mail/&U,BTFw-/&ZeVnLIqe-"')
    listed = names(client, '"" "~peter/*"')
    assert "~peter/mail/&U,BTFw-/&ZeVnLIqe-" in listed
    ok(client, "CREATE Entw&APw-rfe")
    assert (moat_server.maildir("testuser1") / ".Entw&APw-rfe" / "cur").is_dir()
    r = ok(client, "SELECT Entw&APw-rfe")
    assert r.code == "READ-WRITE"
    # a "." in a name is escaped on disk and comes back unchanged
    ok(client, "CREATE a.b")
    assert (moat_server.maildir("testuser1") / ".a~2eb" / "cur").is_dir()
    assert "a.b" in names(client, '"" "a*"')
    ok(client, 'CREATE "&-amp"')
    assert "&-amp" in names(client, '"" "&-*"')


@pytest.mark.parametrize("name", ["&", "&U,BTFw", "&AGE-", "&AOk-&AOk-",
                                  "&2D0-", "&AOl-"])
def test_mutf7_invalid(client, name):
    no(client, f'CREATE "{name}"', "CANNOT")


# ---- DELETE --------------------------------------------------------------

def test_delete_rfc_example(client):
    # RFC 9051 6.3.5, with the \Noselect variant
    ok(client, "CREATE blurdybloop")
    ok(client, "CREATE foo/bar")
    ok(client, "DELETE blurdybloop")
    ok(client, "DELETE foo")     # has children: emptied, becomes \Noselect
    listed, _ = do_list(client, '"" "foo*"')
    assert "\\noselect" in listed["foo"][0]
    assert "\\haschildren" in listed["foo"][0]
    no(client, "SELECT foo", "NONEXISTENT")
    no(client, "DELETE foo", "HASCHILDREN")
    ok(client, "DELETE foo/bar")
    listed, _ = do_list(client, '"" "foo*"')
    assert set(listed) == {"foo"} and "\\noselect" in listed["foo"][0]
    ok(client, "DELETE foo")
    assert names(client, '"" "foo*"') == []
    assert "blurdybloop" not in names(client, '"" "*"')


def test_delete_errors(client):
    no(client, "DELETE INBOX")
    no(client, "DELETE inbox")
    no(client, "DELETE nosuch", "NONEXISTENT")
    no(client, 'DELETE "../x"', "CANNOT")
    assert client.command("DELETE").status == "BAD"


def test_delete_selected(client):
    ok(client, "CREATE victim")
    ok(client, "SELECT victim")
    r = ok(client, "DELETE victim")
    assert any(b"[CLOSED]" in l for l in r.untagged)
    assert client.command("FETCH 1 FLAGS").status == "BAD"


def test_delete_then_create_new_uidvalidity(client):
    ok(client, "CREATE again")
    assert client.append("again", MSG).ok
    uv1 = status_of(client, "again", "UIDVALIDITY UIDNEXT")
    ok(client, "DELETE again")
    ok(client, "CREATE again")
    uv2 = status_of(client, "again", "UIDVALIDITY UIDNEXT")
    assert uv1["UIDVALIDITY"] != uv2["UIDVALIDITY"]
    assert uv2["UIDNEXT"] == 1


# ---- RENAME --------------------------------------------------------------

def test_rename_rfc_example(client):
    ok(client, "CREATE blurdybloop")
    ok(client, "CREATE foo/bar")
    ok(client, "DELETE foo")
    ok(client, "RENAME blurdybloop sarasoop")
    ok(client, "RENAME foo zowie")
    listed, _ = do_list(client, '"" "*"')
    assert "sarasoop" in listed and "blurdybloop" not in listed
    assert "\\noselect" in listed["zowie"][0]
    assert "zowie/bar" in listed and "foo/bar" not in listed


def test_rename_inbox(client):
    # RFC 9051 6.3.6: messages move, INBOX stays (empty), children stay
    ok(client, "CREATE INBOX/bar")
    assert client.append("INBOX", MSG).ok
    assert client.append("INBOX", MSG).ok
    ok(client, "RENAME INBOX old-mail")
    listed, _ = do_list(client, '"" "*"')
    assert list(listed)[:2] == ["INBOX", "INBOX/bar"]
    assert "old-mail" in listed
    assert "\\haschildren" in listed["INBOX"][0]
    assert status_of(client, "old-mail")["MESSAGES"] == 2
    st = status_of(client, "INBOX")
    assert st["MESSAGES"] == 0
    assert client.append("INBOX", MSG).ok
    assert status_of(client, "INBOX")["MESSAGES"] == 1


def test_rename_errors(client):
    ok(client, "CREATE a")
    no(client, "RENAME nosuch x", "NONEXISTENT")
    no(client, "RENAME a Sent", "ALREADYEXISTS")
    no(client, "RENAME a INBOX", "ALREADYEXISTS")
    no(client, "RENAME a a/b", "CANNOT")
    no(client, 'RENAME a "../x"', "CANNOT")
    no(client, 'RENAME a "b/../../x"', "CANNOT")
    assert client.command("RENAME a").status == "BAD"


# ---- SUBSCRIBE / LSUB / LIST (SUBSCRIBED) --------------------------------

def test_subscribe_and_lsub(client):
    ok(client, "CREATE Fruit/Apple")
    ok(client, "CREATE Fruit/Banana")
    ok(client, "CREATE Vegetable/Broccoli")
    ok(client, "CREATE Vegetable/Corn")
    ok(client, "CREATE Tofu")
    for n in ("Fruit/Banana", "Fruit/Peach", "Vegetable", "Vegetable/Broccoli"):
        ok(client, f"SUBSCRIBE {n}")
    ok(client, "SUBSCRIBE Vegetable")      # again: still OK
    # RFC 5258 example 2
    sub, _ = do_list(client, '(SUBSCRIBED) "" "*"')
    mine = {k: v for k, v in sub.items() if k not in SPECIAL}
    assert set(mine) == {"Fruit/Banana", "Fruit/Peach", "Vegetable",
                         "Vegetable/Broccoli"}
    assert all("\\subscribed" in a for a, _ in mine.values())
    assert "\\nonexistent" in mine["Fruit/Peach"][0]
    # RFC 5258 example 6: RETURN (SUBSCRIBED) adds no mailboxes
    ret, _ = do_list(client, '"" "*" RETURN (SUBSCRIBED)')
    assert "Fruit/Peach" not in ret
    assert "\\subscribed" in ret["Fruit/Banana"][0]
    assert "\\subscribed" not in ret["Fruit/Apple"][0]
    # RFC 5258 example 3
    top, _ = do_list(client, '() "" "%" RETURN (CHILDREN)')
    assert "\\haschildren" in top["Fruit"][0]
    assert "\\hasnochildren" in top["Tofu"][0]
    # LSUB with %: Fruit is not subscribed but has subscribed children
    lsub, _ = do_list(client, '"" "%"', "LSUB")
    assert "\\noselect" in lsub["Fruit"][0]
    assert lsub["Vegetable"][0] == set()
    ok(client, "UNSUBSCRIBE Fruit/Peach")
    ok(client, "UNSUBSCRIBE Fruit/Peach")  # not subscribed: still OK
    assert "Fruit/Peach" not in names(client, '"" "*"', "LSUB")
    no(client, 'SUBSCRIBE "../x"', "CANNOT")


def test_recursivematch_childinfo(client):
    # RFC 5258 example 8
    ok(client, "CREATE Foo/Bar")
    ok(client, "CREATE Foo/Baz")
    ok(client, "CREATE Moo")
    ok(client, "SUBSCRIBE Foo/Baz")
    listed, _ = do_list(client, '(SUBSCRIBED RECURSIVEMATCH) "" "%"')
    assert "Foo" in listed and "Moo" not in listed
    attrs, ext = listed["Foo"]
    assert "\\subscribed" not in attrs
    assert ext == [b"CHILDINFO", [b"SUBSCRIBED"]]
    # no RECURSIVEMATCH: no CHILDINFO, Foo not returned
    plain, _ = do_list(client, '(SUBSCRIBED) "" "%"')
    assert "Foo" not in plain
    # C) Foo and Moo subscribed, children returned via CHILDREN
    ok(client, "UNSUBSCRIBE Foo/Baz")
    ok(client, "SUBSCRIBE Foo")
    ok(client, "SUBSCRIBE Moo")
    c, _ = do_list(client, '(SUBSCRIBED RECURSIVEMATCH) "" "%" RETURN (CHILDREN)')
    assert "\\haschildren" in c["Foo"][0] and c["Foo"][1] is None
    assert "\\hasnochildren" in c["Moo"][0]


def test_list_option_errors(client):
    for args in ('(RECURSIVEMATCH) "" "*"', '(FOO) "" "*"',
                 '"" "*" RETURN (BAR)', '"" "*" RETURN (STATUS (FOO))',
                 '"" "*" RETURN', '"" ()', '""', '"" "*" extra'):
        r = client.command(f"LIST {args}")
        assert r.status == "BAD", (args, r)
    # REMOTE is accepted (there are no remote mailboxes)
    assert "INBOX" in names(client, '(REMOTE) "" "*"')


# ---- patterns and references ---------------------------------------------

def test_patterns_and_reference(client):
    ok(client, "CREATE a/b/c")
    ok(client, "CREATE a-b")
    assert names(client, '"" "a/%"') == ["a/b"]
    assert names(client, '"" "a/*"') == ["a/b", "a/b/c"]
    assert names(client, '"a/" "%"') == ["a/b"]
    assert names(client, '"a/b/" "*"') == ["a/b/c"]
    assert names(client, '"" "inbox"') == ["INBOX"]
    assert names(client, '"" "InBoX"') == ["INBOX"]
    assert names(client, '"" "a%"') == ["a", "a-b"]
    assert names(client, '"" "nothing*"') == []
    # RFC 5258 example 7: several patterns
    both = names(client, '"" ("INBOX" "a/%" "Sent")')
    assert both == ["INBOX", "Sent", "a/b"]
    assert names(client, '"" "***%%*a/b"') == ["a/b"]


def test_nonexistent_parent(client, moat_server):
    # a folder written by another tool without its parent (RFC 5258 ex. 11)
    md = moat_server.maildir("testuser1")
    for sub in ("cur", "new", "tmp"):
        (md / ".music.rock" / sub).mkdir(parents=True)
    moat_server.chown_home(moat_server.users["testuser1"])
    plain, _ = do_list(client, '"" "%"')
    assert "\\noselect" in plain["music"][0] and "\\haschildren" in plain["music"][0]
    ext, _ = do_list(client, '() "" "%"')
    assert "\\nonexistent" in ext["music"][0] and "\\haschildren" in ext["music"][0]


# ---- STATUS and LIST-STATUS ----------------------------------------------

def test_status(client):
    assert client.append("INBOX", MSG, flags=["\\Seen"]).ok
    assert client.append("INBOX", MSG, flags=["\\Deleted"]).ok
    assert client.append("INBOX", MSG).ok
    st = status_of(client, "INBOX")
    assert st["MESSAGES"] == 3
    assert st["UNSEEN"] == 2
    assert st["DELETED"] == 1
    assert st["SIZE"] == 3 * len(MSG)
    assert st["UIDNEXT"] == 4
    assert st["UIDVALIDITY"] > 0
    assert "RECENT" in st
    # status of the selected mailbox works too
    ok(client, "SELECT INBOX")
    assert status_of(client, "inbox", "MESSAGES")["MESSAGES"] == 3
    no(client, "STATUS nosuch (MESSAGES)", "NONEXISTENT")
    no(client, 'STATUS "../x" (MESSAGES)', "CANNOT")
    for bad in ("STATUS INBOX (FOO)", "STATUS INBOX ()", "STATUS INBOX",
                "STATUS INBOX MESSAGES"):
        assert client.command(bad).status == "BAD", bad


def test_list_status(client):
    ok(client, "CREATE box/child")
    ok(client, "DELETE box")    # \Noselect: no STATUS for it
    assert client.append("Sent", MSG).ok
    r = ok(client, 'LIST "" "*" RETURN (STATUS (MESSAGES UIDNEXT))')
    lines = r.untagged
    # each STATUS follows its LIST line
    for i, line in enumerate(lines):
        if line.startswith(b"* STATUS "):
            prev = parse_list_line(lines[i - 1])
            assert line.startswith(b"* STATUS " + prev[2].encode() + b" ") or \
                line.startswith(b'* STATUS "' + prev[2].encode() + b'" ')
    status_names = [l.split(b" ")[2] for l in lines if l.startswith(b"* STATUS ")]
    assert b"Sent" in status_names and b"box" not in status_names
    sent = [l for l in lines if l.startswith(b"* STATUS Sent ")]
    assert sent == [b"* STATUS Sent (MESSAGES 1 UIDNEXT 2)"]


# ---- a folder round trip -------------------------------------------------

def test_folder_round_trip(client):
    ok(client, "CREATE Projects")
    r = client.append("Projects", MSG)
    assert r.ok and r.code.startswith("APPENDUID"), r
    ok(client, "CREATE Projects/2024")
    assert client.append("Projects/2024", MSG).ok
    assert client.append("Projects/2024", MSG).ok
    r = ok(client, "SELECT Projects")
    assert b"* 1 EXISTS" in r.untagged
    r = ok(client, "EXAMINE Projects/2024")
    assert b"* 2 EXISTS" in r.untagged
    assert r.code == "READ-ONLY"
    ok(client, "RENAME Projects Old/Projects")
    listed, _ = do_list(client, '"" "*"')
    assert {"Old", "Old/Projects", "Old/Projects/2024"} <= set(listed)
    assert "Projects" not in listed and "Projects/2024" not in listed
    r = ok(client, "SELECT Old/Projects/2024")
    assert b"* 2 EXISTS" in r.untagged
    r = client.command("FETCH 1:2 (UID RFC822.SIZE BODY.PEEK[])")
    assert r.ok
    assert status_of(client, "Old/Projects", "MESSAGES")["MESSAGES"] == 1
    no(client, "SELECT Projects", "NONEXISTENT")
    r = client.append("Projects", MSG)
    assert r.status == "NO" and r.code == "TRYCREATE"
    # the failed SELECT above left no mailbox selected (RFC 9051 6.3.2)
    assert client.command("UNSELECT").status == "BAD"
    ok(client, "DELETE Old/Projects/2024")
    ok(client, "DELETE Old/Projects")
    ok(client, "DELETE Old")
    assert [n for n in names(client, '"" "*"') if n.startswith("Old")] == []


def test_rename_and_delete_around_selected(client):
    ok(client, "CREATE p/q")
    assert client.append("p/q", MSG).ok
    ok(client, "SELECT p/q")
    # deleting the parent empties only the parent: p/q stays selected
    r = ok(client, "DELETE p")
    assert not any(b"[CLOSED]" in l for l in r.untagged)
    assert client.command("FETCH 1 FLAGS").ok
    # renaming the parent moves the selected child: it is closed
    r = ok(client, "RENAME p z")
    assert any(b"[CLOSED]" in l for l in r.untagged)
    assert client.command("FETCH 1 FLAGS").status == "BAD"
    r = ok(client, "SELECT z/q")
    assert b"* 1 EXISTS" in r.untagged


def test_list_cache_sees_cur_made_by_another_tool(client, moat_server):
    """A bare folder directory (\\Noselect) becomes selectable when another
    tool adds cur/ to it: that changes the folder's mtime, not the root's,
    and the cached folder list must still notice it
    (index/mailbox-list-cache.c)."""
    import os
    import time
    root = moat_server.maildir("testuser1")
    os.mkdir(root / ".Bare")
    moat_server.chown_home(moat_server.users["testuser1"])
    old = time.time() - 3600
    os.utime(root / ".Bare", (old, old))
    os.utime(root, (old, old))
    attrs = {n: v[0] for n, v in do_list(client, '"" *')[0].items()}
    assert "\\noselect" in attrs["Bare"]
    # the second LIST comes from the cache file (and the process's memo)
    assert (root / "moat.mailboxlist" / "list").exists()
    attrs = {n: v[0] for n, v in do_list(client, '"" *')[0].items()}
    assert "\\noselect" in attrs["Bare"]
    root_mtime = os.stat(root).st_mtime_ns
    for sub in ("cur", "new", "tmp"):
        os.mkdir(root / ".Bare" / sub)
    moat_server.chown_home(moat_server.users["testuser1"])
    assert os.stat(root).st_mtime_ns == root_mtime
    attrs = {n: v[0] for n, v in do_list(client, '"" *')[0].items()}
    assert "\\noselect" not in attrs["Bare"]
    ok(client, "SELECT Bare")
    ok(client, "CLOSE")
    # and once settled it is cached as selectable
    os.utime(root / ".Bare", (old, old))
    os.utime(root, (old + 60, old + 60))
    for _ in range(2):
        attrs = {n: v[0] for n, v in do_list(client, '"" *')[0].items()}
        assert "\\noselect" not in attrs["Bare"]
