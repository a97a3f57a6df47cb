"""Switching in place from Dovecot to moat and back (doc/migration.md).

A private Dovecot 2.3 builds real folders: messages APPENDed with flags
and keywords, some expunged (UID gaps), subfolders, a non-ASCII name and
subscriptions. Dovecot is stopped, the same Maildir goes to moat's user,
and moat must show every folder with Dovecot's UIDVALIDITY, UIDNEXT, UIDs,
flags and keywords, LIST and LSUB, without \\Recent for old mail. Then
mbsync and offlineimap states made against Dovecot must resync against
moat without downloading anything. Last, moat's changes (a new message
with a new keyword, a keyword stored, an expunge) must survive a switch
back to Dovecot with the UIDs moat gave."""

import os
import shutil

import pytest

from switchhelp import (SwitchDovecot, append, code_value, folder_state,
                        list_names, move_maildir, need_dovecot, subscribed_names,
                        chown_tree)
from test_clients import run_client, need

# folder -> [(subject, flags)]; then the subjects Dovecot expunges
FOLDERS = {
    "INBOX": [("i1 plain", ()), ("i2 seen", ("\\Seen",)),
              ("i3 gone", ()), ("i4 kw", ("\\Seen", "$Forwarded")),
              ("i5 two kw", ("Junk", "$label1", "\\Flagged")),
              ("i6 gone too", ("\\Answered",)),
              ("i7 draft kw", ("\\Draft", "$label1")),
              ("i8 last", ("NonJunk",))],
    "Work": [("w1 gone", ()), ("w2 kw", ("$Work", "\\Seen")),
             ("w3 plain", ())],
    "Work/Sub": [("s1 kw", ("$Sub",)), ("s2 answered", ("\\Answered",))],
    "Entw&APw-rfe": [("e1 draft", ("\\Draft",))],
}
EXPUNGED = {"i3 gone", "i6 gone too", "w1 gone"}
SUBSCRIBED = {"INBOX", "Work/Sub", "Entw&APw-rfe"}


def build_dovecot_folders(d):
    """Fills the private Dovecot; returns {folder: state}, LIST, LSUB."""
    c = d.login()
    for box in FOLDERS:
        if box != "INBOX":
            assert c.command(f'CREATE "{box}"').ok
    for box, msgs in FOLDERS.items():
        for subject, flags in msgs:
            append(c, box, subject, flags)
        gone = [i + 1 for i, (s, _) in enumerate(msgs) if s in EXPUNGED]
        if gone:
            assert c.command(f'SELECT "{box}"').ok
            seqs = ",".join(map(str, gone))
            assert c.command(f"STORE {seqs} +FLAGS.SILENT (\\Deleted)").ok
            assert c.command("EXPUNGE").ok
    for box in SUBSCRIBED:
        assert c.command(f'SUBSCRIBE "{box}"').ok
    states = {box: folder_state(c, box) for box in FOLDERS}
    lists, subs = list_names(c), subscribed_names(c)
    c.command("LOGOUT")
    return states, lists, subs


@pytest.fixture
def dovecot():
    need_dovecot()
    d = SwitchDovecot()
    try:
        d.start()
        yield d
    finally:
        d.stop()


def switch_to_moat(d, moat_server):
    d.halt()
    u = moat_server.users["testuser1"]
    move_maildir(d.maildir, str(moat_server.maildir("testuser1")),
                 u["uid"], u["gid"])


def same_messages(a, b):
    """Folder states equal in UIDVALIDITY, UIDNEXT and every message."""
    return (a[0], a[1], a[3]) == (b[0], b[1], b[3])


