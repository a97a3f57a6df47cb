"""moatadm import and export of mbox files (doc/moatadm.8 "MBOX"): the
mail goes through the user's imap process (APPEND, UID FETCH); flags,
keywords and internal dates travel in Status/X-Status/X-Keywords and the
From_ line; From_ quoting exactly per format (mboxrd, mboxcl2)."""

import lzma
import os
import re

import pytest

from test_moatadm import EX_USAGE, as_json, moatadm
from test_moatadm_mail import message
from test_moatadm_index import state

EX_DATAERR = 65
CORPUS_MBOX = "/work/shared/corpus/lists/linux-xfs.mbox.xz"

HAND_MADE = (
    b"From alice@example.org Wed Jan  1 10:00:00 2020\n"
    b"Subject: one\nStatus: RO\nX-Status: AF\nX-Keywords: work $Label1\n"
    b"\nbody\n>From me\n>>From you\nFrom: not a From_ line\n\n"
    b"From bob@example.org Thu Jan  2 11:30:00 2020\n"
    b"Subject: two\n\nsecond\n"
)


def bodies(client, mailbox):
    """{uid: (flags, internaldate, BODY[])} of mailbox."""
    assert client.command(f"EXAMINE {mailbox}").ok
    r = client.command("UID FETCH 1:* (UID FLAGS INTERNALDATE BODY.PEEK[])")
    assert r.ok, r
    out = {}
    for items in r.fetches().values():
        flags = items["FLAGS"]
        flags = sorted(f for f in (flags if isinstance(flags, list)
                                   else flags.split()) if f != "\\Recent")
        date = items["INTERNALDATE"]
        date = date.decode() if isinstance(date, bytes) else date
        out[int(items["UID"])] = (flags, date, items["BODY[]"])
    assert client.command("UNSELECT").ok
    return out


