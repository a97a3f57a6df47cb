"""NOTIFY (RFC 5465): the command's syntax and errors (3.1, 5, 8), the
events of the selected mailbox between commands and during IDLE (4,
5.1-5.3, 6.1), STATUS of other mailboxes, MailboxName and
SubscriptionChange (5.4, 5.5), the overflow (5.8), and the writers other
than a session: LMTP delivery and another Maildir writer."""

import os
import re
import shutil
import socket
import time

import pytest

from moatimap import ImapClient
from moatserver import IS_ROOT

# Generous for a busy machine; an event that is not pushed at once (only
# a 30 s poll, or the next command) still fails.
WAKE_TIMEOUT = 10.0

SUPPORTED = (b"[BADEVENT (MessageNew MessageExpunge FlagChange MailboxName "
             b"SubscriptionChange)]")


def msg(n, subject=None):
    subject = subject or f"message {n}"
    return (f"From: a@example.org\r\nTo: b@example.org\r\n"
            f"Subject: {subject}\r\n\r\nBody {n}.\r\n").encode()


def wait_line(c, pattern, timeout=WAKE_TIMEOUT):
    """Lines until one matches pattern (bytes regex); all of them."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        line = c.read_line_within(max(0.0, deadline - time.monotonic()))
        if line is None:
            raise AssertionError(f"no {pattern!r} within {timeout}s; "
                                 f"got {seen!r}")
        seen.append(line)
        if re.match(pattern, line):
            return seen


def notify(c, args):
    r = c.command(f"NOTIFY {args}")
    assert r.ok, r
    return r


@pytest.fixture
def two(moat_server):
    """c: a NOTIFY session with INBOX (2 messages) selected; c2: another
    session of the same user."""
    c = moat_server.login("testuser1")
    for i in (1, 2):
        assert c.append("INBOX", msg(i)).ok
    assert c.command("SELECT INBOX").ok
    c2 = moat_server.login("testuser1")
    return moat_server, c, c2


# ---- 3, 8: capability and syntax

def test_capability(moat_server):
    c = moat_server.login("testuser1")
    caps = c.command("CAPABILITY").untagged[0].split()
    assert b"NOTIFY" in caps, caps


@pytest.mark.parametrize("args", [
    "",
    "FOO",
    "NONE extra",
    "SET",
    "SET STATUS",
    "SET selected",
    "SET (selected)",
    "SET (selected (MessageNew))",                     # 5: both or none
    "SET (selected (MessageExpunge))",
    "SET (selected (FlagChange))",                     # 5: needs both
    "SET (personal (MessageNew FlagChange))",
    "SET (selected (MessageNew MessageExpunge MailboxName))",  # 6.1
    "SET (selected-delayed (SubscriptionChange))",
    "SET (selected (MessageNew MessageExpunge)) (selected-delayed NONE)",
    "SET (personal (MessageNew (UID) MessageExpunge))",  # 8: SELECTED only
    "SET (selected (MessageNew (NOSUCHATT) MessageExpunge))",
    "SET (selected (MessageNew () MessageExpunge))",
    "SET (subtree (MessageNew MessageExpunge))",       # no name
    "SET (mailboxes INBOX)",                           # no events
    "SET (mailboxes () NONE)",
    "SET (everything (MessageNew MessageExpunge))",
    "SET (personal ())",
    "SET (personal NONE extra)",
    "SET (personal (\"MailboxName\"))",
    "SET personal NONE",
])
def test_syntax_bad(moat_server, args):
    c = moat_server.login("testuser1")
    r = c.command(f"NOTIFY {args}")
    assert r.status == "BAD", (args, r)
    assert c.command("NOOP").ok


@pytest.mark.parametrize("events", [
    "(MessageNew MessageExpunge AnnotationChange)",
    "(MailboxMetadataChange)",
    "(ServerMetadataChange)",
    "(XUnknownEvent)",
])
def test_badevent(moat_server, events):
    """3.1: unsupported events are a NO [BADEVENT (all supported)]; moat
    has no ANNOTATE or METADATA (5.6, 5.7)."""
    c = moat_server.login("testuser1")
    r = c.command(f"NOTIFY SET (personal {events})")
    assert r.status == "NO", r
    assert r.text.startswith(SUPPORTED), r


def test_annotationchange_alone_is_bad(moat_server):
    """5: AnnotationChange without MessageNew and MessageExpunge is BAD
    before it is unsupported."""
    c = moat_server.login("testuser1")
    r = c.command("NOTIFY SET (personal (AnnotationChange))")
    assert r.status == "BAD", r


def test_limits(moat_server):
    c = moat_server.login("testuser1")
    names = " ".join(f"box{i}" for i in range(101))
    r = c.command(f"NOTIFY SET (mailboxes ({names}) (MailboxName))")
    assert r.status == "NO" and r.code == "LIMIT", r
    groups = " ".join("(personal (MailboxName))" for _ in range(33))
    r = c.command(f"NOTIFY SET {groups}")
    assert r.status == "NO" and r.code == "LIMIT", r
    groups = " ".join("(personal (MailboxName))" for _ in range(32))
    assert c.command(f"NOTIFY SET {groups}").ok


def test_unknown_mailboxes(moat_server):
    """3.1: names that do not exist are ignored; when nothing the command
    names exists, NO."""
    c = moat_server.login("testuser1")
    r = c.command("NOTIFY SET (mailboxes (nosuch other) "
                  "(MessageNew MessageExpunge))")
    assert r.status == "NO" and r.code == "NONEXISTENT", r
    r = c.command("NOTIFY SET (subtree nosuch (MailboxName))")
    assert r.status == "NO" and r.code == "NONEXISTENT", r
    notify(c, "SET (mailboxes (nosuch INBOX) (MessageNew MessageExpunge))")
    # wildcards are names, not patterns (6.6)
    notify(c, "SET (mailboxes (\"*\" INBOX) (MessageNew MessageExpunge))")
    notify(c, "NONE")


def test_case_insensitive(moat_server):
    c = moat_server.login("testuser1")
    notify(c, "set status (SELECTED-delayed (messagenew MESSAGEEXPUNGE "
           "flagchange)) (PERSONAL (mailboxname SubscriptionChange))")


# ---- 3.1: STATUS indicator, the example

def test_status_indicator(moat_server):
    c = moat_server.login("testuser1")
    assert c.append("Sent", msg(1)).ok
    assert c.command("SELECT INBOX").ok
    r = notify(c, "SET STATUS (mailboxes (INBOX Sent Trash) "
               "(MessageNew MessageExpunge))")
    # the selected mailbox is SELECTED's, not the group's
    assert len(r.untagged) == 2, r
    assert any(re.match(rb'^\* STATUS "?Sent"? \(MESSAGES 1 UIDNEXT 2 '
                        rb'UIDVALIDITY \d+ UNSEEN 1\)$', l)
               for l in r.untagged), r
    assert any(l.startswith(b'* STATUS "Trash"') or
               l.startswith(b"* STATUS Trash") for l in r.untagged), r
    # without STATUS: none
    r = notify(c, "SET (mailboxes (Sent Trash) (MessageNew MessageExpunge))")
    assert r.untagged == [], r
    # CONDSTORE: HIGHESTMODSEQ too (3.1)
    assert c.command("ENABLE CONDSTORE").ok
    r = notify(c, "SET STATUS (mailboxes Sent "
               "(MessageNew MessageExpunge FlagChange))")
    assert len(r.untagged) == 1 and b"HIGHESTMODSEQ" in r.untagged[0], r


def test_rfc_example_3_1(two):
    """The example of RFC 5465 3.1 (its "(subtree Lists MessageNew)" is
    not valid by its own section 5 and 8; with MessageExpunge and the
    list parentheses it is)."""
    server, c, c2 = two
    for box in ("Lists/Lemonade", "Lists/Im2000"):
        assert c.command(f"CREATE {box}").ok
    assert c.append("Lists/Lemonade", msg(3)).ok
    r = notify(c, "set status (selected (MessageNew (uid "
               "body.peek[header.fields (from to subject)]) MessageExpunge)) "
               "(subtree Lists (MessageNew MessageExpunge))")
    # CREATE made Lists a mailbox too: the subtree includes it (6.5)
    status = sorted(l for l in r.untagged if l.startswith(b"* STATUS"))
    assert len(status) == 3, r
    assert status[0].startswith(b"* STATUS Lists (MESSAGES 0 ")
    assert b"Lists/Im2000" in status[1] and b"MESSAGES 0" in status[1]
    assert b"Lists/Lemonade" in status[2] and b"MESSAGES 1" in status[2]
    assert c.command("SELECT inbox").ok
    # a new message in Lists/Lemonade: its STATUS, unasked
    assert c2.append("Lists/Lemonade", msg(4)).ok
    seen = wait_line(c, rb'^\* STATUS "?Lists/Lemonade"? ')
    assert b"MESSAGES 2" in seen[-1] and b"UIDNEXT 3" in seen[-1], seen
    # a new message in INBOX: EXISTS, then the FETCH asked for
    assert c2.append("INBOX", msg(5, "good morning")).ok
    seen = wait_line(c, rb"^\* 3 EXISTS$")
    seen = wait_line(c, rb"^\* 3 FETCH ")
    fetch = seen[-1]
    assert b"UID 3" in fetch, fetch
    assert b"BODY[HEADER.FIELDS (FROM TO SUBJECT)]" in fetch, fetch
    assert b"Subject: good morning" in fetch, fetch
    # not seen by the peek
    r = c.command("FETCH 3 FLAGS")
    assert b"\\Seen" not in r.untagged[0], r
    # the client adds a mailbox without STATUS
    assert c.command("STATUS INBOX (UIDVALIDITY UIDNEXT MESSAGES)").ok
    r = notify(c, "set (selected (MessageNew (uid "
               "body.peek[header.fields (from to subject)]) MessageExpunge)) "
               "(subtree Lists (MessageNew MessageExpunge)) "
               "(mailboxes Trash (MessageNew MessageExpunge))")
    assert r.untagged == [], r


def test_rfc_example_6(two):
    """6: several groups apply to INBOX; the 6 example (FlagChange for
    all personal mailboxes but the selected one)."""
    server, c, c2 = two
    notify(c, "set (mailboxes INBOX (Messagenew messageExpunge)) "
           "(personal (SubscriptionChange))")
    notify(c, "set (selected (Messagenew (uid flags) messageExpunge)) "
           "(personal (MessageNew FlagChange MessageExpunge))")
    assert c2.append("Sent", msg(7)).ok
    wait_line(c, rb'^\* STATUS "?Sent"? ')
    assert c2.command("SELECT Sent").ok
    assert c2.command("STORE 1 +FLAGS (\\Seen)").ok
    seen = wait_line(c, rb'^\* STATUS "?Sent"? ')
    assert b"UNSEEN 0" in seen[-1], seen
    # the selected mailbox: the new message's FETCH (UID FLAGS)
    assert c2.append("INBOX", msg(8)).ok
    seen = wait_line(c, rb"^\* 3 FETCH \(")
    assert b"* 3 EXISTS" in seen, seen
    assert re.match(rb"^\* 3 FETCH \(UID 3 FLAGS \(", seen[-1]), seen


# ---- 5.1-5.3, 6.1: the selected mailbox

def test_selected_between_commands(two):
    server, c, c2 = two
    notify(c, "SET (selected (MessageNew MessageExpunge FlagChange))")
    assert c2.command("SELECT INBOX").ok
    t0 = time.monotonic()
    assert c2.command("STORE 1 +FLAGS.SILENT (\\Flagged)").ok
    seen = wait_line(c, rb"^\* 1 FETCH \(")
    assert b"\\Flagged" in seen[-1], seen
    assert c2.append("INBOX", msg(3)).ok
    wait_line(c, rb"^\* 3 EXISTS$")
    assert c2.command("STORE 2 +FLAGS.SILENT (\\Deleted)").ok
    assert c2.command("EXPUNGE").ok
    wait_line(c, rb"^\* 2 EXPUNGE$")
    assert time.monotonic() - t0 < 3 * WAKE_TIMEOUT
    r = c.command("UID FETCH 1:* UID")
    assert [l for l in r.untagged if b"FETCH" in l] == \
        [b"* 1 FETCH (UID 1)", b"* 2 FETCH (UID 3)"], r


def test_selected_vanished_with_qresync(two):
    server, c, c2 = two
    assert c.command("ENABLE QRESYNC").ok
    assert c.command("SELECT INBOX").ok
    notify(c, "SET (selected (MessageNew MessageExpunge))")
    assert c2.command("SELECT INBOX").ok
    assert c2.command("STORE 1 +FLAGS.SILENT (\\Deleted)").ok
    assert c2.command("EXPUNGE").ok
    wait_line(c, rb"^\* VANISHED 1$")


def test_selected_delayed_holds_expunges(two):
    """6.1.2: EXPUNGE waits for a command that may report it."""
    server, c, c2 = two
    notify(c, "SET (selected-delayed (MessageNew (FLAGS) MessageExpunge))")
    assert c2.command("SELECT INBOX").ok
    assert c2.command("STORE 1 +FLAGS.SILENT (\\Deleted)").ok
    assert c2.command("EXPUNGE").ok
    assert c2.append("INBOX", msg(3)).ok
    # the new message comes at once (its FETCH with the UID, which the
    # client needs), the expunge does not
    seen = wait_line(c, rb"^\* 3 FETCH \(UID 3 FLAGS \(")
    assert b"* 3 EXISTS" in seen, seen
    assert not any(l.endswith(b"EXPUNGE") for l in seen), seen
    r = c.command("FETCH 1:* UID")
    assert r.untagged_with("EXPUNGE") == [], r
    r = c.command("NOOP")
    assert r.untagged_with("EXPUNGE") == [b"* 1 EXPUNGE"], r


def test_no_selected_events(two):
    """3.1: without SELECTED nothing of the selected mailbox comes between
    commands, nor during IDLE (4); its changes wait for a command."""
    server, c, c2 = two
    notify(c, "SET (mailboxes Sent (MessageNew MessageExpunge))")
    tag = c.next_tag()
    c.send(f"{tag} IDLE\r\n")
    assert c.read_line().startswith(b"+ ")
    assert c2.append("INBOX", msg(3)).ok
    assert c2.append("Sent", msg(4)).ok
    # the Sent event is the marker: INBOX's EXISTS did not come first
    seen = wait_line(c, rb'^\* STATUS "?Sent"? ')
    assert seen == [seen[-1]], seen
    # the end of IDLE is the end of a command: it tells
    c.send("DONE\r\n")
    r = c.read_tagged(tag)
    assert r.ok, r
    assert b"* 3 EXISTS" in r.untagged, r


def test_notify_set_is_a_noop(two):
    """3.1: NOTIFY SET reports what is pending for the selected mailbox."""
    server, c, c2 = two
    assert c2.append("INBOX", msg(3)).ok
    r = notify(c, "SET (selected (MessageNew MessageExpunge))")
    assert b"* 3 EXISTS" in r.untagged, r


def test_fetch_not_for_own_append(two):
    """5.2: no FETCH for a message this session added itself."""
    server, c, c2 = two
    notify(c, "SET (selected (MessageNew (UID FLAGS) MessageExpunge))")
    r = c.append("INBOX", msg(3))
    assert r.ok, r
    assert c2.append("INBOX", msg(4)).ok
    seen = wait_line(c, rb"^\* \d+ FETCH \(")
    assert re.match(rb"^\* 4 FETCH \(UID 4 ", seen[-1]), seen
    assert not any(re.match(rb"^\* 3 FETCH", l) for l in seen), seen


def test_fetch_in_idle(two):
    server, c, c2 = two
    notify(c, "SET (selected (MessageNew (UID ENVELOPE) MessageExpunge))")
    tag = c.next_tag()
    c.send(f"{tag} IDLE\r\n")
    assert c.read_line().startswith(b"+ ")
    assert c2.append("INBOX", msg(3, "in idle")).ok
    seen = wait_line(c, rb"^\* 3 FETCH \(")
    assert b"UID 3" in seen[-1] and b'"in idle"' in seen[-1], seen
    assert b"* 3 EXISTS" in seen, seen
    c.send("DONE\r\n")
    assert c.read_tagged(tag).ok


def test_notify_none(two):
    server, c, c2 = two
    notify(c, "SET (selected (MessageNew MessageExpunge)) "
           "(personal (MailboxName))")
    notify(c, "NONE")
    assert c2.command("CREATE gone-quiet").ok
    assert c2.append("INBOX", msg(3)).ok
    # nothing between commands any more; the next command tells
    r = c.command("NOOP")
    assert r.untagged == [b"* 3 EXISTS"] or b"* 3 EXISTS" in r.untagged, r
    assert not any(l.startswith(b"* LIST") for l in r.untagged), r


# ---- other mailboxes: STATUS

def test_status_of_other_mailbox(two):
    server, c, c2 = two
    notify(c, "SET (personal (MessageNew MessageExpunge))")
    assert c2.append("Drafts", msg(3)).ok
    seen = wait_line(c, rb'^\* STATUS "?Drafts"? ')
    assert re.search(rb"MESSAGES 1 UIDNEXT 2 UIDVALIDITY \d+ UNSEEN 1\)$",
                     seen[-1]), seen
    assert c2.command("SELECT Drafts").ok
    assert c2.command("STORE 1 +FLAGS.SILENT (\\Deleted)").ok
    assert c2.command("EXPUNGE").ok
    seen = wait_line(c, rb'^\* STATUS "?Drafts"? ')
    assert b"MESSAGES 0" in seen[-1], seen
    # FlagChange: a FETCH that sets \\Seen too
    notify(c, "SET (personal (MessageNew MessageExpunge FlagChange))")
    assert c2.append("Drafts", msg(6)).ok
    wait_line(c, rb'^\* STATUS "?Drafts"? .*UNSEEN 1')
    assert c2.command("SELECT Drafts").ok
    assert c2.command("FETCH 1 BODY[TEXT]").ok
    seen = wait_line(c, rb'^\* STATUS "?Drafts"? ')
    assert b"MESSAGES 1" in seen[-1] and b"UNSEEN 0" in seen[-1], seen
    assert c2.command("STORE 1 +FLAGS.SILENT (\\Deleted)").ok
    assert c2.command("EXPUNGE").ok
    wait_line(c, rb'^\* STATUS "?Drafts"? .*MESSAGES 0')
    notify(c, "SET (personal (MessageNew MessageExpunge))")
    # a flag change without FlagChange: nothing; the next append is first
    assert c2.append("Drafts", msg(4)).ok
    wait_line(c, rb'^\* STATUS "?Drafts"? .*MESSAGES 1')
    assert c2.command("SELECT Drafts").ok
    assert c2.command("STORE 1 +FLAGS.SILENT (\\Seen)").ok
    assert c2.append("Drafts", msg(5)).ok
    seen = wait_line(c, rb'^\* STATUS "?Drafts"? ')
    assert b"MESSAGES 2" in seen[-1], seen


def test_status_copy_move_and_condstore(two):
    server, c, c2 = two
    assert c.command("ENABLE CONDSTORE").ok
    notify(c, "SET (mailboxes (Archive Trash) "
           "(MessageNew MessageExpunge FlagChange))")
    assert c2.command("SELECT INBOX").ok
    assert c2.command("COPY 1 Archive").ok
    seen = wait_line(c, rb'^\* STATUS "?Archive"? ')
    assert b"HIGHESTMODSEQ" in seen[-1] and b"MESSAGES 1" in seen[-1], seen
    assert c2.command("SELECT Archive").ok
    assert c2.command("MOVE 1 Trash").ok
    # Trash got it, Archive lost it (in either order)
    seen = wait_line(c, rb'^\* STATUS "?Trash"? .*MESSAGES 1')
    if not any(re.match(rb'^\* STATUS "?Archive"? .*MESSAGES 0', l)
               for l in seen):
        wait_line(c, rb'^\* STATUS "?Archive"? .*MESSAGES 0')


def test_own_changes_not_reported(two):
    """5: the client causing an event is not told about it."""
    server, c, c2 = two
    notify(c, "SET (personal (MessageNew MessageExpunge MailboxName))")
    r = c.append("Sent", msg(3))
    assert r.ok
    r = c.command("CREATE mine")
    assert r.ok and r.untagged == [], r
    # the other session's event is the marker
    assert c2.command("CREATE theirs").ok
    seen = wait_line(c, rb"^\* LIST .*theirs")
    assert not any(b"Sent" in l or b"mine" in l for l in seen), seen


# ---- 5.4, 5.5: MailboxName, SubscriptionChange

def test_mailbox_name(two):
    server, c, c2 = two
    notify(c, "SET (personal (MailboxName))")
    assert c2.command("CREATE Projects/New").ok
    seen = wait_line(c, rb'^\* LIST .*"?Projects/New"?$')
    seen += wait_line(c, rb'^\* LIST .*"?Projects"?$') \
        if not any(re.search(rb'"?Projects"?$', l) for l in seen) else []
    new = [l for l in seen if l.endswith(b"Projects/New") or
           l.endswith(b'"Projects/New"')][0]
    assert new.startswith(b'* LIST (\\HasNoChildren) "/" '), new
    parent = [l for l in seen if re.search(rb' "?Projects"?$', l)][0]
    assert b"\\HasChildren" in parent, parent
    assert c2.command("RENAME Projects/New Projects/Old").ok
    seen = wait_line(c, rb"^\* LIST .*OLDNAME")
    assert re.match(rb'^\* LIST \(\\HasNoChildren\) "/" "?Projects/Old"? '
                    rb'\("OLDNAME" \("?Projects/New"?\)\)$', seen[-1]), seen
    assert c2.command("DELETE Projects/Old").ok
    seen = wait_line(c, rb'^\* LIST \(\\NonExistent\) "/" "?Projects/Old"?$')


def test_mailbox_name_filtered(two):
    """Only names the groups cover; subtree covers the name itself."""
    server, c, c2 = two
    assert c2.command("CREATE Lists").ok
    notify(c, "SET (subtree Lists (MailboxName))")
    assert c2.command("CREATE Other").ok
    assert c2.command("CREATE Lists/One").ok
    seen = wait_line(c, rb"^\* LIST .*Lists/One")
    assert not any(b"Other" in l for l in seen), seen


def test_subscription_change(two):
    server, c, c2 = two
    notify(c, "SET (personal (SubscriptionChange))")
    assert c2.command("CREATE Feeds").ok
    assert c2.command("SUBSCRIBE Feeds").ok
    seen = wait_line(c, rb'^\* LIST .*"?Feeds"?$')
    assert b"\\Subscribed" in seen[-1], seen
    # the creation was not asked for
    assert len(seen) == 1, seen
    assert c2.command("UNSUBSCRIBE Feeds").ok
    seen = wait_line(c, rb'^\* LIST .*"?Feeds"?$')
    assert b"\\Subscribed" not in seen[-1], seen


def test_subscribed_filter(two):
    """6.4: subscribed follows the subscription list as it changes."""
    server, c, c2 = two
    assert c2.command("CREATE Watched").ok
    notify(c, "SET (subscribed (MessageNew MessageExpunge))")
    assert c2.append("Watched", msg(1)).ok
    assert c2.command("SUBSCRIBE Watched").ok
    assert c2.append("Watched", msg(2)).ok
    seen = wait_line(c, rb'^\* STATUS "?Watched"? ')
    assert b"MESSAGES 2" in seen[-1], seen


# ---- other writers

@pytest.mark.moat_settings(lmtp=True)
def test_lmtp_delivery(moat_server):
    from test_lmtp import Lmtp, start, data, MSG
    c = moat_server.login("testuser1")
    notify(c, "SET (inboxes (MessageNew MessageExpunge))")
    lm = Lmtp(moat_server)
    start(lm, ["testuser1"])
    assert data(lm, MSG, 1)[0][0] == 250
    seen = wait_line(c, rb'^\* STATUS "?INBOX"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    lm.close()


@pytest.mark.moat_settings(lmtp=True)
def test_lmtp_delivery_selected(moat_server):
    from test_lmtp import Lmtp, start, data, MSG
    c = moat_server.login("testuser1")
    assert c.command("SELECT INBOX").ok
    notify(c, "SET (selected (MessageNew (UID BODY.PEEK[HEADER.FIELDS "
           "(SUBJECT)]) MessageExpunge))")
    lm = Lmtp(moat_server)
    start(lm, ["testuser1"])
    assert data(lm, MSG, 1)[0][0] == 250
    seen = wait_line(c, rb"^\* 1 FETCH ")
    assert b"Subject: lmtp test" in seen[-1], seen
    lm.close()


def drop_file(server, folder_dir, n):
    u = server.users["testuser1"]
    name = f"1700000000.M{n}P1.dropped"
    tmp = folder_dir / "tmp" / name
    tmp.write_bytes(msg(n))
    if IS_ROOT:
        os.chown(tmp, u["uid"], u["gid"])
    os.rename(tmp, folder_dir / "new" / name)


def test_maildir_writer_other_mailbox(two):
    server, c, c2 = two
    notify(c, "SET (mailboxes Archive (MessageNew MessageExpunge))")
    drop_file(server, server.maildir("testuser1") / ".Archive", 9)
    seen = wait_line(c, rb'^\* STATUS "?Archive"? ')
    assert b"MESSAGES 1" in seen[-1], seen


def test_maildir_writer_selected(two):
    server, c, c2 = two
    notify(c, "SET (selected (MessageNew (UID) MessageExpunge))")
    drop_file(server, server.maildir("testuser1"), 10)
    seen = wait_line(c, rb"^\* 3 FETCH \(UID 3\)$")
    assert b"* 3 EXISTS" in seen, seen


# ---- 5.4: MailboxName of folders other programs make, remove, rename

def writer_mkdir(server, path):
    """mkdir as another Maildir writer of the user would."""
    os.mkdir(path)
    if IS_ROOT:
        u = server.users["testuser1"]
        os.chown(path, u["uid"], u["gid"])


def writer_folder(server, name, cur=True):
    d = server.maildir("testuser1") / f".{name}"
    writer_mkdir(server, d)
    if cur:
        for sub in ("tmp", "new", "cur"):
            writer_mkdir(server, d / sub)
    return d


def writer_rmdir(d):
    """rm -r of a folder (moat's index files are in it too)."""
    shutil.rmtree(d)


def list_of(c, name):
    r = c.command(f'LIST "" "{name}"')
    assert r.ok, r
    return [l for l in r.untagged if l.startswith(b"* LIST")]


def test_mailbox_name_other_writer(two):
    """A folder another program makes (mkdir .Foo with cur/new/tmp),
    renames (rename(2): OLDNAME) and removes is reported as moat's own
    CREATE, RENAME and DELETE are; LIST and STATUS follow at once."""
    server, c, c2 = two
    notify(c, "SET (personal (MailboxName))")
    writer_folder(server, "Outside")
    seen = wait_line(c, rb'^\* LIST .*"?Outside"?$')
    assert seen[-1] == b'* LIST (\\HasNoChildren) "/" Outside', seen
    assert list_of(c2, "Outside") == [b'* LIST (\\HasNoChildren) "/" Outside']
    r = c2.command("STATUS Outside (MESSAGES)")
    assert r.ok and r.untagged == [b'* STATUS Outside (MESSAGES 0)'], r
    md = server.maildir("testuser1")
    os.rename(md / ".Outside", md / ".Moved")
    seen = wait_line(c, rb"^\* LIST .*OLDNAME")
    assert seen[-1] == (b'* LIST (\\HasNoChildren) "/" Moved '
                        b'("OLDNAME" (Outside))'), seen
    assert list_of(c2, "Outside") == []
    assert list_of(c2, "Moved") == [b'* LIST (\\HasNoChildren) "/" Moved']
    writer_rmdir(md / ".Moved")
    seen = wait_line(c, rb'^\* LIST .*"?Moved"?$')
    assert seen[-1] == b'* LIST (\\NonExistent) "/" Moved', seen
    assert list_of(c2, "Moved") == []
    assert c2.command("STATUS Moved (MESSAGES)").status == "NO"


def test_mailbox_name_other_writer_cur_later(two):
    """A folder made without cur/ is reported when cur/ comes, as a
    selectable mailbox; a folder moved into the root (made elsewhere)
    is a creation; a child's parent is reported too."""
    server, c, c2 = two
    notify(c, "SET (personal (MailboxName))")
    late = writer_folder(server, "Late", cur=False)
    # made outside the root and moved in whole: one MOVED_TO
    tmp = server.maildir("testuser1") / "tmp" / "prepared"
    writer_mkdir(server, tmp)
    for sub in ("tmp", "new", "cur"):
        writer_mkdir(server, tmp / sub)
    os.rename(tmp, server.maildir("testuser1") / ".Marker")
    seen = wait_line(c, rb'^\* LIST .*"?Marker"?$')
    # events come in order: Late, without cur/, was not reported
    assert not any(b"Late" in l for l in seen), seen
    for sub in ("tmp", "new", "cur"):
        writer_mkdir(server, late / sub)
    seen = wait_line(c, rb'^\* LIST .*"?Late"?$')
    assert seen[-1] == b'* LIST (\\HasNoChildren) "/" Late', seen
    writer_folder(server, "Late.Child")
    seen = wait_line(c, rb'^\* LIST .*"?Late/Child"?$')
    seen += wait_line(c, rb'^\* LIST .*"?Late"?$') \
        if not any(re.search(rb' "?Late"?$', l) for l in seen) else []
    parent = [l for l in seen if re.search(rb' "?Late"?$', l)][0]
    assert b"\\HasChildren" in parent, seen


def test_mailbox_name_own_not_twice(two):
    """moat's own CREATE, RENAME and DELETE are reported once, and not
    to the session that made them, although the root watch sees their
    directories change too."""
    server, c, c2 = two
    notify(c, "SET (personal (MailboxName))")
    notify(c2, "SET (personal (MailboxName))")
    assert c2.command("CREATE Own").ok
    assert c2.command("RENAME Own Own2").ok
    assert c2.command("DELETE Own2").ok
    writer_folder(server, "Marker1")
    seen = wait_line(c, rb'^\* LIST .*"?Marker1"?$')
    # (the attributes are those when the LIST goes out: all gone)
    own = [l.split(b'"/" ', 1)[1] for l in seen if b"Own" in l]
    assert own == [b'Own', b'Own2 ("OLDNAME" (Own))', b'Own2'], seen
    seen = wait_line(c2, rb'^\* LIST .*"?Marker1"?$')
    assert not any(b"Own" in l for l in seen), seen


# ---- folders made, renamed and subscribed after NOTIFY SET are watched

MSG_EVENTS = "(MessageNew MessageExpunge)"


def test_folder_created_later_is_watched(two):
    """A folder made after NOTIFY SET, by another session's CREATE, by
    this session's own CREATE (with a parent CREATE makes), or by
    another program, is watched at once: a message another program
    drops into it right after is reported, and so is another session's
    APPEND."""
    server, c, c2 = two
    notify(c, f"SET (personal {MSG_EVENTS})")
    md = server.maildir("testuser1")
    assert c2.command("CREATE Later").ok
    drop_file(server, md / ".Later", 1)
    seen = wait_line(c, rb'^\* STATUS "?Later"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    assert c2.append("Later", msg(2)).ok
    seen = wait_line(c, rb'^\* STATUS "?Later"? ')
    assert b"MESSAGES 2" in seen[-1], seen
    # own CREATE: the parent it makes is a folder too
    assert c.command("CREATE Mine/Child").ok
    drop_file(server, md / ".Mine.Child", 3)
    seen = wait_line(c, rb'^\* STATUS "?Mine/Child"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    drop_file(server, md / ".Mine", 4)
    seen = wait_line(c, rb'^\* STATUS "?Mine"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    # another program: mkdir, then a message at once (before or after
    # moat watches it: either way it is told)
    d = writer_folder(server, "Outside")
    drop_file(server, d, 5)
    seen = wait_line(c, rb'^\* STATUS "?Outside"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    drop_file(server, d, 6)
    wait_line(c, rb'^\* STATUS "?Outside"? .*MESSAGES 2 ')


def test_folder_cur_before_new_is_watched(two):
    """Another program makes a folder's cur/ first and its new/ only
    later: the folder is told when cur/ comes, and its messages once
    new/ is there (the folder watch waits for new/)."""
    server, c, c2 = two
    notify(c, f"SET (personal (MailboxName MessageNew MessageExpunge))")
    d = server.maildir("testuser1") / ".CurFirst"
    writer_mkdir(server, d)
    writer_mkdir(server, d / "cur")
    # told with cur/ alone: moat has seen the folder before new/ exists
    seen = wait_line(c, rb'^\* LIST .*"?CurFirst"?$')
    assert seen[-1] == b'* LIST (\\HasNoChildren) "/" CurFirst', seen
    writer_mkdir(server, d / "tmp")
    writer_mkdir(server, d / "new")
    drop_file(server, d, 7)
    seen = wait_line(c, rb'^\* STATUS "?CurFirst"? ')
    assert b"MESSAGES 1" in seen[-1], seen


def test_folder_created_later_named_groups(two):
    """`mailboxes` with a name that does not exist yet and `subtree`:
    folders made later under them are watched; one outside them is
    not."""
    server, c, c2 = two
    assert c2.command("CREATE Projects").ok
    notify(c, f"SET (mailboxes Future {MSG_EVENTS}) "
           f"(subtree Projects {MSG_EVENTS})")
    md = server.maildir("testuser1")
    assert c2.command("CREATE Future").ok
    assert c2.command("CREATE Projects/A/B").ok
    assert c2.command("CREATE Elsewhere").ok
    drop_file(server, md / ".Elsewhere", 1)
    drop_file(server, md / ".Future", 2)
    seen = wait_line(c, rb'^\* STATUS "?Future"? ')
    drop_file(server, md / ".Projects.A.B", 3)
    seen += wait_line(c, rb'^\* STATUS "?Projects/A/B"? ')
    assert not any(b"Elsewhere" in l for l in seen), seen


def test_folder_renamed_in_and_away(two):
    """A folder renamed into a covered name (moat's RENAME, with its
    children, or another program's rename(2)) is watched under the new
    name; one renamed away is not watched under its old name any more
    (a message dropped there is not told as the old name's)."""
    server, c, c2 = two
    md = server.maildir("testuser1")
    assert c2.command("CREATE Src/Kid").ok
    assert c2.command("CREATE Src2").ok
    notify(c, f"SET (subtree Target {MSG_EVENTS}) "
           f"(mailboxes (Target2 Archive) {MSG_EVENTS})")
    assert c2.command("RENAME Src Target").ok
    drop_file(server, md / ".Target.Kid", 1)
    seen = wait_line(c, rb'^\* STATUS "?Target/Kid"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    drop_file(server, md / ".Target", 2)
    wait_line(c, rb'^\* STATUS "?Target"? .*MESSAGES 1')
    # another program's rename, and a message at once (before or after
    # moat watches the folder: either way it is told)
    os.rename(md / ".Src2", md / ".Target2")
    drop_file(server, md / ".Target2", 10)
    seen = wait_line(c, rb'^\* STATUS "?Target2"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    drop_file(server, md / ".Target2", 11)
    wait_line(c, rb'^\* STATUS "?Target2"? .*MESSAGES 2 ')
    # from one covered name to another
    assert c2.command("RENAME Target2 Target/Sub").ok
    drop_file(server, md / ".Target.Sub", 12)
    wait_line(c, rb'^\* STATUS "?Target/Sub"? .*MESSAGES 3 ')
    # renamed away: nothing reported under the old name
    assert c2.command("RENAME Target Gone").ok
    drop_file(server, md / ".Gone", 3)
    drop_file(server, md / ".Gone.Kid", 4)
    drop_file(server, md / ".Archive", 5)
    seen = wait_line(c, rb'^\* STATUS "?Archive"? ')
    assert not any(b"Target" in l or b"Gone" in l for l in seen), seen


def test_folder_subscribed_later(two):
    """`subscribed`: a folder subscribed after NOTIFY SET is watched; one
    unsubscribed is not any more."""
    server, c, c2 = two
    md = server.maildir("testuser1")
    assert c2.command("CREATE Sub1").ok
    notify(c, f"SET (subscribed {MSG_EVENTS}) "
           f"(mailboxes Archive {MSG_EVENTS})")
    assert c2.command("SUBSCRIBE Sub1").ok
    drop_file(server, md / ".Sub1", 1)
    seen = wait_line(c, rb'^\* STATUS "?Sub1"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    assert c2.command("UNSUBSCRIBE Sub1").ok
    drop_file(server, md / ".Sub1", 2)
    drop_file(server, md / ".Archive", 3)
    seen = wait_line(c, rb'^\* STATUS "?Archive"? ')
    assert not any(b"Sub1" in l for l in seen), seen


# ---- inotify queue overflow

def imap_process_stopped(server):
    """A context: the user's imap process is stopped (SIGSTOP) inside,
    so that the events made there pile up in its inotify queue."""
    import contextlib
    import signal
    from moatserver import wait_for

    @contextlib.contextmanager
    def stopped():
        pid = server.wait_children("imap", 1)[0]
        os.kill(pid, signal.SIGSTOP)

        def is_stopped():
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "T"
        try:
            assert wait_for(is_stopped, 10)
            yield
        finally:
            os.kill(pid, signal.SIGCONT)
    return stopped()


def flood_events(server):
    """More inotify events than a queue holds: a file made and removed
    in the Maildir++ root (two events each; not a folder)."""
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        limit = int(f.read())
    if limit > 1000000:
        pytest.skip(f"fs.inotify.max_queued_events is {limit}")
    path = server.maildir("testuser1") / "flood"
    for _ in range(limit // 2 + 100):
        path.write_bytes(b"")
        path.unlink()


def test_queue_overflow_message_events(two):
    """Events lost to a queue overflow: the folder watches are set again
    from the folder list (a folder made meanwhile is watched) and every
    covered folder's STATUS goes out, so a message dropped meanwhile is
    told; no NOTIFICATIONOVERFLOW for a set without MailboxName."""
    server, c, c2 = two
    notify(c, f"SET (personal {MSG_EVENTS})")
    md = server.maildir("testuser1")
    with imap_process_stopped(server):
        flood_events(server)
        d = writer_folder(server, "Lost")
        drop_file(server, d, 1)
        drop_file(server, md / ".Archive", 2)
    seen = wait_line(c, rb'^\* STATUS "?Lost"? ')
    if not any(re.match(rb'^\* STATUS "?Archive"? ', l) for l in seen):
        seen += wait_line(c, rb'^\* STATUS "?Archive"? ')
    assert not any(b"NOTIFICATIONOVERFLOW" in l for l in seen), seen
    assert b"MESSAGES 1" in [l for l in seen if b"Lost" in l][-1], seen
    assert "inotify event queue overflowed" in server.logs()
    # Lost is watched from now on
    drop_file(server, d, 3)
    wait_line(c, rb'^\* STATUS "?Lost"? .*MESSAGES 2 ')


def test_queue_overflow_mailbox_name(two):
    """A set asking for MailboxName gets OK [NOTIFICATIONOVERFLOW] when
    the root's events were lost (which folders came is not known) and
    NOTIFY is off for it (RFC 5465 5.8); another session's set without
    MailboxName goes on."""
    server, c, c2 = two
    notify(c, "SET (personal (MailboxName))")
    notify(c2, f"SET (mailboxes Archive {MSG_EVENTS})")
    md = server.maildir("testuser1")
    with imap_process_stopped(server):
        flood_events(server)
        writer_folder(server, "Unseen")
    seen = wait_line(c, rb"^\* OK \[NOTIFICATIONOVERFLOW\]")
    assert not any(b"Unseen" in l for l in seen), seen
    wait_line(c2, rb'^\* STATUS "?Archive"? ')
    drop_file(server, md / ".Archive", 1)
    seen = wait_line(c2, rb'^\* STATUS "?Archive"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    assert c2.command("CREATE after").ok
    r = c.command("NOOP")
    assert not any(l.startswith(b"* LIST") for l in r.untagged), r


# ---- other writers in many folders: one shared watch per folder

def test_many_folders_other_writers(two):
    """More folders than a session could hold watches for (120): other
    writers' changes in any covered folder are reported, to every
    session whose set covers it; a watch one session drops (NOTIFY NONE)
    stays for another that still covers the folder."""
    server, c, c2 = two
    for i in range(120):
        writer_folder(server, f"F{i:03d}")
    notify(c, "SET (personal (MessageNew MessageExpunge))")
    notify(c2, "SET (mailboxes (F110 F002) (MessageNew MessageExpunge))")
    md = server.maildir("testuser1")
    drop_file(server, md / ".F105", 1)
    seen = wait_line(c, rb'^\* STATUS "?F105"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    drop_file(server, md / ".F002", 2)
    seen = wait_line(c, rb'^\* STATUS "?F002"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    seen = wait_line(c2, rb'^\* STATUS "?F002"? ')
    # c2's set does not cover F105
    assert not any(b"F105" in l for l in seen), seen
    notify(c, "NONE")
    drop_file(server, md / ".F110", 3)
    seen = wait_line(c2, rb'^\* STATUS "?F110"? ')
    assert b"MESSAGES 1" in seen[-1], seen
    # and c, with a new set, again
    notify(c, "SET (subtree F119 (MessageNew MessageExpunge))")
    drop_file(server, md / ".F119", 4)
    seen = wait_line(c, rb'^\* STATUS "?F119"? ')
    assert b"MESSAGES 1" in seen[-1], seen


@pytest.mark.moat_settings(imap_notify_max_watches="3")
def test_watch_limit_logged(two):
    """Past imap_notify_max_watches folders a clear line is logged."""
    server, c, c2 = two
    for i in range(6):
        writer_folder(server, f"G{i}")
    notify(c, "SET (personal (MessageNew MessageExpunge))")
    deadline = time.monotonic() + WAKE_TIMEOUT
    while "imap_notify_max_watches" not in server.logs():
        assert time.monotonic() < deadline, server.logs()
        time.sleep(0.05)
    assert "other programs' changes in further folders are not " \
        "reported" in server.logs()


# ---- 5.8: overflow

def small_window_login(server):
    """A session whose socket takes little: the server's writes back up
    as soon as the client stops reading."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect((server.host, server.port))
    c = ImapClient.__new__(ImapClient)
    c.sock, c.buf, c.tag_no, c.closed = s, b"", 0, False
    c.greeting = c.read_line()
    r = c.command('LOGIN testuser1 "pass"')
    assert r.ok, r
    return c


def big_message(size):
    line = b"x" * 78 + b"\r\n"
    return b"Subject: big\r\n\r\n" + line * (size // len(line))


@pytest.mark.moat_settings(imap_notify_max_buffer="1k")
def test_slow_reader_gets_held_events(moat_server):
    """Events wait while the client has not read its output; they come
    once it has, nothing lost."""
    c2 = moat_server.login("testuser1")
    assert c2.append("INBOX", big_message(4096 * 1024)).ok
    c = small_window_login(moat_server)
    assert c.command("SELECT INBOX").ok
    notify(c, "SET (personal (MailboxName))")
    c.send("f1 FETCH 1 BODY.PEEK[]\r\n")
    for i in range(3):
        assert c2.command(f"CREATE held{i}").ok
    r = c.read_tagged("f1")
    assert r.ok, r
    seen = []
    for i in range(3):
        seen += wait_line(c, rb"^\* LIST .*held")
    assert sorted(l.rsplit(b" ", 1)[1] for l in seen) == \
        [b"held0", b"held1", b"held2"], seen


@pytest.mark.moat_settings(imap_notify_max_buffer="1k")
def test_overflow(moat_server):
    """A client that does not read while events for more mailboxes come
    than a session holds gets OK [NOTIFICATIONOVERFLOW] and no more
    events (as NOTIFY NONE). The 4 MiB FETCH does not fit moat's 1 MiB
    output buffer and the socket's: it is still running (or its output
    unread) when the events come."""
    c2 = moat_server.login("testuser1")
    assert c2.append("INBOX", big_message(4096 * 1024)).ok
    c = small_window_login(moat_server)
    assert c.command("SELECT INBOX").ok
    notify(c, "SET (personal (MailboxName))")
    c.send("f1 FETCH 1 BODY.PEEK[]\r\n")
    for i in range(70):
        assert c2.command(f"CREATE over{i}").ok
    r = c.read_tagged("f1")
    assert r.ok, r
    seen = wait_line(c, rb"^\* OK \[NOTIFICATIONOVERFLOW\]")
    assert not any(l.startswith(b"* LIST") for l in seen), seen
    # NOTIFY is off now
    assert c2.command("CREATE after").ok
    r = c.command("NOOP")
    assert not any(l.startswith(b"* LIST") for l in r.untagged), r
    notify(c, "SET (personal (MailboxName))")
    assert c2.command("CREATE again").ok
    wait_line(c, rb"^\* LIST .*again")


# ---- RFC 5465 7: UPDATE's fetch-atts for a client that does not read

def read_until_closed(c, timeout=30.0):
    """Every byte the server sends until it closes the connection."""
    deadline = time.monotonic() + timeout
    data = c.buf
    c.buf = b""
    while True:
        c.sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            chunk = c.sock.recv(65536)
        except socket.timeout:
            raise AssertionError(f"not closed within {timeout}s; "
                                 f"{len(data)} bytes, ends {data[-200:]!r}")
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


@pytest.mark.parametrize("how", ["idle", "notify"])
def test_update_fetch_does_not_fit(moat_server, how):
    """A new message joins a SEARCH UPDATE context whose fetch-atts
    (BODY.PEEK[] of 4 MiB) do not fit the output buffer while the client
    does not read, during IDLE or between commands with a NOTIFY set:
    what was written of the FETCH cannot be taken back, and the ESEARCH
    must follow it (RFC 5465 7), so the session ends: the connection is
    closed after the cut FETCH (no BYE inside its literal), logged; the
    user's other sessions go on."""
    c2 = moat_server.login("testuser1")
    c = small_window_login(moat_server)
    assert c.command("SELECT INBOX").ok
    if how == "notify":
        notify(c, "SET (selected (MessageNew MessageExpunge))")
    r = c.command("SEARCH RETURN (UPDATE (BODY.PEEK[])) ALL", tag="S1")
    assert r.ok, r
    if how == "idle":
        c.send("i1 IDLE\r\n")
        assert c.read_line().startswith(b"+ ")
    assert c2.append("INBOX", big_message(4096 * 1024)).ok
    data = read_until_closed(c)
    assert re.match(rb"^\* 1 EXISTS\r\n(\* 1 RECENT\r\n)?"
                    rb"\* 1 FETCH \(UID 1 BODY\[\] \{", data), data[:300]
    literal = int(data.split(b"BODY[] {", 1)[1].split(b"}", 1)[0])
    body = data.split(b"BODY[] {", 1)[1].split(b"}\r\n", 1)[1]
    assert len(body) < literal, len(body)
    assert b"* BYE" not in body and b"ESEARCH" not in body, body[-200:]
    deadline = time.monotonic() + WAKE_TIMEOUT
    while "SEARCH UPDATE FETCH does not fit" not in moat_server.logs():
        assert time.monotonic() < deadline, moat_server.logs()
        time.sleep(0.05)
    r = c2.command("STATUS INBOX (MESSAGES)")
    assert r.ok and r.untagged == [b"* STATUS INBOX (MESSAGES 1)"], r
