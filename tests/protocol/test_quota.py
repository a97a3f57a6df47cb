"""QUOTA (RFC 9208): GETQUOTA, GETQUOTAROOT, SETQUOTA, the limits from
the userdb and the settings, enforcement where mail enters (APPEND,
MULTIAPPEND, COPY; MOVE never; LMTP; moat-lda) with its edges (exactly at
the limit, one byte over, the grace), the maildirsize file, and the
warnings."""

import re
import subprocess

import pytest

from moatserver import wait_for
from test_lda import run_lda, EX_OK, EX_NOPERM, EX_TEMPFAIL
from test_lmtp import Lmtp, start, data

CAPS = (b"QUOTA", b"QUOTA=RES-STORAGE", b"QUOTA=RES-MESSAGE")


def msg(size, subject="q"):
    """A message of exactly size bytes."""
    head = f"Subject: {subject}\r\n\r\n".encode()
    assert size >= len(head) + 2
    return head + b"x" * (size - len(head) - 2) + b"\r\n"


def quota_lines(r):
    return [u for u in r.untagged if u.startswith((b"* QUOTA ", b"* QUOTAROOT "))]


def set_userdb_fields(server, user, fields):
    """Give user's passwd-file line these extra fields (auth re-reads the
    file when it changes)."""
    lines = server.users_path.read_text().splitlines()
    out = []
    for line in lines:
        if line.startswith(user + ":"):
            parts = line.split(":")
            while len(parts) < 8:
                parts.append("")
            parts[7] = fields
            line = ":".join(parts[:8])
        out.append(line)
    server.users_path.write_text("\n".join(out) + "\n")


def test_capability_and_no_limits(moat_server):
    c = moat_server.login("testuser1")
    caps = c.command("CAPABILITY").untagged[0].split()
    for cap in CAPS:
        assert cap in caps, caps
    assert b"QUOTASET" not in caps
    # without limits INBOX is in no quota root (RFC 9208 4.3.2)
    r = c.command("GETQUOTAROOT INBOX")
    assert r.ok and quota_lines(r) == [b"* QUOTAROOT INBOX"], r
    assert c.command('GETQUOTA ""').status == "NO"
    # the usage is kept anyway, for when a limit comes
    assert c.append("INBOX", msg(100)).ok
    text = (moat_server.maildir("testuser1") / "maildirsize").read_text()
    lines = text.splitlines()
    assert lines[0] == "0S,0C"
    assert sum(int(l.split()[0]) for l in lines[1:]) == 100


@pytest.mark.moat_settings(quota_storage="10k", quota_messages=5, quota_grace="0")
def test_getquota_and_limits(moat_server):
    c = moat_server.login("testuser1")
    r = c.command("GETQUOTAROOT INBOX")
    assert r.ok
    assert quota_lines(r) == [b'* QUOTAROOT INBOX ""',
                              b'* QUOTA "" (STORAGE 0 10 MESSAGE 0 5)'], r
    assert c.command("CREATE Sent2").ok
    r = c.command("GETQUOTAROOT Sent2")
    assert quota_lines(r)[0] == b'* QUOTAROOT Sent2 ""'
    r = c.command("GETQUOTAROOT Nosuch")
    assert r.status == "NO" and b"[NONEXISTENT]" in r.line
    assert c.command('GETQUOTA "other"').status == "NO"
    assert c.command("GETQUOTAROOT").status == "BAD"

    # exactly at the storage limit fits, one byte over does not
    assert c.append("INBOX", msg(6000)).ok
    assert c.append("INBOX", msg(10240 - 6000)).ok
    r = c.command('GETQUOTA ""')
    assert quota_lines(r) == [b'* QUOTA "" (STORAGE 10 10 MESSAGE 2 5)'], r
    r = c.append("INBOX", msg(30))
    assert r.status == "NO" and b"[OVERQUOTA]" in r.line, r
    # nothing of the refused message stays behind
    assert list((moat_server.maildir("testuser1") / "tmp").iterdir()) == []
    assert c.command("SELECT INBOX").ok
    assert c.command("STORE 2 +FLAGS (\\Deleted)").ok
    assert c.command("EXPUNGE").ok
    r = c.command('GETQUOTA ""')
    assert quota_lines(r) == [b'* QUOTA "" (STORAGE 6 10 MESSAGE 1 5)'], r

    # the message count: 5 fit, the 6th does not
    for _ in range(4):
        assert c.append("INBOX", msg(40)).ok
    r = c.append("INBOX", msg(40))
    assert r.status == "NO" and b"[OVERQUOTA]" in r.line, r


