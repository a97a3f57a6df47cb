"""STATUS answered from the index alone (index/mailbox-status.c) and LIST
from the cached folder list (index/mailbox-list-cache.c): the numbers must
equal what SELECT shows, across changes by another session and by other
Maildir tools (files dropped into new/, folders made with mkdir)."""

import os
import re
import shutil
import time

import pytest

MSG = (b"From: Alice <alice@example.org>\r\n"
       b"To: testuser1@example.org\r\n"
       b"Subject: status test\r\n"
       b"\r\n"
       b"Hello.\r\n")


@pytest.fixture
def client(moat_server):
    return moat_server.login("testuser1")


def status_of(c, mailbox):
    r = c.command(f"STATUS {mailbox} (MESSAGES UIDNEXT UIDVALIDITY UNSEEN "
                  "DELETED SIZE)")
    assert r.ok, r
    lines = [l for l in r.untagged if l.startswith(b"* STATUS ")]
    assert len(lines) == 1, r
    vals = re.match(rb"^\* STATUS .* \(([^)]*)\)$", lines[0]).group(1).split()
    return {vals[i].decode().upper(): int(vals[i + 1])
            for i in range(0, len(vals), 2)}


def select_counts(c, mailbox):
    """What SELECT (read-only) and SEARCH say about the mailbox."""
    r = c.command(f"EXAMINE {mailbox}")
    assert r.ok, r
    out = {}
    for line in r.untagged:
        m = re.match(rb"^\* (\d+) EXISTS", line)
        if m:
            out["MESSAGES"] = int(m.group(1))
        m = re.search(rb"\[UIDNEXT (\d+)\]", line)
        if m:
            out["UIDNEXT"] = int(m.group(1))
        m = re.search(rb"\[UIDVALIDITY (\d+)\]", line)
        if m:
            out["UIDVALIDITY"] = int(m.group(1))
    for key, crit in (("UNSEEN", "UNSEEN"), ("DELETED", "DELETED")):
        r = c.command(f"SEARCH {crit}")
        assert r.ok, r
        line = [l for l in r.untagged if l.startswith(b"* SEARCH")][0]
        out[key] = len(line.split()) - 2
    r = c.command("FETCH 1:* RFC822.SIZE") if out["MESSAGES"] else None
    out["SIZE"] = sum(int(x) for x in re.findall(
        rb"RFC822\.SIZE (\d+)", b"".join(r.untagged))) if r else 0
    assert c.command("CLOSE").ok
    return out


def settle(md, *subs):
    """Backdates directory mtimes, as if the last change was long ago (so
    the server trusts and stamps them)."""
    t = time.time() - 3600
    for sub in subs:
        os.utime(md / sub, (t, t))


def drop_new(moat_server, md, n):
    name = f"{int(time.time())}.M{time.monotonic_ns()}P{os.getpid()}.fasttest"
    (md / "tmp" / name).write_bytes(MSG + b"dropped %d\r\n" % n)
    os.rename(md / "tmp" / name, md / "new" / name)
    moat_server.chown_home(moat_server.users["testuser1"])


def test_status_equals_select(client, moat_server):
    assert client.command("CREATE box").ok
    for i in range(5):
        assert client.append("box", MSG + b"%d\r\n" % i).ok
    md = moat_server.maildir("testuser1") / ".box"
    settle(md, "cur", "new")
    first = status_of(client, "box")
    again = status_of(client, "box")
    assert first == again
    assert first == select_counts(client, "box")
    assert first["MESSAGES"] == 5 and first["UNSEEN"] == 5


