"""SAVEDATE (RFC 8514): FETCH SAVEDATE and SEARCH SAVEDBEFORE / SAVEDON /
SAVEDSINCE / SAVEDATESUPPORTED. The save date is when the message came into
its mailbox (APPEND, COPY, MOVE, a file found in new/), never its
INTERNALDATE, and it survives new sessions. It is kept in the index cache:
when the cache file is lost the message answers NIL and the SEARCH keys use
its INTERNALDATE (what RFC 8514 4.3 says for storage without save dates)."""

import datetime
import os
import time

from moatserver import IS_ROOT

OLD_DATE = "01-Jan-2020 10:00:00 +0000"
# The server and the tests share the host, so "today" is the same day
# (a run across midnight could differ by one: allowed below).
SLACK = 120


def msg(n):
    return (f"From: a@example.org\r\nSubject: message {n}\r\n\r\n"
            f"Body {n}.\r\n").encode()


def append_old(c, mailbox, n):
    tag = c.next_tag()
    body = msg(n)
    c.send(f'{tag} APPEND {mailbox} () "{OLD_DATE}" {{{len(body)}+}}\r\n'
           .encode() + body + b"\r\n")
    r = c.read_tagged(tag)
    assert r.ok, r


def parse_datetime(value):
    assert isinstance(value, bytes), value
    return datetime.datetime.strptime(value.decode().strip(),
                                      "%d-%b-%Y %H:%M:%S %z")


def savedates(c, seqs="1:*"):
    r = c.command(f"FETCH {seqs} (SAVEDATE INTERNALDATE)")
    assert r.ok, r
    return {seq: (items["SAVEDATE"], items["INTERNALDATE"])
            for seq, items in r.fetches().items()}


def assert_now(value):
    saved = parse_datetime(value).timestamp()
    assert abs(saved - time.time()) < SLACK, value


def imap_day(t):
    return time.strftime("%d-%b-%Y", time.localtime(t))


def search(c, keys):
    r = c.command(f"SEARCH {keys}")
    assert r.ok, r
    found = r.untagged_with("SEARCH")
    assert len(found) == 1, r
    return [int(x) for x in found[0].split()[2:]]


def test_capability(moat_server):
    c = moat_server.login()
    r = c.command("CAPABILITY")
    assert r.ok
    assert b"SAVEDATE" in r.untagged[0].split()


def test_append_gets_now_not_internaldate(moat_server):
    c = moat_server.login()
    append_old(c, "INBOX", 1)
    assert c.command("SELECT INBOX").ok
    saved, internal = savedates(c)[1]
    assert parse_datetime(internal).year == 2020
    assert_now(saved)
    # one item alone, by UID, and the macros do not include it
    r = c.command("UID FETCH 1:* SAVEDATE")
    assert r.ok and r.fetches()[1]["SAVEDATE"] == saved, r
    r = c.command("FETCH 1 ALL")
    assert "SAVEDATE" not in r.fetches()[1], r


def test_savedate_kept_across_sessions(moat_server):
    c = moat_server.login()
    append_old(c, "INBOX", 1)
    assert c.command("SELECT INBOX").ok
    first = savedates(c)[1][0]
    assert c.command("LOGOUT").ok
    c2 = moat_server.login()
    assert c2.command("EXAMINE INBOX").ok
    assert savedates(c2)[1][0] == first


def test_copy_and_move_get_a_new_savedate(moat_server):
    c = moat_server.login()
    assert c.command("CREATE Trash2").ok
    append_old(c, "INBOX", 1)
    append_old(c, "INBOX", 2)
    assert c.command("SELECT INBOX").ok
    src = savedates(c)
    # a second later a copy's save date must differ from the source's
    time.sleep(1.1)
    assert c.command("COPY 1 Trash2").ok
    assert c.command("MOVE 2 Trash2").ok
    c2 = moat_server.login()
    assert c2.command("SELECT Trash2").ok
    dst = savedates(c2)
    assert len(dst) == 2
    for seq in (1, 2):
        saved, internal = dst[seq]
        assert_now(saved)
        assert internal == src[seq][1]   # INTERNALDATE is copied
        assert parse_datetime(saved) > parse_datetime(src[seq][0])
    # the source of COPY keeps its save date (RFC 8514 3)
    assert savedates(c, "1")[1][0] == src[1][0]


