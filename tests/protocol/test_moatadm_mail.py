"""moatadm's mail commands (mailbox, quota, search, fetch, expunge) against a
real master: each runs as a session of the user's own imap process, so a
logged-in client of the user sees the change at once (doc/moatadm.8)."""

import json

import pytest

from test_moatadm import EX_NOUSER, EX_USAGE, as_json, moatadm

EX_DATAERR = 65

OLD_DATE = '"01-Jan-2020 10:00:00 +0000"'


def message(subject, body="Hello.\r\n", sender="alice@example.org"):
    return (f"From: {sender}\r\nTo: testuser1@example.org\r\n"
            f"Subject: {subject}\r\nDate: Wed, 01 Jan 2020 10:00:00 +0000\r\n"
            f"Message-ID: <{subject.replace(' ', '.')}@example.org>\r\n\r\n"
            f"{body}").encode()


def fill_inbox(server):
    """Four messages: uid 1 old and seen, 2 new, 3 deleted, 4 from bob."""
    c = server.login("testuser1")
    assert c.append(f"INBOX (\\Seen) {OLD_DATE}", message("old one")).ok
    assert c.append("INBOX", message("new one")).ok
    assert c.append("INBOX", message("doomed"), flags=["\\Deleted"]).ok
    assert c.append("INBOX", message("from bob", sender="bob@example.org")).ok
    return c


def search_uids(server, *query, mailbox="INBOX"):
    r = moatadm(server, "search", "-u", "testuser1", mailbox, *query, json_out=True)
    assert r.returncode == 0, (r, server.logs())
    return [row["uid"] for row in as_json(r)]


def test_mailbox_create_list_status_rename_delete(moat_server):
    u = ["-u", "testuser1"]
    r = moatadm(moat_server, "mailbox", "create", *u, "Projects", "Ünïcode")
    assert r.returncode == 0, r
    names = [row["mailbox"] for row in
             as_json(moatadm(moat_server, "mailbox", "list", *u, json_out=True))]
    assert "INBOX" in names and "Projects" in names and "Ünïcode" in names
    # on disk as Maildir++ with the name in modified UTF-7
    assert (moat_server.maildir("testuser1") / ".&ANw-n&AO8-code").is_dir()
    again = moatadm(moat_server, "mailbox", "create", *u, "Projects")
    assert again.returncode == EX_DATAERR, again

    c = moat_server.login("testuser1")
    assert c.append("Projects", message("plan")).ok
    rows = as_json(moatadm(moat_server, "mailbox", "status", *u, "Projects",
                           json_out=True))
    assert len(rows) == 1
    st = rows[0]
    assert st["mailbox"] == "Projects"
    assert st["messages"] == 1 and st["unseen"] == 1 and st["uidnext"] == 2
    assert st["size"] > 0 and st["uidvalidity"] > 0
    every = as_json(moatadm(moat_server, "mailbox", "status", *u, json_out=True))
    assert {"INBOX", "Projects"} <= {row["mailbox"] for row in every}

    r = moatadm(moat_server, "mailbox", "rename", *u, "Projects", "Archive2")
    assert r.returncode == 0, r
    listing = moatadm(moat_server, "mailbox", "list", *u).stdout
    assert "Archive2" in listing and "Projects" not in listing
    assert moatadm(moat_server, "mailbox", "delete", *u, "Archive2").returncode == 0
    gone = moatadm(moat_server, "mailbox", "status", *u, "Archive2")
    assert gone.returncode == EX_NOUSER, gone
    # the logged-in client sees the change made through its own process
    r = c.command('LIST "" "*"')
    assert not any(b"Archive2" in line for line in r.untagged)


def test_mailbox_unknown_user_and_usage(moat_server):
    r = moatadm(moat_server, "mailbox", "list", "-u", "nobody-here")
    assert r.returncode == EX_NOUSER, r
    assert moatadm(moat_server, "mailbox", "list").returncode == EX_USAGE
    assert moatadm(moat_server, "mailbox", "frob", "-u", "testuser1").returncode == EX_USAGE