def test_status_after_other_session(client, moat_server):
    assert client.command("CREATE box").ok
    for i in range(4):
        assert client.append("box", MSG + b"%d\r\n" % i).ok
    md = moat_server.maildir("testuser1") / ".box"
    settle(md, "cur", "new")
    before = status_of(client, "box")
    other = moat_server.login("testuser1")
    assert other.command("SELECT box").ok
    assert other.command("STORE 1:2 +FLAGS (\\Seen)").ok
    assert other.command("STORE 3 +FLAGS (\\Deleted)").ok
    st = status_of(client, "box")
    assert st["UNSEEN"] == before["UNSEEN"] - 2
    assert st["DELETED"] == 1
    assert other.command("EXPUNGE").ok
    assert other.append("box", MSG).ok
    settle(md, "cur", "new")
    st = status_of(client, "box")
    assert st["MESSAGES"] == before["MESSAGES"]
    assert st["UIDNEXT"] == before["UIDNEXT"] + 1
    assert st == select_counts(client, "box")
    # settled again: the index alone answers, with the same numbers
    settle(md, "cur", "new")
    assert status_of(client, "box") == st


def test_status_sees_files_dropped_into_new(client, moat_server):
    assert client.command("CREATE box").ok
    assert client.append("box", MSG).ok
    md = moat_server.maildir("testuser1") / ".box"
    settle(md, "cur", "new")
    before = status_of(client, "box")
    for n in range(3):
        drop_new(moat_server, md, n)
    st = status_of(client, "box")
    assert st["MESSAGES"] == before["MESSAGES"] + 3
    assert st["UNSEEN"] == before["UNSEEN"] + 3
    assert st["UIDNEXT"] == before["UIDNEXT"] + 3
    assert st["SIZE"] > before["SIZE"]
    settle(md, "cur", "new")
    assert status_of(client, "box") == st
    assert st == select_counts(client, "box")
    # INBOX too (its index lives in the mail root)
    root = moat_server.maildir("testuser1")
    settle(root, "cur", "new")
    inbox = status_of(client, "INBOX")
    drop_new(moat_server, root, 9)
    assert status_of(client, "INBOX")["MESSAGES"] == inbox["MESSAGES"] + 1


def list_names(c):
    r = c.command('LIST "" *')
    assert r.ok, r
    return {re.match(rb'^\* LIST \([^)]*\) "/" "?([^"]*)"?$', l).group(1).decode()
            for l in r.untagged if l.startswith(b"* LIST ")}


def test_list_sees_folder_made_by_another_tool(client, moat_server):
    root = moat_server.maildir("testuser1")
    assert client.command("CREATE mine").ok
    os.utime(root, (time.time() - 3600,) * 2)
    first = list_names(client)
    assert "mine" in first and "Foo" not in first
    assert list_names(client) == first   # from the cache now
    assert (root / "moat.mailboxlist" / "list").exists()
    for sub in ("", "/cur", "/new", "/tmp"):
        os.mkdir(str(root / ".Foo") + sub)
    moat_server.chown_home(moat_server.users["testuser1"])
    names = list_names(client)
    assert "Foo" in names
    os.utime(root, (time.time() - 1800,) * 2)
    assert list_names(client) == names
    assert list_names(client) == names
    assert client.command("SELECT Foo").ok
    # a DELETE by moat shows at once, even in the same second
    assert client.command("DELETE mine").ok
    assert "mine" not in list_names(client)
    # another tool removes a folder
    os.utime(root, (time.time() - 1200,) * 2)
    assert "Foo" in list_names(client)
    assert client.command("CLOSE").ok
    shutil.rmtree(root / ".Foo")
    assert "Foo" not in list_names(client)


# ---- the per-process index handle cache (index/mailbox-status.c) ----

def cached_status(c, mailbox, md):
    """STATUS twice on settled directories: the second one is answered
    from the handle the first one left open."""
    settle(md, "cur", "new")
    first = status_of(c, mailbox)
    assert status_of(c, mailbox) == first
    return first