def test_dovecot_folders_keep_uids_flags_keywords(dovecot, moat_server):
    states, lists, subs = build_dovecot_folders(dovecot)
    # the test means something only if Dovecot left gaps and keywords
    assert 3 not in states["INBOX"][3] and states["INBOX"][1] == 9
    assert "$label1" in states["INBOX"][3][5][1]
    switch_to_moat(dovecot, moat_server)

    c = moat_server.login()
    for box, state in states.items():
        got = folder_state(c, box)
        assert same_messages(got, state), (box, got, state)
    # old mail is nobody's \Recent news (EXAMINE shows what SELECT takes)
    for box in states:
        assert folder_state(c, box, examine=False)[2] == 0, box
    # LIST has Dovecot's folders (and moat's special-use ones), LSUB the
    # names Dovecot had subscribed
    assert lists <= list_names(c), (lists, list_names(c))
    assert subs <= subscribed_names(c), (subs, subscribed_names(c))
    # a new message continues Dovecot's numbering
    assert append(c, "INBOX", "after the switch") == states["INBOX"][1]
    # moat's files are beside Dovecot's, which are unchanged but for the
    # appended UID (the switch back: below)
    root = moat_server.maildir("testuser1")
    assert (root / "moat.uidlist").exists() and (root / "dovecot.index.log").exists()
    c.command("LOGOUT")


def test_switch_back_to_dovecot(dovecot, moat_server):
    states, _, subs = build_dovecot_folders(dovecot)
    dovecot_owner = dovecot.owner()
    switch_to_moat(dovecot, moat_server)

    c = moat_server.login()
    assert c.command("SELECT INBOX").ok
    new_uid = append(c, "INBOX", "new in moat", ("$MoatKeyword", "\\Flagged"))
    assert c.command("UID STORE 1 +FLAGS.SILENT (MoatStored \\Seen)").ok
    assert c.command("UID STORE 4 +FLAGS.SILENT (\\Deleted)").ok
    assert c.command("UID EXPUNGE 4").ok
    assert c.command('CREATE "Work/New"').ok
    assert c.command('SUBSCRIBE "Work/New"').ok
    assert append(c, "Work/Sub", "sub in moat", ("$Sub",)) == states["Work/Sub"][1]
    moat_states = {box: folder_state(c, box) for box in FOLDERS}
    moat_subs = subscribed_names(c)
    c.command("LOGOUT")
    assert new_uid == states["INBOX"][1]
    assert moat_states["INBOX"][3][1][1] == frozenset({"MoatStored", "\\Seen"})
    rc, _ = moat_server.stop()
    assert rc == 0

    # back: the same Maildir, Dovecot's user again
    move_maildir(str(moat_server.maildir("testuser1")), dovecot.maildir,
                 *dovecot_owner)
    dovecot.restart()
    c = dovecot.login()
    for box, state in moat_states.items():
        got = folder_state(c, box)
        assert same_messages(got, state), (box, got, state)
    assert moat_subs - {"Work/New"} <= subscribed_names(c) | set(), \
        (moat_subs, subscribed_names(c))
    assert "Work/New" in subscribed_names(c)
    c.command("LOGOUT")


def local_files(path):
    """The message files a client keeps: a download would add some."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")
                  if p.is_file() and p.parent.name in ("cur", "new"))


def mbsync_rc(workdir, port, password, user):
    local = workdir / "mbsync"
    (local / "INBOX").mkdir(parents=True, exist_ok=True)
    cfg = workdir / "mbsyncrc"
    cfg.write_text(f"""\
IMAPAccount acct
Host 127.0.0.1
Port {port}
User {user}
Pass {password}
SSLType None
AuthMechs LOGIN PLAIN

IMAPStore far
Account acct

MaildirStore near
Path {local}/
Inbox {local}/INBOX
SubFolders Verbatim

Channel ch
Far :far:
Near :near:
Patterns INBOX Work Work/Sub
Create Both
Expunge Both
SyncState *
Sync All
""")
    return cfg, local


def offlineimap_rc(workdir, port, password, user):
    local = workdir / "offlineimap"
    local.mkdir(exist_ok=True)
    cfg = workdir / "offlineimaprc"
    cfg.write_text(f"""\
[general]
accounts = acct
metadata = {workdir}/offlineimap-meta
ui = quiet

[Account acct]
localrepository = near
remoterepository = far

[Repository near]
type = Maildir
localfolders = {local}

