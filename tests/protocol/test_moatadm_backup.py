"""moatadm backup and restore (doc/moatadm.8 "BACKUP AND RESTORE"): a
backup is a Maildir++ tree with a dovecot-uidlist per folder and a
manifest of SHA-256 sums; a restore into a user without mail keeps every
UIDVALIDITY, UID, flag, keyword, internal date and subscription, so a
client that knew the old user downloads nothing again."""

import re
import threading

from moatserver import root_only
from test_moatadm import moatadm
from test_moatadm_mail import message
from test_moatadm_mbox import bodies

EX_DATAERR = 65
EX_CANTCREAT = 73
EX_TEMPFAIL = 75
MANIFEST = "moat-backup.manifest"


def folder_state(client, mailbox):
    """(uidvalidity, uidnext, {uid: (flags, internaldate, body)})."""
    r = client.command(f'STATUS "{mailbox}" (UIDVALIDITY UIDNEXT)')
    assert r.ok, r
    text = b"\n".join(r.untagged)
    validity = int(re.search(rb"UIDVALIDITY (\d+)", text).group(1))
    uidnext = int(re.search(rb"UIDNEXT (\d+)", text).group(1))
    return validity, uidnext, bodies(client, f'"{mailbox}"')


def subscriptions(client):
    r = client.command('LSUB "" "*"')
    assert r.ok, r
    return sorted(re.search(rb'"/" (.*)$', line).group(1)
                  for line in r.untagged if line.startswith(b"LSUB"))


def fill(server):
    """testuser1 with UID gaps, keywords, dates, folders, subscriptions."""
    c = server.login("testuser1")
    for name in ("Work", "Work/Sub", "Space Name", "Busy"):
        assert c.command(f'CREATE "{name}"').ok
    assert c.command('SUBSCRIBE "Work/Sub"').ok
    assert c.command('SUBSCRIBE "Gone"').ok   # a name that does not exist
    for i in range(6):
        assert c.append('INBOX (\\Seen $Label%d work) "0%d-Mar-2021 10:00:00 '
                        '+0200"' % (i % 2, i + 1), message(f"inbox {i}")).ok
    assert c.append("Work/Sub (\\Flagged \\Answered)", message("deep")).ok
    assert c.append('"Space Name" (\\Draft)', message("spaced")).ok
    # gaps: expunge two of INBOX
    assert c.command("SELECT INBOX").ok
    assert c.command("UID STORE 2,5 +FLAGS.SILENT (\\Deleted)").ok
    assert c.command("EXPUNGE").ok
    assert c.command("UNSELECT").ok
    return c