def test_status_cache_sees_other_session_append(client, moat_server):
    assert client.command("CREATE box").ok
    assert client.append("box", MSG).ok
    md = moat_server.maildir("testuser1") / ".box"
    before = cached_status(client, "box", md)
    other = moat_server.login("testuser1")
    assert other.append("box", MSG + b"other\r\n").ok
    st = status_of(client, "box")
    assert st["MESSAGES"] == before["MESSAGES"] + 1
    assert st["UIDNEXT"] == before["UIDNEXT"] + 1
    # a flag change by the other session (the log only, once settled)
    st = cached_status(client, "box", md)
    assert other.command("SELECT box").ok
    assert other.command("STORE 1 +FLAGS (\\Seen)").ok
    assert status_of(client, "box")["UNSEEN"] == st["UNSEEN"] - 1
    settle(md, "cur", "new")
    assert status_of(client, "box")["UNSEEN"] == st["UNSEEN"] - 1
    # and an EXPUNGE
    assert other.command("STORE 1 +FLAGS (\\Deleted)").ok
    assert other.command("EXPUNGE").ok
    st2 = status_of(client, "box")
    assert st2["MESSAGES"] == st["MESSAGES"] - 1
    assert st2 == select_counts(client, "box")


def test_status_cache_sees_dropped_and_removed_files(client, moat_server):
    assert client.command("CREATE box").ok
    for i in range(3):
        assert client.append("box", MSG + b"%d\r\n" % i).ok
    md = moat_server.maildir("testuser1") / ".box"
    before = cached_status(client, "box", md)
    drop_new(moat_server, md, 1)
    st = status_of(client, "box")
    assert st["MESSAGES"] == before["MESSAGES"] + 1
    assert st["UIDNEXT"] == before["UIDNEXT"] + 1
    # another tool removes a message file (an expunge by another process)
    st = cached_status(client, "box", md)
    victim = sorted((md / "cur").iterdir())[0]
    victim.unlink()
    st2 = status_of(client, "box")
    assert st2["MESSAGES"] == st["MESSAGES"] - 1
    settle(md, "cur", "new")
    assert status_of(client, "box") == st2
    assert st2 == select_counts(client, "box")


def test_status_cache_delete_and_rename(client, moat_server):
    root = moat_server.maildir("testuser1")
    assert client.command("CREATE box").ok
    for i in range(2):
        assert client.append("box", MSG + b"%d\r\n" % i).ok
    before = cached_status(client, "box", root / ".box")
    assert before["MESSAGES"] == 2
    other = moat_server.login("testuser1")
    assert other.command("DELETE box").ok
    assert not client.command("STATUS box (MESSAGES)").ok
    assert other.command("CREATE box").ok
    st = status_of(client, "box")
    assert st["MESSAGES"] == 0
    assert st["UIDVALIDITY"] != before["UIDVALIDITY"] or \
        st["UIDNEXT"] == 1
    # RENAME away, then a new folder of the same name
    assert client.append("box", MSG).ok
    st = cached_status(client, "box", root / ".box")
    assert st["MESSAGES"] == 1
    assert other.command("RENAME box moved").ok
    assert not client.command("STATUS box (MESSAGES)").ok
    assert status_of(client, "moved")["MESSAGES"] == 1
    assert other.command("CREATE box").ok
    assert status_of(client, "box")["MESSAGES"] == 0
    settle(root / ".box", "cur", "new")
    assert status_of(client, "box")["MESSAGES"] == 0
    assert status_of(client, "box") == select_counts(client, "box")


def folder_files(md):
    """{name: (inode, size, mtime_ns)} of the folder's own files."""
    return {p.name: (p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns)
            for p in md.iterdir() if p.is_file()}


@pytest.mark.parametrize("mailbox", ["INBOX", "box"])
def test_status_of_empty_mailbox_writes_nothing(client, moat_server, mailbox):
    """A never-selected empty mailbox: once its index exists, STATUS reads
    it and writes nothing (it once rewrote moat.index.dirs every time:
    an index that never had a change has modseq 0)."""
    root = moat_server.maildir("testuser1")
    md = root if mailbox == "INBOX" else root / ".box"
    if mailbox != "INBOX":
        assert client.command("CREATE box").ok
    settle(md, "cur", "new")
    assert status_of(client, mailbox)["MESSAGES"] == 0
    files = folder_files(md)
    for _ in range(3):
        st = status_of(client, mailbox)
        assert st["MESSAGES"] == 0 and st["UNSEEN"] == 0
        assert folder_files(md) == files
    # a file another tool drops in is still seen
    drop_new(moat_server, md, 1)
    assert status_of(client, mailbox)["MESSAGES"] == 1