def test_file_dropped_into_new(moat_server):
    c = moat_server.login()
    assert c.command("SELECT INBOX").ok
    md = moat_server.maildir("testuser1")
    u = moat_server.users["testuser1"]
    tmp = md / "tmp" / "1600000000.M1P1.delivered"
    tmp.write_bytes(msg(7))
    os.utime(tmp, (1600000000, 1600000000))
    if IS_ROOT:
        os.chown(tmp, u["uid"], u["gid"])
    os.rename(tmp, md / "new" / tmp.name)
    r = c.command("NOOP")
    assert r.ok and r.untagged_with("EXISTS"), r
    saved, internal = savedates(c)[1]
    assert parse_datetime(internal).year == 2020
    assert_now(saved)


def test_search_keys(moat_server):
    c = moat_server.login()
    append_old(c, "INBOX", 1)
    append_old(c, "INBOX", 2)
    assert c.command("SELECT INBOX").ok
    today = imap_day(time.time())
    yesterday = imap_day(time.time() - 86400)
    tomorrow = imap_day(time.time() + 86400)
    # INTERNALDATE is in 2020; the save date is today
    assert search(c, "BEFORE 1-Jan-2021") == [1, 2]
    assert search(c, "SAVEDBEFORE 1-Jan-2021") == []
    assert search(c, f"SAVEDBEFORE {tomorrow}") == [1, 2]
    assert search(c, f"SAVEDON {today}") == [1, 2]
    assert search(c, f"SAVEDSINCE {yesterday}") == [1, 2]
    assert search(c, f"SAVEDSINCE {tomorrow}") == []
    assert search(c, f"SAVEDON {yesterday}") == []
    assert search(c, "SAVEDATESUPPORTED") == [1, 2]
    assert search(c, f"NOT SAVEDON {today}") == []
    assert search(c, f"OR SAVEDON 1-Jan-2020 UID 2") == [2]
    r = c.command("UID SEARCH RETURN (COUNT) SAVEDSINCE 1-Jan-2000")
    assert r.ok and any(b"COUNT 2" in line for line in r.untagged), r


def test_search_bad_dates(moat_server):
    c = moat_server.login()
    assert c.command("SELECT INBOX").ok
    for keys in ("SAVEDON", "SAVEDON 2020-01-01", "SAVEDBEFORE 32-Jan-2020x",
                 "SAVEDSINCE"):
        r = c.command(f"SEARCH {keys}")
        assert r.status == "BAD", (keys, r)
    r = c.command("FETCH 1:* (SAVEDATE.PEEK)")
    assert r.status == "BAD", r


def test_lost_cache_gives_nil_and_internaldate_search(moat_server):
    c = moat_server.login()
    append_old(c, "INBOX", 1)
    assert c.command("SELECT INBOX").ok
    assert savedates(c)[1][0] is not None
    assert c.command("LOGOUT").ok
    cache = moat_server.maildir("testuser1") / "moat.index.cache"
    assert cache.exists()
    cache.unlink()
    c2 = moat_server.login()
    assert c2.command("SELECT INBOX").ok
    saved, internal = savedates(c2)[1]
    assert saved is None
    assert parse_datetime(internal).year == 2020
    # without a save date SEARCH compares the INTERNALDATE
    assert search(c2, "SAVEDON 1-Jan-2020") == [1]
    assert search(c2, "SAVEDBEFORE 2-Jan-2020") == [1]
    assert search(c2, f"SAVEDON {imap_day(time.time())}") == []
    # storage supports save dates even if this one was lost
    assert search(c2, "SAVEDATESUPPORTED") == [1]
    # a new message still gets one
    append_old(c2, "INBOX", 2)
    r = c2.command("NOOP")
    assert r.ok
    assert_now(savedates(c2, "2")[2][0])