[Repository far]
type = IMAP
remotehost = 127.0.0.1
remoteport = {port}
remoteuser = {user}
remotepass = {password}
ssl = no
starttls = no
auth_mechanisms = PLAIN, LOGIN
folderfilter = lambda name: name in ('INBOX', 'Work', 'Work/Sub')
createfolders = False
""")
    return cfg, local


@pytest.fixture
def workdir(tmp_path):
    yield tmp_path


def test_clients_resync_without_downloading(dovecot, moat_server, workdir):
    mbsync = need("mbsync")
    offlineimap = need("offlineimap")
    build_dovecot_folders(dovecot)
    from dovecotserver import USER, PASSWORD

    runs = []
    for name, rc_func, binary in (
            ("mbsync", mbsync_rc, mbsync), ("offlineimap", offlineimap_rc,
                                            offlineimap)):
        cfg, local = rc_func(workdir, dovecot.port, PASSWORD, USER)
        args = ([binary, "-V", "-c", str(cfg), "ch"] if name == "mbsync" else
                [binary, "-c", str(cfg), "-o", "-u", "quiet"])
        run_client(args, moat_server, f"{name} against Dovecot")
        runs.append((name, rc_func, binary, args, local, local_files(local)))
        assert len(runs[-1][5]) == 10, runs[-1][5]   # 13 appended, 3 expunged

    switch_to_moat(dovecot, moat_server)
    password = moat_server.users["testuser1"]["password"]
    for name, rc_func, binary, args, local, before in runs:
        # the same state, the server's address and user changed
        rc_func(workdir, moat_server.port, password, "testuser1")
        p = run_client(args, moat_server, f"{name} against moat")
        after = local_files(local)
        assert after == before, (name, before, after, p.stdout, p.stderr)


def test_qresync_state_from_dovecot_resyncs(dovecot, moat_server):
    """A client's QRESYNC state made against Dovecot (RFC 7162): after the
    switch its cached HIGHESTMODSEQ is below moat's, so its first resync
    against moat gets every message's flags and the expunge that happened
    on Dovecot after the client last looked, not an empty answer that
    would leave it with a stale flag and a ghost message forever."""
    states, _, _ = build_dovecot_folders(dovecot)
    c = dovecot.login()
    assert c.command("ENABLE QRESYNC").ok
    r = c.command("SELECT INBOX")
    assert r.ok, r
    uidvalidity = code_value(r, "UIDVALIDITY")
    cached_modseq = code_value(r, "HIGHESTMODSEQ")
    assert cached_modseq, r
    known = sorted(states["INBOX"][3])
    # another client changes a flag and expunges a message on Dovecot
    changed, gone = known[0], known[1]
    assert c.command(f"UID STORE {changed} +FLAGS.SILENT (\\Flagged)").ok
    assert c.command(f"UID STORE {gone} +FLAGS.SILENT (\\Deleted)").ok
    assert c.command(f"UID EXPUNGE {gone}").ok
    c.command("LOGOUT")
    switch_to_moat(dovecot, moat_server)

    m = moat_server.login()
    assert m.command("ENABLE QRESYNC").ok
    uids = ",".join(map(str, known))
    r = m.command(f"SELECT INBOX (QRESYNC ({uidvalidity} {cached_modseq} "
                  f"{uids}))")
    assert r.ok, r
    assert code_value(r, "HIGHESTMODSEQ") > cached_modseq, r
    vanished = set()
    for line in r.untagged:
        if line.startswith(b"* VANISHED (EARLIER) "):
            for part in line[21:].decode().split(","):
                a, _, b = part.partition(":")
                vanished.update(range(int(a), int(b or a) + 1))
    assert vanished == {gone}, r
    fetched = {int(i["UID"]): i["FLAGS"] for i in r.fetches().values()}
    assert "\\Flagged" in fetched[changed], r
    assert set(fetched) == set(known) - {gone}, r
    # from here on the modseqs moat gave work as usual
    highest = code_value(r, "HIGHESTMODSEQ")
    assert m.command(f"UID STORE {known[2]} +FLAGS.SILENT (Switched)").ok
    r = m.command(f"UID FETCH 1:* (FLAGS) (CHANGEDSINCE {highest})")
    assert r.ok, r
    assert {int(i["UID"]) for i in r.fetches().values()} == {known[2]}, r
    m.command("LOGOUT")