@pytest.mark.moat_settings(quota_storage="10k", quota_grace="10%")
def test_grace(moat_server):
    """From below the limit one save may go over it by the grace; then
    the mailbox is full."""
    c = moat_server.login("testuser1")
    assert c.append("INBOX", msg(9000)).ok
    # 9000 + 2000 = 11000 <= 10240 + 1024
    assert c.append("INBOX", msg(2000)).ok
    r = c.append("INBOX", msg(30))
    assert r.status == "NO" and b"[OVERQUOTA]" in r.line
    c2 = moat_server.login("testuser2")
    assert c2.append("INBOX", msg(9000)).ok
    # over even with the grace
    assert c2.append("INBOX", msg(3000)).status == "NO"


@pytest.mark.moat_settings(quota_storage="10k", quota_grace="0")
def test_multiappend_copy_move(moat_server):
    c = moat_server.login("testuser1")
    assert c.command("CREATE Other").ok
    # MULTIAPPEND is all or nothing: over as a whole, nothing is saved
    tag = c.next_tag()
    m1, m2 = msg(6000), msg(6000)
    c.send(f"{tag} APPEND INBOX {{{len(m1)}+}}\r\n".encode() + m1 +
           f" {{{len(m2)}+}}\r\n".encode() + m2 + b"\r\n")
    r = c.read_tagged(tag)
    assert r.status == "NO" and b"[OVERQUOTA]" in r.line, r
    assert c.command("STATUS INBOX (MESSAGES)").untagged == \
        [b"* STATUS INBOX (MESSAGES 0)"]
    assert c.append("INBOX", msg(6000)).ok
    assert c.command("SELECT INBOX").ok
    r = c.command("COPY 1 Other")
    assert r.status == "NO" and b"[OVERQUOTA]" in r.line, r
    # MOVE stays inside the one quota root: never refused for the quota
    r = c.command("MOVE 1 Other")
    assert r.ok, r
    r = c.command('GETQUOTA ""')
    assert quota_lines(r) == [b'* QUOTA "" (STORAGE 6 10)'], r
    # DELETE gives the folder's messages back
    assert c.command("UNSELECT").ok
    assert c.command("DELETE Other").ok
    r = c.command('GETQUOTA ""')
    assert quota_lines(r) == [b'* QUOTA "" (STORAGE 0 10)'], r


def test_userdb_fields_per_user(moat_server):
    set_userdb_fields(moat_server, "testuser2",
                      "quota_storage=20k quota_messages=3")
    c = moat_server.login("testuser2")
    r = c.command("GETQUOTAROOT INBOX")
    assert quota_lines(r)[1] == b'* QUOTA "" (STORAGE 0 20 MESSAGE 0 3)', r
    # testuser1 has none
    c1 = moat_server.login("testuser1")
    assert quota_lines(c1.command("GETQUOTAROOT INBOX")) == [b"* QUOTAROOT INBOX"]
    # the limits are in maildirsize's first line, for moat-lda
    first = (moat_server.maildir("testuser2") / "maildirsize").read_text().split("\n")[0]
    assert first == f"{20 * 1024}S,3C"


def test_setquota_refused(moat_server):
    c = moat_server.login("testuser1")
    r = c.command('SETQUOTA "" (STORAGE 512)')
    assert r.status == "NO" and b"[NOPERM]" in r.line, r
    assert c.command('SETQUOTA ""').status == "BAD"
    assert c.command('SETQUOTA "" (STORAGE)').status == "BAD"
    assert c.command('SETQUOTA "" (STORAGE x)').status == "BAD"


@pytest.mark.moat_settings(lmtp=True, quota_storage="2k", quota_grace="0")
def test_lmtp_over_quota(moat_server):
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, msg(1500, "first"), 1)[0][0] == 250
    start(c, ["testuser1", "testuser2"])
    # (another message: the same one again would be a retry of the first)
    codes = data(c, msg(1500, "second"), 2)
    # testuser1 is full (a bounce), testuser2 is not
    assert codes[0][0] == 552 and codes[0][1][0].startswith("5.2.2"), codes
    assert codes[1][0] == 250


@pytest.mark.moat_settings(lmtp=True, quota_storage="2k", quota_grace="0",
                           quota_full_tempfail="yes")
def test_lmtp_over_quota_tempfail(moat_server):
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, msg(1500, "first"), 1)[0][0] == 250
    start(c, ["testuser1"])
    (code, lines), = data(c, msg(1500, "second"), 1)
    assert code == 452 and lines[0].startswith("4.2.2"), lines


