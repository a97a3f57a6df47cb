"""Switching in place from Courier-IMAP and from Maildirs that no IMAP
server numbered (mutt, getmail, procmail): doc/migration.md.

The folders are written by the test in Courier's formats
(courierimapuiddb, courierimapkeywords/, courierimapsubscribed), as
Courier 4/5 and Dovecot's courier-dovecot-migrate.pl describe them, and
as a plain Maildir with no uidlist at all. moat must keep Courier's
UIDVALIDITY, UIDs (gaps included) and keywords, number files Courier
never listed above its next UID, number a plain Maildir by file name,
and fall back to new UIDs for a corrupt list."""

import os

from switchhelp import folder_state, message, subscribed_names

UIDVALIDITY = 1500000000


def write_msg(root, sub, name, subject):
    d = root / sub
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(message(subject))


def make_folder(root):
    for sub in ("cur", "new", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)


def own(server, path):
    u = server.users["testuser1"]
    for top, dirs, files in os.walk(path):
        os.chown(top, u["uid"], u["gid"])
        for name in files:
            os.chown(os.path.join(top, name), u["uid"], u["gid"])


def courier_inbox(root):
    """INBOX: UIDs 3, 7, 8 listed (next 12), one file Courier never saw;
    keywords from :list and from a newer per-message file."""
    make_folder(root)
    names = ["1400000001.M1P1.host", "1400000002.M2P1.host",
             "1400000003.M3P1.host", "1400000009.M9P1.host"]
    write_msg(root, "cur", names[0] + ":2,S", "c3 seen kw")
    write_msg(root, "cur", names[1] + ":2,FS", "c7 flagged")
    write_msg(root, "cur", names[2] + ":2,", "c8 update kw")
    write_msg(root, "new", names[3], "c-new unlisted")
    (root / "courierimapuiddb").write_text(
        f"1 {UIDVALIDITY} 12\n3 {names[0]}:2,S\n7 {names[1]}\n8 {names[2]}:2,\n")
    kw = root / "courierimapkeywords"
    kw.mkdir()
    (kw / ":list").write_text(
        f"$Label1\nWork\nJunk\n\n{names[0]}:0 1\n{names[2]}:2\n")
    # newer than :list for names[2]: replaces its entry
    (kw / f".5.{names[2]}").write_text("Junk\nPersonal\n")
    (kw / f".3.{names[2]}").write_text("Ignored\n")
    (root / "courierimapsubscribed").write_text("INBOX\nINBOX.Lists\n")
    return names


def test_courier_folder_keeps_uids_and_keywords(moat_server):
    root = moat_server.maildir("testuser1")
    courier_inbox(root)
    lists = root / ".Lists"
    make_folder(lists)
    write_msg(lists, "cur", "1400000100.M1P1.host:2,S", "l1")
    (lists / "courierimapuiddb").write_text(
        f"1 {UIDVALIDITY + 1} 3\n2 1400000100.M1P1.host\n")
    own(moat_server, root)

    c = moat_server.login()
    uidvalidity, uidnext, _, msgs = folder_state(c, "INBOX")
    assert uidvalidity == UIDVALIDITY
    assert msgs == {
        3: ("c3 seen kw", frozenset({"\\Seen", "$Label1", "Work"})),
        7: ("c7 flagged", frozenset({"\\Seen", "\\Flagged"})),
        8: ("c8 update kw", frozenset({"Junk", "Personal"})),
        12: ("c-new unlisted", frozenset()),
    }, msgs
    assert uidnext == 13
    # only the file Courier never listed is \Recent
    assert folder_state(c, "INBOX", examine=False)[2] == 1
    assert folder_state(c, "Lists")[0:2] == (UIDVALIDITY + 1, 3)
    assert {"INBOX", "Lists"} <= subscribed_names(c)
    # Courier's own files are left as they were
    assert (root / "courierimapuiddb").read_text().startswith(f"1 {UIDVALIDITY} 12\n")
    assert (root / "courierimapsubscribed").exists()
    c.command("LOGOUT")


def test_maildir_without_uidlist_numbered_by_name(moat_server):
    root = moat_server.maildir("testuser1")
    make_folder(root)
    # mutt/procmail names: the time first; in cur/ and new/ alike
    write_msg(root, "new", "1600000003.M5P9.box", "third")
    write_msg(root, "cur", "1600000001.M1P9.box:2,S", "first")
    write_msg(root, "cur", "1600000002.M3P9.box:2,RF", "second")
    own(moat_server, root)

    c = moat_server.login()
    uidvalidity, uidnext, _, msgs = folder_state(c, "INBOX")
    assert msgs == {1: ("first", frozenset({"\\Seen"})),
                    2: ("second", frozenset({"\\Answered", "\\Flagged"})),
                    3: ("third", frozenset())}, msgs
    assert uidnext == 4 and uidvalidity > 0
    # one UIDVALIDITY: a second session sees the same numbering
    c2 = moat_server.login()
    assert folder_state(c2, "INBOX") [0:2] == (uidvalidity, uidnext)
    c.command("LOGOUT")
    c2.command("LOGOUT")


def test_corrupt_uidlist_gets_new_uidvalidity(moat_server):
    root = moat_server.maildir("testuser1")
    make_folder(root)
    write_msg(root, "cur", "1600000001.M1P9.box:2,S", "first")
    write_msg(root, "cur", "1600000002.M3P9.box:2,", "second")
    big = 4000000000
    (root / "dovecot-uidlist").write_text(
        f"3 V{big} N20\n5 :1600000001.M1P9.box\n4 :1600000002.M3P9.box\n")
    own(moat_server, root)

    c = moat_server.login()
    uidvalidity, uidnext, _, msgs = folder_state(c, "INBOX")
    # UIDs out of order: not trusted; numbered by name under a greater
    # UIDVALIDITY, so no client takes the new UIDs for the old ones
    assert uidvalidity > big
    assert sorted(msgs) == [1, 2] and uidnext == 3
    assert "corrupt" in moat_server.logs()
    c.command("LOGOUT")
