"""Storage abuse (issue 14, findings 3 and 4; doc/security.md, "Symlinks
under a mail root" and "Memory and messages per mailbox").

Symlinks: every virtual user has the same uid, so a symlink in one
user's Maildir can point at another user's mail, which the user's imap
process could read. A symlinked message file (in new/ or cur/), a
symlinked cur/, a symlinked folder and a symlinked index file must never
make the other user's message appear in FETCH, SEARCH, STATUS or COPY,
and the session goes on. The "other user" here is a Maildir outside the
user's mail root that the user's uid can read (as all virtual users'
mail is readable by moat-vmail).

Growth: COPY of a mailbox onto itself doubles it; mailbox_max_messages
stops it with NO [LIMIT] leaving exactly the acknowledged messages on
disk, and a COPY's memory does not grow with the number of messages.
"""

import os
import re
import time

import pytest

from moatserver import IS_ROOT, proc_status, wait_for

SECRET = b"SECRET-OF-THE-OTHER-USER"


def message(n, secret=False):
    body = SECRET if secret else f"body {n}".encode()
    return (f"From: a@example.org\r\nSubject: m{n}\r\n\r\n".encode() + body +
            b"\r\n")


def other_user_maildir(server):
    """A Maildir of "someone else" with one message, readable by the
    user's uid (the shared-uid situation)."""
    root = server.tmp / "other" / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    path = root / "cur" / "1700000000.M1P1.other,S=60:2,S"
    path.write_bytes(message(0, secret=True))
    for dirpath, dirnames, filenames in os.walk(server.tmp / "other"):
        os.chmod(dirpath, 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o644)
    return root, path


def chown_link(server, path):
    u = server.users["testuser1"]
    if IS_ROOT:
        os.lchown(path, u["uid"], u["gid"])


def assert_never_served(c, mailbox="INBOX", expect=1):
    """The mailbox shows exactly its own messages: no secret anywhere."""
    r = c.command(f"SELECT {mailbox}")
    assert r.ok, r
    exists = [int(line.split()[1]) for line in r.untagged_with("EXISTS")]
    assert exists == [expect], r
    if expect:
        r = c.command("FETCH 1:* (BODY.PEEK[] RFC822.SIZE)")
        assert r.ok, r
        assert SECRET not in b"".join(r.untagged), r
        assert len(r.fetches()) == expect
    r = c.command("SEARCH TEXT SECRET-OF-THE-OTHER-USER")
    assert r.ok and r.untagged_with("SEARCH") == [b"* SEARCH"], r
    assert c.command("CLOSE").ok
    r = c.command(f"STATUS {mailbox} (MESSAGES)")
    assert r.ok and f"MESSAGES {expect})".encode() in b"".join(r.untagged), r
    assert c.command("NOOP").ok


@pytest.mark.parametrize("subdir", ["new", "cur"])
def test_symlinked_message_file_is_not_a_message(moat_server, subdir):
    c = moat_server.login("testuser1")
    assert c.append("INBOX", message(1)).ok
    _, target = other_user_maildir(moat_server)
    name = "1700000001.M2P2.evil" + (":2,S" if subdir == "cur" else "")
    link = moat_server.maildir("testuser1") / subdir / name
    os.symlink(target, link)
    chown_link(moat_server, link)
    assert_never_served(c)
    # COPY takes only the real message
    assert c.command("CREATE Copied").ok
    assert c.command("SELECT INBOX").ok
    r = c.command("COPY 1:* Copied")
    assert r.ok, r
    assert_never_served(c, "Copied")
    # the link is left alone (not ours to delete), still not a message
    assert os.path.islink(link) or subdir == "new"
    assert SECRET not in moat_server.logs().encode()


