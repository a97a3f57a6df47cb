"""moatadm index rebuild and -A (every user) for the mail commands
(doc/moatadm.8): the rebuild runs in the user's own imap process, keeps
UIDVALIDITY, UIDs, flags and keywords, and moves HIGHESTMODSEQ forward
so a CONDSTORE client resyncs; a session selected meanwhile keeps its
messages."""

import re

from test_moatadm import EX_NOUSER, EX_USAGE, as_json, moatadm
from test_moatadm_mail import fill_inbox, message

EX_DATAERR = 65


def state(client, mailbox="INBOX"):
    """(uidvalidity, highestmodseq, {uid: (flags, modseq)}), flags
    without \\Recent (which depends on who selected first)."""
    r = client.command(f"SELECT {mailbox} (CONDSTORE)")
    assert r.ok, r
    text = b"\n".join(r.untagged)
    validity = int(re.search(rb"UIDVALIDITY (\d+)", text).group(1))
    highest = int(re.search(rb"HIGHESTMODSEQ (\d+)", text).group(1))
    f = client.command("UID FETCH 1:* (UID FLAGS MODSEQ)")
    assert f.ok, f
    msgs = {}
    for items in f.fetches().values():
        uid = int(items["UID"])
        flags = items["FLAGS"]
        flags = sorted(f for f in (flags if isinstance(flags, list)
                                   else flags.split()) if f != "\\Recent")
        modseq = items["MODSEQ"]
        modseq = int(modseq[0] if isinstance(modseq, list) else modseq.strip("()"))
        msgs[uid] = (flags, modseq)
    assert client.command("UNSELECT").ok
    return validity, highest, msgs