def test_import_hand_made_mboxrd(moat_server, tmp_path):
    src = tmp_path / "in.mbox"
    src.write_bytes(HAND_MADE)
    watcher = moat_server.login("testuser1")
    assert watcher.command("SELECT INBOX").ok
    r = moatadm(moat_server, "import", "-u", "testuser1", str(src), json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    assert as_json(r) == {"mailbox": "INBOX", "format": "mboxrd", "messages": 2}
    # the selected session hears of the new mail
    n = watcher.command("NOOP")
    assert n.untagged_with("EXISTS"), n
    got = bodies(watcher, "INBOX")
    assert sorted(got) == [1, 2]
    flags, date, body = got[1]
    assert flags == ["$Label1", "\\Answered", "\\Flagged", "\\Seen", "work"]
    assert date == "01-Jan-2020 10:00:00 +0000"
    # the state headers are gone, one level of quoting too, CRLF lines
    assert body == (b"Subject: one\r\n\r\nbody\r\nFrom me\r\n>From you\r\n"
                    b"From: not a From_ line\r\n")
    assert got[2][0] == [] and got[2][1] == "02-Jan-2020 11:30:00 +0000"
    assert got[2][2] == b"Subject: two\r\n\r\nsecond\r\n"
    # "-": the mbox on standard input
    r = moatadm(moat_server, "import", "-u", "testuser1", "-m", "Piped", "-",
                stdin=HAND_MADE.decode(), json_out=True)
    assert r.returncode == 0, r
    assert as_json(r)["messages"] == 2


@pytest.mark.parametrize("fmt", ["mboxrd", "mboxcl2"])
def test_export_then_import_round_trip(moat_server, tmp_path, fmt):
    c = moat_server.login("testuser1")
    tricky = message("tricky", body="From the start\r\n>From quoted\r\n\r\nend\r\n")
    assert c.append('INBOX (\\Seen \\Flagged) "05-Feb-2021 08:09:10 +0100"',
                    tricky).ok
    assert c.append("INBOX (\\Deleted $Forwarded)", message("plain")).ok
    assert c.append("INBOX", message("new")).ok
    # the first SELECT takes \Recent: the messages are old ("O")
    assert c.command("SELECT INBOX").ok
    assert c.command("UNSELECT").ok
    dest = tmp_path / "out.mbox"
    r = moatadm(moat_server, "export", "-u", "testuser1", "-m", "INBOX",
                "--format", fmt, str(dest), json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    assert as_json(r) == [{"mailbox": "INBOX", "file": str(dest), "messages": 3}]
    data = dest.read_bytes()
    assert b"\r\n" not in data
    assert data.startswith(b"From MAILER-DAEMON Fri Feb  5 07:09:10 2021\n")
    if fmt == "mboxrd":
        assert b"\n>From the start\n>>From quoted\n" in data
        assert b"Content-Length:" not in data
    else:
        assert b"\nFrom the start\n>From quoted\n" in data
        assert data.count(b"\nContent-Length: ") == 3
    assert b"\nStatus: RO\nX-Status: F\n" in data
    assert b"\nStatus: O\nX-Status: D\nX-Keywords: $Forwarded\n" in data

    r = moatadm(moat_server, "import", "-u", "testuser2", "-m", "Restored",
                str(dest), json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    assert as_json(r)["format"] == fmt and as_json(r)["messages"] == 3
    c2 = moat_server.login("testuser2")
    before = bodies(c, "INBOX")
    after = bodies(c2, "Restored")
    assert [v for _, v in sorted(after.items())] == \
        [v for _, v in sorted(before.items())]


def test_export_every_mailbox_to_a_directory(moat_server, tmp_path):
    c = moat_server.login("testuser1")
    assert c.append("INBOX", message("in inbox")).ok
    assert c.command("CREATE Work/Deep").ok
    assert c.append("Work/Deep", message("deep one")).ok
    dest = tmp_path / "tree"
    r = moatadm(moat_server, "export", "-u", "testuser1", str(dest))
    assert r.returncode == 0, (r, moat_server.logs())
    assert (dest / "INBOX.mbox").read_bytes().count(b"\nFrom ") + 1 == 1
    assert b"Subject: deep one" in (dest / "Work" / "Deep.mbox").read_bytes()
    # "moatadm: progress" lines go to stderr, not into the table
    assert r.stdout.splitlines()[0] == "mailbox\tfile\tmessages"
    # an existing file is never overwritten
    again = moatadm(moat_server, "export", "-u", "testuser1", "-m", "INBOX",
                    str(dest / "INBOX.mbox"))
    assert again.returncode == EX_DATAERR, again


def test_import_errors(moat_server, tmp_path):
    bad = tmp_path / "bad.mbox"
    bad.write_bytes(b"Subject: no From_ line\n\nhello\n")
    r = moatadm(moat_server, "import", "-u", "testuser1", str(bad))
    assert r.returncode == EX_DATAERR, r
    assert "not an mbox" in r.stderr
    assert moatadm(moat_server, "import", "-u", "testuser1").returncode == EX_USAGE
    assert moatadm(moat_server, "export", "-u", "testuser1", "--format", "mbox",
                   str(tmp_path / "x")).returncode == EX_USAGE
    r = moatadm(moat_server, "import", "-u", "testuser1", str(tmp_path / "none"))
    assert r.returncode == 67, r


@pytest.mark.moat_settings(imap_max_append_size=4096)
def test_import_stops_at_an_oversized_message(moat_server, tmp_path):
    big = b"x" * 100 + b"\n"
    src = tmp_path / "big.mbox"
    src.write_bytes(b"From a Wed Jan  1 10:00:00 2020\nSubject: small\n\nok\n\n"
                    b"From b Wed Jan  1 10:00:00 2020\nSubject: big\n\n"
                    + big * 100 + b"\n")
    r = moatadm(moat_server, "import", "-u", "testuser1", str(src), json_out=True)
    assert r.returncode == EX_DATAERR, r
    assert "larger than the limit" in r.stderr
    # the row says how far it got: the first message is in
    assert as_json(r)["messages"] == 1


def test_import_real_mboxrd_archive(moat_server, tmp_path):
    """The first 300 messages of a real list archive (mboxrd, LF)."""
    try:
        f = lzma.open(CORPUS_MBOX)
    except OSError:
        pytest.skip("corpus not available")
    src = tmp_path / "xfs.mbox"
    count = 0
    quoted = 0
    with f, open(src, "wb") as out:
        for line in f:
            if line.startswith(b"From "):
                count += 1
                if count > 300:
                    break
            elif re.match(rb">+From ", line):
                quoted += 1
            out.write(line)
    r = moatadm(moat_server, "import", "-u", "testuser1", "-m", "xfs", str(src),
                json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    assert as_json(r)["messages"] == 300
    assert "moatadm: progress: bytes" in r.stderr
    c = moat_server.login("testuser1")
    st = c.command('STATUS xfs (MESSAGES)')
    assert b"MESSAGES 300" in b"".join(st.untagged), st
    # every unquoted From_ line of the bodies, back to what was archived
    exported = tmp_path / "back.mbox"
    r = moatadm(moat_server, "export", "-u", "testuser1", "-m", "xfs",
                str(exported))
    assert r.returncode == 0, r
    back = exported.read_bytes()
    assert back.count(b"\nFrom MAILER-DAEMON ") + back.startswith(b"From ") == 300
    assert len(re.findall(rb"(?m)^>+From ", back)) == quoted


def test_maildir_tree_export_then_import(moat_server, tmp_path):
    c = moat_server.login("testuser1")
    assert c.append('INBOX (\\Seen \\Answered $Forwarded) '
                    '"05-Feb-2021 08:09:10 +0100"', message("one")).ok
    assert c.append("INBOX (\\Deleted work)", message("two")).ok
    assert c.command("CREATE Work/Deep").ok
    assert c.append("Work/Deep (\\Flagged)", message("deep")).ok
    assert c.command("SELECT INBOX").ok and c.command("UNSELECT").ok
    dest = tmp_path / "Maildir"
    r = moatadm(moat_server, "export", "-u", "testuser1", "--format", "maildir",
                str(dest), json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    rows = {row["mailbox"]: row for row in as_json(r)}
    assert rows["INBOX"]["messages"] == 2 and rows["Work/Deep"]["messages"] == 1
    names = sorted(p.name for p in (dest / "cur").iterdir())
    assert len(names) == 2, names
    assert any(n.endswith(":2,RSa") for n in names), names
    assert (dest / ".Work.Deep" / "cur").is_dir()
    assert "$Forwarded" in (dest / "dovecot-keywords").read_text()

    r = moatadm(moat_server, "import", "-u", "testuser2", str(dest), json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    got = {row["mailbox"]: row["messages"] for row in as_json(r)}
    assert got["INBOX"] == 2 and got["Work/Deep"] == 1, got
    c2 = moat_server.login("testuser2")
    key = lambda m: m[2]   # noqa: E731 (by body: directory order is not UID order)
    for mailbox in ("INBOX", '"Work/Deep"'):
        assert sorted(bodies(c, mailbox).values(), key=key) == \
            sorted(bodies(c2, mailbox).values(), key=key)


def test_import_foreign_maildir(moat_server, tmp_path):
    """A Maildir as Dovecot leaves it: new/ and cur/, keyword letters."""
    root = tmp_path / "old"
    for sub in ("cur", "new", "tmp"):
        (root / sub).mkdir(parents=True)
    (root / "dovecot-keywords").write_text("0 Junk\n1 work\n")
    (root / "cur" / "1600000000.M1P1.host,S=20:2,Sb").write_bytes(
        b"Subject: seen\n\nhi\n")
    (root / "new" / "1600000001.M2P1.host").write_bytes(b"Subject: new\n\nyo\n")
    os.utime(root / "cur" / "1600000000.M1P1.host,S=20:2,Sb",
             (1600000000, 1600000000))
    r = moatadm(moat_server, "import", "-u", "testuser1", "-m", "Old", str(root),
                json_out=True)
    assert r.returncode == 0, (r, moat_server.logs())
    assert as_json(r) == [{"mailbox": "Old", "format": "maildir", "messages": 2}]
    c = moat_server.login("testuser1")
    got = sorted(bodies(c, "Old").values(), key=lambda m: m[2])
    # the bytes as in the file (moat stores LF messages as they are)
    assert got[0][2] in (b"Subject: new\r\n\r\nyo\r\n", b"Subject: new\n\nyo\n")
    seen = [m for m in got if b"seen" in m[2]][0]
    assert seen[0] == ["\\Seen", "work"]
    assert seen[1] == "13-Sep-2020 12:26:40 +0000"