def test_search_query_keys(moat_server):
    fill_inbox(moat_server)
    assert search_uids(moat_server, "all") == [1, 2, 3, 4]
    assert search_uids(moat_server, "seen") == [1]
    assert search_uids(moat_server, "unseen") == [2, 3, 4]
    assert search_uids(moat_server, "deleted") == [3]
    assert search_uids(moat_server, "from", "bob") == [4]
    assert search_uids(moat_server, "not", "deleted", "unseen") == [2, 4]
    # intervals count back from today; the old message has a 2020 date
    assert search_uids(moat_server, "before", "30d") == [1]
    assert search_uids(moat_server, "before", "2021-01-01") == [1]
    assert search_uids(moat_server, "since", "2021-01-01") == [2, 3, 4]
    # every message was saved just now
    assert search_uids(moat_server, "savedbefore", "30d") == []
    assert search_uids(moat_server, "savedsince", "1d") == [1, 2, 3, 4]
    assert search_uids(moat_server, "uid", "2:3") == [2, 3]
    text = moatadm(moat_server, "search", "-u", "testuser1", "INBOX", "seen").stdout
    assert text.splitlines() == ["mailbox\tuid", "INBOX\t1"]


def test_search_bad_query_and_mailbox(moat_server):
    fill_inbox(moat_server)
    bad = moatadm(moat_server, "search", "-u", "testuser1", "INBOX", "sometimes")
    assert bad.returncode == EX_USAGE, bad
    assert "unknown key" in bad.stderr
    bad = moatadm(moat_server, "search", "-u", "testuser1", "INBOX", "before", "soon")
    assert bad.returncode == EX_USAGE, bad
    none = moatadm(moat_server, "search", "-u", "testuser1", "NoSuchBox", "all")
    assert none.returncode == EX_NOUSER, none


def test_fetch_fields(moat_server):
    fill_inbox(moat_server)
    r = moatadm(moat_server, "fetch", "-u", "testuser1", "INBOX",
                "uid flags size hdr", "from", "bob", json_out=True)
    assert r.returncode == 0, r
    rows = as_json(r)
    assert len(rows) == 1
    row = rows[0]
    assert list(row) == ["uid", "flags", "size", "hdr"]
    assert row["uid"] == 4 and "\\Seen" not in row["flags"]
    assert row["size"] == len(message("from bob", sender="bob@example.org"))
    assert "Subject: from bob\r\n" in row["hdr"]
    text = moatadm(moat_server, "fetch", "-u", "testuser1", "INBOX", "uid body text",
                   "uid", "1").stdout
    assert "uid: 1\n" in text and "body: Hello.\n" in text
    assert "Subject: old one" in text
    # fetch reads with BODY.PEEK: nothing became \Seen
    assert search_uids(moat_server, "seen") == [1]
    bad = moatadm(moat_server, "fetch", "-u", "testuser1", "INBOX", "uid colour", "all")
    assert bad.returncode == EX_USAGE, bad


def test_expunge_by_query_keeps_the_rest(moat_server):
    c = fill_inbox(moat_server)
    assert c.command("SELECT INBOX").ok
    # the retention query matches nothing new
    r = moatadm(moat_server, "expunge", "-u", "testuser1", "INBOX",
                "savedbefore", "30d", json_out=True)
    assert r.returncode == 0, r
    assert as_json(r) == {"mailbox": "INBOX", "expunged": 0}
    # only the matches go, not uid 3 which is \Deleted but not matched
    r = moatadm(moat_server, "expunge", "-u", "testuser1", "INBOX", "before", "30d",
                json_out=True)
    assert r.returncode == 0, r
    assert as_json(r)["expunged"] == 1
    assert search_uids(moat_server, "all") == [2, 3, 4]
    # the client that has INBOX selected hears of it
    noop = c.command("NOOP")
    assert any(line.endswith(b" EXPUNGE") for line in noop.untagged), noop
    r = moatadm(moat_server, "expunge", "-u", "testuser1", "INBOX", "deleted")
    assert r.returncode == 0, r
    assert "expunged: 1" in r.stdout
    assert search_uids(moat_server, "all") == [2, 4]
    assert moatadm(moat_server, "expunge", "-u", "testuser1", "INBOX").returncode == EX_USAGE


@pytest.mark.moat_settings(quota_storage="1M", quota_messages=100)
def test_quota_get(moat_server):
    fill_inbox(moat_server)
    r = moatadm(moat_server, "quota", "get", "-u", "testuser1", json_out=True)
    assert r.returncode == 0, r
    rows = {row["resource"]: row for row in as_json(r)}
    assert rows["MESSAGE"]["usage"] == 4 and rows["MESSAGE"]["limit"] == 100
    assert rows["STORAGE"]["limit"] == 1024
    assert rows["STORAGE"]["usage"] >= 1


