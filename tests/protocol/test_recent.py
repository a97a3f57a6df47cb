"""\\Recent (RFC 3501 2.3.2, 6.3.1, 6.3.2, 6.3.10, 7.3.2): a message is
\\Recent in the first session that SELECTs the mailbox after it arrived,
and only there. STATUS counts such messages without taking them, EXAMINE
shows them without taking them, and an APPEND from a session that does
not have the mailbox selected leaves them for the next SELECT. moat keeps
the boundary in moat.index (first_recent_uid), so this holds across
sessions and processes."""

import re

MSG = b"From: a@example.org\r\nSubject: m%d\r\n\r\nbody %d\r\n"


def msg(i):
    return MSG % (i, i)


def append(c, n, mailbox="INBOX", start=1):
    for i in range(start, start + n):
        assert c.append(mailbox, msg(i)).ok


def recent_of(r):
    """The number of the RECENT response, or None if there was none."""
    for line in r.untagged:
        m = re.match(rb"^\* (\d+) RECENT$", line)
        if m:
            return int(m.group(1))
    return None


def recent_seqs(c):
    r = c.command("FETCH 1:* FLAGS")
    assert r.ok, r
    return sorted(seq for seq, items in r.fetches().items()
                  if "\\Recent" in items["FLAGS"])


def status_recent(c, mailbox="INBOX"):
    r = c.command(f"STATUS {mailbox} (MESSAGES RECENT)")
    assert r.ok, r
    m = re.search(rb"RECENT (\d+)", b" ".join(r.untagged))
    assert m, r
    return int(m.group(1))


def select(c, cmd="SELECT", mailbox="INBOX"):
    r = c.command(f"{cmd} {mailbox}")
    assert r.ok, r
    return r


def test_first_select_takes_recent(moat_server):
    a = moat_server.login()
    append(a, 3)
    b = moat_server.login()
    assert recent_of(select(b)) == 3
    assert recent_seqs(b) == [1, 2, 3]
    c = moat_server.login()
    assert recent_of(select(c)) == 0
    assert recent_seqs(c) == []
    # b keeps them for as long as it has the mailbox selected
    assert recent_seqs(b) == [1, 2, 3]
    r = b.command("SEARCH RECENT")
    assert r.ok and r.untagged == [b"* SEARCH 1 2 3"], r
    # reselecting: they were taken by the earlier SELECT
    assert recent_of(select(b)) == 0


def test_status_does_not_take_recent(moat_server):
    a = moat_server.login()
    append(a, 2)
    assert status_recent(a) == 2
    assert status_recent(a) == 2
    b = moat_server.login()
    assert status_recent(b) == 2
    assert recent_of(select(b)) == 2
    assert status_recent(a) == 0
    # STATUS of the selected mailbox: the session's own \Recent
    assert status_recent(b) == 2


def test_append_from_unselected_session_stays_recent(moat_server):
    a = moat_server.login()
    assert a.command("CREATE Other").ok
    append(a, 1)
    # a has another mailbox selected: its APPEND to INBOX takes nothing
    select(a, mailbox="Other")
    append(a, 1, start=2)
    assert status_recent(a) == 2
    b = moat_server.login()
    assert recent_of(select(b)) == 2
    assert recent_seqs(b) == [1, 2]


def test_examine_does_not_take_recent(moat_server):
    a = moat_server.login()
    append(a, 2)
    b = moat_server.login()
    # shown as \Recent, not taken (RFC 3501 6.3.2)
    assert recent_of(select(b, "EXAMINE")) == 2
    assert recent_seqs(b) == [1, 2]
    assert recent_of(select(b, "EXAMINE")) == 2
    c = moat_server.login()
    assert recent_of(select(c)) == 2
    # now taken: a later EXAMINE sees none
    assert recent_of(select(b, "EXAMINE")) == 0
    assert recent_seqs(b) == []


def test_new_mail_goes_to_one_selected_session(moat_server):
    a = moat_server.login()
    b = moat_server.login()
    select(a)
    select(b)
    c = moat_server.login()
    append(c, 1)
    r = a.command("NOOP")
    assert b"* 1 EXISTS" in r.untagged, r
    assert recent_of(r) == 1
    r = b.command("NOOP")
    assert b"* 1 EXISTS" in r.untagged, r
    assert recent_of(r) in (None, 0)
    assert recent_seqs(a) == [1]
    assert recent_seqs(b) == []
    assert status_recent(c) == 0


def test_append_to_selected_mailbox_is_recent_there(moat_server):
    a = moat_server.login()
    select(a)
    append(a, 1)
    r = a.command("NOOP")
    assert recent_of(r) == 1 or b"* 1 RECENT" in r.untagged or \
        recent_seqs(a) == [1], r
    assert recent_seqs(a) == [1]
    b = moat_server.login()
    assert recent_of(select(b)) == 0


def test_recent_survives_other_sessions_expunge(moat_server):
    a = moat_server.login()
    append(a, 3)
    b = moat_server.login()
    assert recent_of(select(b)) == 3
    c = moat_server.login()
    select(c)
    assert c.command("STORE 2 +FLAGS (\\Deleted)").ok
    assert c.command("EXPUNGE").ok
    r = b.command("NOOP")
    assert b"* 2 EXPUNGE" in r.untagged, r
    assert recent_seqs(b) == [1, 2]