@pytest.mark.moat_settings(quota_storage="2k", quota_grace="0")
def test_lda_over_quota(moat_server):
    # the limits reach moat-lda through maildirsize: log in once first
    moat_server.login("testuser1").command("LOGOUT")
    assert run_lda(moat_server, "testuser1", data=msg(1500)).returncode == EX_OK
    r = run_lda(moat_server, "testuser1", data=msg(1500))
    assert r.returncode == EX_NOPERM and b"quota" in r.stderr.lower(), r


@pytest.mark.moat_settings(quota_storage="2k", quota_grace="0",
                           quota_full_tempfail="yes")
def test_lda_over_quota_tempfail(moat_server):
    moat_server.login("testuser1").command("LOGOUT")
    assert run_lda(moat_server, "testuser1", data=msg(1500)).returncode == EX_OK
    assert run_lda(moat_server, "testuser1",
                   data=msg(1500)).returncode == EX_TEMPFAIL


@pytest.mark.moat_settings(quota_storage="10k", quota_warning="50 90")
def test_warnings_once_per_crossing(moat_server):
    c = moat_server.login("testuser1")
    assert c.append("INBOX", msg(4000)).ok      # 39%: nothing
    assert c.append("INBOX", msg(1500)).ok      # 53%: the 50% warning
    assert c.append("INBOX", msg(500)).ok       # 58%: nothing new
    assert c.append("INBOX", msg(3500)).ok      # 93%: the 90% warning
    assert c.command("EXAMINE INBOX").ok
    r = c.command("FETCH 1:* (BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
    subjects = [re.sub(rb"\s+", b" ", items["BODY[HEADER.FIELDS (SUBJECT)]"]).strip()
                for _, items in sorted(r.fetches().items())]
    warnings = [s for s in subjects if b"full" in s]
    assert warnings == [b"Subject: Your mailbox is 50% full",
                        b"Subject: Your mailbox is 90% full"], subjects
    assert wait_for(lambda: "quota warning: storage at 90%" in moat_server.logs(), 30)


@pytest.mark.moat_settings(quota_storage="1M")
def test_usage_survives_other_writers(moat_server):
    """A file another program removes is not counted down by moat; a
    recalc (no maildirsize) counts what is there."""
    c = moat_server.login("testuser1")
    for _ in range(3):
        assert c.append("INBOX", msg(1000)).ok
    md = moat_server.maildir("testuser1")
    (md / "maildirsize").unlink()
    r = c.command('GETQUOTA ""')
    assert quota_lines(r) == [b'* QUOTA "" (STORAGE 3 1024)'], r
    assert (md / "maildirsize").read_text().splitlines()[1] == "3000 3"


def status_items(r, name):
    """{item: int} of the one '* STATUS name (...)' line of r."""
    lines = [u for u in r.untagged if u.startswith(b"* STATUS " + name + b" ")]
    assert len(lines) == 1, r
    words = lines[0].split(b"(", 1)[1].rstrip(b")").split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}


def test_status_deleted_storage(moat_server):
    """RFC 9208 4.1.4: DELETED counts the \\Deleted messages and
    DELETED-STORAGE their size (RFC822.SIZE here), for a mailbox that is
    not selected (from its index), for the selected one (the session's
    view), and after another session's STORE; an EXPUNGE empties both."""
    c = moat_server.login("testuser1")
    other = moat_server.login("testuser1")
    assert c.command("CREATE dq").ok
    sizes = [100, 250, 1000, 4096]
    for s in sizes:
        assert c.append("dq", msg(s)).ok
    query = "STATUS dq (MESSAGES DELETED DELETED-STORAGE SIZE)"
    got = status_items(c.command(query), b"dq")
    assert got == {b"MESSAGES": 4, b"DELETED": 0, b"DELETED-STORAGE": 0,
                   b"SIZE": sum(sizes)}
    assert other.command("SELECT dq").ok
    assert other.command("STORE 2,4 +FLAGS.SILENT (\\Deleted)").ok
    got = status_items(c.command(query), b"dq")
    assert got[b"DELETED"] == 2 and got[b"DELETED-STORAGE"] == 250 + 4096
    # the selected mailbox answers from the session's own view
    got = status_items(other.command(query), b"dq")
    assert got[b"DELETED"] == 2 and got[b"DELETED-STORAGE"] == 250 + 4096
    # in LIST RETURN (STATUS) too (RFC 5819)
    r = c.command('LIST "" dq RETURN (STATUS (DELETED-STORAGE))')
    assert r.ok and status_items(r, b"dq") == {b"DELETED-STORAGE": 4346}, r
    assert other.command("EXPUNGE").ok
    got = status_items(c.command(query), b"dq")
    assert got == {b"MESSAGES": 2, b"DELETED": 0, b"DELETED-STORAGE": 0,
                   b"SIZE": 1100}