def test_backup_then_restore_keeps_uids_and_everything(moat_server, tmp_path):
    src = fill(moat_server)
    dest = tmp_path / "backup"
    # a session keeps changing another folder while the backup runs
    stop = threading.Event()
    busy = moat_server.login("testuser1")

    def load():
        n = 0
        while not stop.is_set():
            busy.append("Busy (\\Seen)", message(f"busy {n}"))
            n += 1
    t = threading.Thread(target=load, daemon=True)
    t.start()
    try:
        r = moatadm(moat_server, "backup", "-u", "testuser1", dest)
    finally:
        stop.set()
        t.join(30)
    assert r.returncode == 0, (r, moat_server.logs())
    assert (dest / MANIFEST).exists()
    assert "INBOX" in r.stdout and "Work/Sub" in r.stdout, r.stdout

    r = moatadm(moat_server, "restore", "-u", "testuser2", dest, json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    assert '"messages": ' in r.stdout, r.stdout

    dst = moat_server.login("testuser2")
    for mailbox in ("INBOX", "Work", "Work/Sub", "Space Name"):
        want = folder_state(src, mailbox)
        got = folder_state(dst, mailbox)
        assert got == want, (mailbox, got, want)
    # the folder that changed during the backup: a snapshot of it, each
    # message as it is in the source
    _, _, busy_src = folder_state(src, "Busy")
    validity, _, busy_dst = folder_state(dst, "Busy")
    assert validity == folder_state(src, "Busy")[0]
    for uid, (flags, date, body) in busy_dst.items():
        assert busy_src[uid] == (flags, date, body), uid
    assert subscriptions(dst) == subscriptions(src)
    # a new message continues after the restored UIDs
    assert dst.append("INBOX", message("after")).ok
    _, _, inbox = folder_state(dst, "INBOX")
    assert max(inbox) == folder_state(src, "INBOX")[1]


def backup_of_testuser1(server, tmp_path):
    fill(server).close()
    dest = tmp_path / "backup"
    r = moatadm(server, "backup", "-u", "testuser1", dest)
    assert r.returncode == 0, r
    return dest


def assert_no_mail(server, user="testuser2"):
    """The user's Maildir is the empty skeleton the test set-up made, and
    no staging directory is left beside it."""
    import os
    home = server.users[user]["home"]
    assert sorted(os.listdir(home / "Maildir")) == ["cur", "new", "tmp"]
    for sub in ("cur", "new", "tmp"):
        assert os.listdir(home / "Maildir" / sub) == []
    assert [n for n in os.listdir(home) if n.startswith("Maildir.")] == []


def test_restore_refuses_a_changed_file(moat_server, tmp_path):
    dest = backup_of_testuser1(moat_server, tmp_path)
    victim = next((dest / "cur").iterdir())
    data = bytearray(victim.read_bytes())
    data[-3] ^= 1
    victim.write_bytes(bytes(data))
    r = moatadm(moat_server, "restore", "-u", "testuser2", dest)
    assert r.returncode == EX_DATAERR, r
    assert "does not match the manifest" in r.stderr, r.stderr
    assert_no_mail(moat_server)


def test_restore_refuses_a_truncated_or_missing_manifest(moat_server, tmp_path):
    dest = backup_of_testuser1(moat_server, tmp_path)
    manifest = dest / MANIFEST
    text = manifest.read_bytes()
    manifest.write_bytes(text[:text.rindex(b"end ")])
    r = moatadm(moat_server, "restore", "-u", "testuser2", dest)
    assert r.returncode == EX_DATAERR, r
    assert "truncated" in r.stderr, r.stderr
    manifest.unlink()
    r = moatadm(moat_server, "restore", "-u", "testuser2", dest)
    assert r.returncode == EX_DATAERR, r
    assert "not a complete moatadm backup" in r.stderr, r.stderr
    # a file the manifest names is gone
    manifest.write_bytes(text)
    next((dest / "cur").iterdir()).unlink()
    r = moatadm(moat_server, "restore", "-u", "testuser2", dest)
    assert r.returncode == EX_DATAERR, r
    assert_no_mail(moat_server)


def test_restore_refuses_a_user_with_mail_or_a_process(moat_server, tmp_path):
    dest = backup_of_testuser1(moat_server, tmp_path)
    # testuser1's process still lingers (its session just ended)
    r = moatadm(moat_server, "restore", "-u", "testuser1", dest)
    assert r.returncode in (EX_TEMPFAIL, EX_CANTCREAT), r
    moat_server.wait_children("imap", 0, timeout=15)
    r = moatadm(moat_server, "restore", "-u", "testuser1", dest)
    assert r.returncode == EX_CANTCREAT, r
    assert "has a mail root already" in r.stderr, r.stderr
    c = moat_server.login("testuser2")
    r = moatadm(moat_server, "restore", "-u", "testuser2", dest)
    assert r.returncode == EX_TEMPFAIL, r
    assert "has an imap process" in r.stderr, r.stderr
    c.close()


def test_backup_needs_a_new_directory_and_all_users(moat_server, tmp_path):
    dest = backup_of_testuser1(moat_server, tmp_path)
    r = moatadm(moat_server, "backup", "-u", "testuser1", dest)
    assert r.returncode == EX_CANTCREAT, r
    moat_server.login("testuser2").close()
    everyone = tmp_path / "all"
    r = moatadm(moat_server, "backup", "-A", everyone)
    assert r.returncode == 0, (r, moat_server.logs())
    for user in ("testuser1", "testuser2"):
        assert (everyone / user / MANIFEST).exists(), user
    assert "testuser2" in r.stdout


def test_restore_into_a_user_without_a_mail_root(moat_server, tmp_path):
    import shutil
    dest = backup_of_testuser1(moat_server, tmp_path)
    shutil.rmtree(moat_server.users["testuser2"]["home"] / "Maildir")
    r = moatadm(moat_server, "restore", "-u", "testuser2", dest)
    assert r.returncode == 0, (r, moat_server.logs())
    src = moat_server.login("testuser1")
    dst = moat_server.login("testuser2")
    assert folder_state(dst, "Work/Sub") == folder_state(src, "Work/Sub")
    assert folder_state(dst, "INBOX") == folder_state(src, "INBOX")


@root_only
def test_restore_that_cannot_write_says_why(moat_server, tmp_path):
    """The writer (the target user) fails at once: its exit code and
    message, not a broken pipe, and nothing left behind."""
    import os
    dest = backup_of_testuser1(moat_server, tmp_path)
    home = moat_server.users["testuser2"]["home"]
    os.chmod(home, 0o500)   # the user cannot make the staging directory
    try:
        r = moatadm(moat_server, "restore", "-u", "testuser2", dest)
    finally:
        os.chmod(home, 0o700)
    assert r.returncode == EX_DATAERR, r
    assert "mkdir" in r.stderr, r.stderr
    assert_no_mail(moat_server)