@pytest.mark.moat_settings(quota_storage="1M", quota_messages=100)
def test_quota_recalc_counts_what_other_writers_left(moat_server):
    fill_inbox(moat_server)
    moat_server.close_clients()
    # another Maildir writer, which does not know maildirsize
    extra = message("dropped in")
    path = moat_server.maildir("testuser1") / "cur" / "1700000000.M1P1.other:2,S"
    path.write_bytes(extra)
    moat_server.chown_home(moat_server.users["testuser1"])
    r = moatadm(moat_server, "quota", "recalc", "-u", "testuser1", json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    got = as_json(r)
    assert got["messages"] == 5
    assert got["storage_bytes"] >= len(extra)
    rows = {row["resource"]: row for row in as_json(
        moatadm(moat_server, "quota", "get", "-u", "testuser1", json_out=True))}
    assert rows["MESSAGE"]["usage"] == 5
    assert "quota recalculated (moatadm)" in moat_server.logs()
    bad = moatadm(moat_server, "quota", "recalc", "-u", "nobody-here")
    assert bad.returncode == EX_NOUSER, bad


@pytest.mark.moat_settings(quota_messages=100)
def test_all_users_expunge_and_quota(moat_server):
    """-A: every user of the passwd-file userdb, one document."""
    fill_inbox(moat_server)
    c2 = moat_server.login("testuser2")
    assert c2.append("INBOX", message("for two"), flags=["\\Deleted"]).ok
    assert c2.command("CREATE Retention").ok
    r = moatadm(moat_server, "expunge", "-A", "INBOX", "deleted", json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    rows = {row["user"]: row for row in as_json(r)}
    assert set(rows) == {"testuser1", "testuser2"}
    assert rows["testuser1"]["expunged"] == 1
    assert rows["testuser2"]["expunged"] == 1
    assert rows["testuser1"]["mailbox"] == "INBOX"
    # a user without the mailbox is skipped, not a failure
    r = moatadm(moat_server, "expunge", "-A", "Retention", "all", json_out=True)
    assert r.returncode == 0, r
    assert [row["user"] for row in as_json(r)] == ["testuser2"]
    r = moatadm(moat_server, "quota", "recalc", "-A")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0] == "user\tstorage_bytes\tmessages"
    assert sorted(line.split("\t")[0] for line in lines[1:]) == ["testuser1", "testuser2"]
    assert {line.split("\t")[0]: line.split("\t")[2] for line in lines[1:]} == {
        "testuser1": "3", "testuser2": "0"}
    got = as_json(moatadm(moat_server, "quota", "get", "-A", json_out=True))
    assert {row["user"] for row in got} == {"testuser1", "testuser2"}
    # -u and -A together, or neither, is a usage error
    assert moatadm(moat_server, "expunge", "-A", "-u", "testuser1", "INBOX",
                   "all").returncode == EX_USAGE
    assert moatadm(moat_server, "quota", "get").returncode == EX_USAGE


def test_index_check(moat_server):
    fill_inbox(moat_server)
    r = moatadm(moat_server, "index", "check", "-u", "testuser1", json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    rows = {row["mailbox"]: row for row in as_json(r)}
    assert rows["INBOX"]["messages"] == 4 and rows["INBOX"]["uidnext"] == 5
    assert all(row["result"] == "ok" for row in rows.values()), rows
    assert "Sent" in rows
    one = moatadm(moat_server, "index", "check", "-u", "testuser1", "INBOX")
    assert one.returncode == 0, one
    lines = one.stdout.splitlines()
    assert lines[0] == ("mailbox\tmessages\tuidvalidity\tuidnext\thighestmodseq\t"
                        "rebuilt\tresult")
    assert lines[1].startswith("INBOX\t4\t") and lines[1].endswith("\tok")
    missing = moatadm(moat_server, "index", "check", "-u", "testuser1", "Nope")
    assert missing.returncode == EX_NOUSER, missing


def test_index_check_reports_a_rebuilt_index(moat_server):
    fill_inbox(moat_server)
    moat_server.close_clients()
    moat_server.wait_children("imap", 0, timeout=30)
    index = moat_server.maildir("testuser1") / "moat.index"
    if not index.exists():
        pytest.skip("no moat.index written yet (everything is in the log)")
    index.write_bytes(b"garbage" * 10)
    r = moatadm(moat_server, "index", "check", "-u", "testuser1", "INBOX",
                json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    row = as_json(r)[0]
    assert row["rebuilt"] == "yes" and row["result"] == "ok"
    assert row["messages"] == 4