def test_symlinked_cur_is_not_a_mailbox(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("CREATE Foo").ok
    assert c.append("Foo", message(1)).ok
    other, _ = other_user_maildir(moat_server)
    assert c.command("LOGOUT").status in ("OK", "BYE")
    cur = moat_server.maildir("testuser1") / ".Foo" / "cur"
    for f in cur.iterdir():
        f.unlink()
    cur.rmdir()
    os.symlink(other / "cur", cur)
    chown_link(moat_server, cur)
    before = sorted(os.listdir(other / "cur"))
    c = moat_server.login("testuser1")
    r = c.command("SELECT Foo")
    assert r.status == "NO", r
    assert SECRET not in b"".join(r.untagged)
    r = c.command("STATUS Foo (MESSAGES)")
    assert r.status == "NO", r
    # nothing goes through the link into the other user's cur/
    assert c.command("SELECT INBOX").ok
    assert c.append("INBOX", message(2)).ok
    assert c.command("SELECT INBOX").ok
    r = c.command("COPY 1 Foo")
    assert r.status == "NO", r
    r = c.append("Foo", message(3))
    assert r.status == "NO", r
    assert sorted(os.listdir(other / "cur")) == before
    assert_never_served(c, "INBOX", 1)


def test_symlinked_folder_is_not_a_folder(moat_server):
    c = moat_server.login("testuser1")
    other, _ = other_user_maildir(moat_server)
    link = moat_server.maildir("testuser1") / ".Evil"
    os.symlink(other, link)
    chown_link(moat_server, link)
    r = c.command('LIST "" "*"')
    assert r.ok and b"Evil" not in b"".join(r.untagged), r
    for cmd in ("SELECT Evil", "EXAMINE Evil", "STATUS Evil (MESSAGES)"):
        r = c.command(cmd)
        assert r.status == "NO", r
        assert SECRET not in b"".join(r.untagged)
    assert c.append("INBOX", message(1)).ok
    assert c.command("SELECT INBOX").ok
    assert c.command("COPY 1 Evil").status == "NO"
    assert sorted(os.listdir(other / "cur")) == [
        "1700000000.M1P1.other,S=60:2,S"]
    assert_never_served(c, "INBOX", 1)


@pytest.mark.moat_settings(imap_process_linger="0")
@pytest.mark.parametrize("name", ["moat.index", "moat.uidlist"])
def test_symlinked_index_file(moat_server, name):
    """moat.index (or moat.uidlist) of Foo replaced by a link to Bar's (the
    other user's): Foo is rebuilt from its own Maildir (index) or refused
    (uidlist); Bar's messages never show in Foo and Bar's file is not
    written through the link."""
    c = moat_server.login("testuser1")
    for box in ("Foo", "Bar"):
        assert c.command(f"CREATE {box}").ok
    assert c.append("Foo", message(1)).ok
    assert c.append("Bar", message(2, secret=True)).ok
    assert c.append("Bar", message(3, secret=True)).ok
    assert c.command("SELECT Bar").ok
    assert c.command("LOGOUT").status in ("OK", "BYE")
    assert wait_for(lambda: not moat_server.child_pids("imap"), 30)
    root = moat_server.maildir("testuser1")
    victim = root / ".Bar" / name
    before = victim.read_bytes()
    link = root / ".Foo" / name
    link.unlink()
    os.symlink(victim, link)
    chown_link(moat_server, link)
    c = moat_server.login("testuser1")
    r = c.command("SELECT Foo")
    if r.ok:
        exists = [int(line.split()[1]) for line in r.untagged_with("EXISTS")]
        assert exists == [1], r
        r = c.command("FETCH 1:* BODY.PEEK[]")
        assert r.ok and SECRET not in b"".join(r.untagged), r
        assert c.append("Foo", message(4)).ok
    else:
        assert r.status == "NO", r
    r = c.command("SEARCH TEXT SECRET-OF-THE-OTHER-USER")
    assert SECRET not in b"".join(r.untagged)
    assert c.command("NOOP").ok
    assert victim.read_bytes() == before
    assert c.command("SELECT Bar").ok


# ---- finding 4: growth ---------------------------------------------------

def maildir_files(server, sub):
    d = server.maildir("testuser1") / sub
    return sorted(f for f in os.listdir(d) if not f.startswith("."))


def uidlist_uids(server):
    lines = (server.maildir("testuser1") / "moat.uidlist").read_text().splitlines()
    return [int(line.split()[0]) for line in lines[1:] if line.strip()]


@pytest.mark.moat_settings(mailbox_max_messages="64")
def test_copy_onto_itself_stops_at_the_limit(moat_server):
    c = moat_server.login("testuser1")
    for n in range(4):
        assert c.append("INBOX", message(n)).ok
    assert c.command("SELECT INBOX").ok
    count = 4
    while count < 64:
        r = c.command("COPY 1:* INBOX")
        assert r.ok, r
        m = re.match(r"COPYUID \d+ 1:(\d+) (\d+):(\d+)$", r.code or "")
        assert m and int(m.group(1)) == count, r
        assert int(m.group(3)) - int(m.group(2)) + 1 == count
        count *= 2
        assert c.command("NOOP").ok
    r = c.command("COPY 1:* INBOX")
    assert r.status == "NO" and r.code == "LIMIT", r
    r = c.command("COPY 1 INBOX")
    assert r.status == "NO" and r.code == "LIMIT", r
    # APPEND and MULTIAPPEND too, all or none
    r = c.append("INBOX", message(99))
    assert r.status == "NO" and r.code == "LIMIT", r
    # MOVE from another mailbox leaves the source as it was
    assert c.command("CREATE Other").ok
    assert c.append("Other", message(100)).ok
    assert c.command("SELECT Other").ok
    r = c.command("MOVE 1 INBOX")
    assert r.status == "NO" and r.code == "LIMIT", r
    r = c.command("STATUS Other (MESSAGES)")
    assert b"MESSAGES 1)" in b"".join(r.untagged), r
    assert c.command("SELECT INBOX").ok
    r = c.command("STATUS INBOX (MESSAGES)")
    assert b"MESSAGES 64)" in b"".join(r.untagged), r
    # on disk: exactly the acknowledged messages, nothing staged left
    assert maildir_files(moat_server, "tmp") == []
    assert len(maildir_files(moat_server, "cur")) == 64
    assert uidlist_uids(moat_server) == list(range(1, 65))
    assert not (moat_server.maildir("testuser1") / "cur" / ".moat.staged").exists()


@pytest.mark.moat_settings(mailbox_max_messages="10")
def test_multiappend_over_the_limit_adds_nothing(moat_server):
    c = moat_server.login("testuser1")
    for n in range(8):
        assert c.append("INBOX", message(n)).ok
    tag = c.next_tag()
    parts = [f"{tag} APPEND INBOX".encode()]
    for n in range(3):
        body = message(10 + n)
        parts.append(f" {{{len(body)}+}}\r\n".encode() + body)
    c.send(b"".join(parts) + b"\r\n")
    r = c.read_tagged(tag)
    assert r.status == "NO" and r.code == "LIMIT", r
    assert c.command("NOOP").ok
    r = c.command("STATUS INBOX (MESSAGES)")
    assert b"MESSAGES 8)" in b"".join(r.untagged), r
    assert maildir_files(moat_server, "tmp") == []
    assert len(maildir_files(moat_server, "new")) + \
        len(maildir_files(moat_server, "cur")) == 8
    # two more still fit
    assert c.append("INBOX", message(20)).ok
    assert c.append("INBOX", message(21)).ok
    r = c.append("INBOX", message(22))
    assert r.status == "NO" and r.code == "LIMIT", r


# ---- a COPY's memory -----------------------------------------------------

RSS_N = 4000


@pytest.fixture
def quiet_asan(monkeypatch):
    """AddressSanitizer keeps freed memory in quarantine (256 MB): with
    it RSS measures the churn, not what a command holds. Off for this
    server only."""
    opts = os.environ.get("ASAN_OPTIONS", "detect_leaks=0")
    monkeypatch.setenv("ASAN_OPTIONS", opts + ":quarantine_size_mb=0:"
                       "thread_local_quarantine_size_kb=0")


def fill_maildir(server, count):
    cur = server.maildir("testuser1") / "cur"
    for i in range(count):
        body = message(i)
        name = f"{1600000000 + i}.M{i}P1.fill,S={len(body)}:2,"
        (cur / name).write_bytes(body)
    server.chown_home(server.users["testuser1"])


def status_kb(pid, field):
    return int(proc_status(pid)[field].split()[0])


def copy_peak_kb(c, pid, cmd):
    """VmHWM growth during cmd (the peak reset first, as root)."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")
    before = status_kb(pid, "VmRSS")
    r = c.command(cmd)
    assert r.ok, r
    return status_kb(pid, "VmHWM") - before


@pytest.mark.skipif(not IS_ROOT, reason="reads another uid's /proc/PID")
@pytest.mark.moat_settings(mail_fsync="never")
def test_copy_memory_does_not_grow_with_count(quiet_asan, moat_server):
    fill_maildir(moat_server, 4 * RSS_N)
    c = moat_server.login("testuser1")
    for box in ("Small", "Warm", "Big"):
        assert c.command(f"CREATE {box}").ok
    r = c.command("SELECT INBOX")
    assert r.ok and f"* {4 * RSS_N} EXISTS".encode() in r.untagged, r
    pids = moat_server.wait_children("imap", 1)
    assert len(pids) == 1
    pid = pids[0]
    # the first COPY maps what every later one uses (warm-up)
    assert c.command("COPY 1:100 Warm").ok
    started = time.monotonic()
    small = copy_peak_kb(c, pid, f"COPY 1:{RSS_N} Small")
    big = copy_peak_kb(c, pid, f"COPY 1:{4 * RSS_N} Big")
    took = time.monotonic() - started
    # The old COPY held ~1 KiB per message: 12 MiB more for the big one.
    # What still grows is the target's index and cache files, mapped
    # (40 + ~30 bytes a message): well under the margin.
    print(f"COPY peak growth: {RSS_N}: {small} KiB, {4 * RSS_N}: {big} KiB, {took:.1f} s")
    assert big - small < 3 * 1024, (small, big, took)
    for box, n in (("Small", RSS_N), ("Big", 4 * RSS_N)):
        r = c.command(f"STATUS {box} (MESSAGES)")
        assert f"MESSAGES {n})".encode() in b"".join(r.untagged), r