def test_index_rebuild_keeps_uids_flags_keywords(moat_server):
    c = fill_inbox(moat_server)
    assert c.command("SELECT INBOX").ok
    assert c.command("UID STORE 2 +FLAGS (\\Flagged Project-X)").ok
    assert c.command("UID STORE 4 +FLAGS ($Forwarded)").ok
    assert c.command("UNSELECT").ok
    validity, highest, before = state(c)
    assert set(before) == {1, 2, 3, 4}

    # a second session keeps INBOX selected through the rebuild
    watcher = moat_server.login("testuser1")
    assert watcher.command("SELECT INBOX").ok

    r = moatadm(moat_server, "index", "rebuild", "-u", "testuser1", "INBOX",
                json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    rows = as_json(r)
    assert len(rows) == 1
    row = rows[0]
    assert row["mailbox"] == "INBOX" and row["result"] == "ok"
    assert row["messages"] == 4 and row["uidvalidity"] == validity, (row, moat_server.logs())
    assert row["uidnext"] == 5 and row["rebuilt"] == "yes"
    assert row["highestmodseq"] > highest

    v2, h2, after = state(c)
    assert v2 == validity
    assert h2 > highest, "HIGHESTMODSEQ went backwards"
    assert {uid: flags for uid, (flags, _) in after.items()} == \
        {uid: flags for uid, (flags, _) in before.items()}
    # every message changed as far as a CONDSTORE client knows
    assert all(modseq > highest for _, modseq in after.values()), after
    # the selected session: no expunge, the same messages, still readable
    n = watcher.command("NOOP")
    assert n.ok and not n.untagged_with("EXPUNGE"), n
    f = watcher.command("UID FETCH 1:* (UID BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
    assert f.ok and len(f.fetches()) == 4, f
    assert not watcher.command("UID SEARCH ALL").untagged_with("EXPUNGE")
    # the index is sound afterwards
    chk = moatadm(moat_server, "index", "check", "-u", "testuser1", "INBOX")
    assert chk.returncode == 0, chk


def test_index_rebuild_every_mailbox_and_new_mail_after(moat_server):
    c = fill_inbox(moat_server)
    assert c.command("CREATE Work").ok
    assert c.append("Work", message("work one"), flags=["\\Answered"]).ok
    r = moatadm(moat_server, "index", "rebuild", "-u", "testuser1")
    assert r.returncode == 0, (r, moat_server.logs())
    lines = r.stdout.splitlines()
    assert lines[0] == ("mailbox\tmessages\tuidvalidity\tuidnext\t"
                        "highestmodseq\trebuilt\tresult")
    names = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    assert {"INBOX", "Work"} <= set(names)
    assert names["Work"][1] == "1" and names["Work"][-1] == "ok"
    # new mail after the rebuild gets the next UID, not a reused one
    assert c.append("Work", message("work two")).ok
    _, _, msgs = state(c, "Work")
    assert sorted(msgs) == [1, 2]
    assert msgs[1][0] == ["\\Answered"]


def test_index_rebuild_errors(moat_server):
    r = moatadm(moat_server, "index", "rebuild", "-u", "testuser1", "Nope")
    assert r.returncode == EX_NOUSER, r
    r = moatadm(moat_server, "index", "rebuild", "-u", "nobody-here")
    assert r.returncode == EX_NOUSER, r
    assert moatadm(moat_server, "index", "rebuild").returncode == EX_USAGE
    assert moatadm(moat_server, "index", "frob", "-u",
                   "testuser1").returncode == EX_USAGE
    assert moatadm(moat_server, "index", "rebuild", "-A", "-u", "testuser1"
                   ).returncode == EX_USAGE


def test_all_users_for_the_mail_commands(moat_server):
    fill_inbox(moat_server)
    c2 = moat_server.login("testuser2")
    assert c2.append("INBOX", message("for two", sender="bob@example.org")).ok
    assert c2.command("CREATE Only2").ok

    r = moatadm(moat_server, "mailbox", "list", "-A", json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    rows = as_json(r)
    assert {row["user"] for row in rows} == {"testuser1", "testuser2"}
    assert ("testuser2", "Only2") in {(row["user"], row["mailbox"]) for row in rows}

    r = moatadm(moat_server, "mailbox", "status", "-A", "INBOX", json_out=True)
    assert r.returncode == 0, r
    counts = {row["user"]: row["messages"] for row in as_json(r)}
    assert counts == {"testuser1": 4, "testuser2": 1}

    r = moatadm(moat_server, "search", "-A", "INBOX", "from", "bob", json_out=True)
    assert r.returncode == 0, r
    hits = sorted((row["user"], row["uid"]) for row in as_json(r))
    assert hits == [("testuser1", 4), ("testuser2", 1)]

    r = moatadm(moat_server, "fetch", "-A", "INBOX", "uid hdr", "from", "bob")
    assert r.returncode == 0, r
    assert r.stdout.count("Subject: from bob") == 1
    assert r.stdout.count("Subject: for two") == 1
    assert "user: testuser2" in r.stdout

    # a mailbox only one user has: the others are skipped, exit 0
    r = moatadm(moat_server, "search", "-A", "Only2", "all", json_out=True)
    assert r.returncode == 0, r
    assert as_json(r) == []

    r = moatadm(moat_server, "index", "check", "-A", json_out=True)
    assert r.returncode == 0, r
    assert {row["user"] for row in as_json(r)} == {"testuser1", "testuser2"}
    r = moatadm(moat_server, "index", "rebuild", "-A", "INBOX", json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    assert {row["user"]: row["messages"] for row in as_json(r)} == {
        "testuser1": 4, "testuser2": 1}
    # a bad query is a usage error before any user is asked
    r = moatadm(moat_server, "search", "-A", "INBOX", "frobnicate")
    assert r.returncode == EX_USAGE, r


def add_broken_user(server):
    """A userdb entry whose mail nobody may serve (uid 1, below
    first_valid_uid; not root either way)."""
    first = server.users_path.read_text().splitlines()[0].split(":")
    line = f"brokenuser:{first[1]}:1:1::/nonexistent-home::\n"
    with open(server.users_path, "a") as f:
        f.write(line)


def test_all_users_one_failing_does_not_stop_the_others(moat_server):
    fill_inbox(moat_server)
    c2 = moat_server.login("testuser2")
    assert c2.append("INBOX", message("for two")).ok
    add_broken_user(moat_server)
    r = moatadm(moat_server, "mailbox", "status", "-A", "INBOX", json_out=True)
    assert r.returncode not in (0, EX_NOUSER), (r, moat_server.logs())
    counts = {row["user"]: row["messages"] for row in as_json(r)}
    assert counts == {"testuser1": 4, "testuser2": 1}, r
    assert "brokenuser" in r.stderr, r
    r = moatadm(moat_server, "index", "rebuild", "-A", "INBOX")
    assert r.returncode not in (0, EX_NOUSER), r
    users = sorted(line.split("\t")[0] for line in r.stdout.splitlines()[1:])
    assert users == ["testuser1", "testuser2"], r


def test_all_users_progress_lines(moat_server):
    fill_inbox(moat_server)
    r = moatadm(moat_server, "expunge", "-A", "INBOX", "deleted")
    assert r.returncode == 0, r
    # not a terminal: plain lines, the last one with the total
    last = [line for line in r.stderr.splitlines()
            if line.startswith("moatadm: progress: ")][-1]
    assert re.match(r"moatadm: progress: users 2/2 done in \d+:\d\d$", last), r
    q = moatadm(moat_server, "--quiet", "index", "check", "-A")
    assert q.returncode == 0, q
    assert "progress" not in q.stderr, q
