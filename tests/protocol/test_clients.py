"""Real IMAP clients against moat: Python's imaplib, mbsync (isync),
offlineimap and neomutt, as Debian packages them (dev.sh installs them).

Each client talks plain IMAP to the test server on 127.0.0.1 and must end
with the results a standard server gives: messages pulled and pushed,
flags and deletions carried both ways, a message read and moved. A client
test is skipped only when its binary is missing.

neomutt has no batch mode for reading mail: with stdin not a terminal it
composes a message to send ("No recipients specified"). So it runs under a
pseudo-terminal (Python's pty), and its muttrc `push`es the keys that find
the message, display it, save it to =Archive, sync the mailbox and quit.

MOAT_CLIENT_DEBUG=1 makes the clients log their IMAP exchange (mbsync -D,
offlineimap -d imap, neomutt -d 2); pytest -s shows it.
"""

import email
import imaplib
import os
import pathlib
import pty
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

CLIENT_TIMEOUT = 60.0  # seconds one client run may take (on a busy machine)
DEBUG = bool(os.environ.get("MOAT_CLIENT_DEBUG"))

MAILDIR_FLAGS = {"D": "\\Draft", "F": "\\Flagged", "R": "\\Answered",
                 "S": "\\Seen", "T": "\\Deleted"}


def message(subject, body="Body text.\r\n"):
    """An RFC 5322 message with CRLF line ends, unique by its subject."""
    mid = re.sub(r"\W", "", subject)
    return (f"From: Alice <alice@example.org>\r\n"
            f"To: testuser1@example.org\r\n"
            f"Subject: {subject}\r\n"
            f"Date: Mon, 1 Jan 2024 10:00:00 +0000\r\n"
            f"Message-ID: <{mid}@example.org>\r\n"
            f"\r\n{body}").encode()


def need(binary):
    path = shutil.which(binary)
    if not path:
        pytest.skip(f"{binary} is not installed (dev.sh installs it)")
    return path


@pytest.fixture
def workdir():
    d = pathlib.Path(tempfile.mkdtemp(prefix="moat-client-", dir="/tmp"))
    yield d
    if not os.environ.get("MOAT_KEEP_TMP"):
        shutil.rmtree(d, ignore_errors=True)


def server_logs(server):
    """The server's logs for a failure message, or why there are none."""
    if not server.conf_path.exists():
        return (f"(the server directory {server.tmp} is gone: removed by "
                "something outside this test)")
    return server.logs()


def imap_login(server, user="testuser1"):
    c = imaplib.IMAP4(server.host, server.port, timeout=10)
    try:
        c.login(user, server.users[user]["password"])
    except imaplib.IMAP4.error as e:
        pytest.fail(f"LOGIN {user}: {e}\n" + server_logs(server))
    return c


def imap_append(server, mailbox, subject, flags=""):
    c = imap_login(server)
    typ, data = c.append(mailbox, f"({flags})" if flags else None, None,
                         message(subject))
    assert typ == "OK", data
    c.logout()


def server_state(server, mailbox="INBOX"):
    """{subject: set of flags} of a mailbox, read with imaplib (no \\Recent)."""
    c = imap_login(server)
    typ, data = c.select(mailbox, readonly=True)
    assert typ == "OK", data
    state = {}
    if int(data[0]) > 0:
        typ, data = c.fetch("1:*", "(FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
        assert typ == "OK", data
        for item in data:
            if not isinstance(item, tuple):
                continue
            flags = set(imaplib.ParseFlags(item[0])) - {b"\\Recent"}
            msg = email.message_from_bytes(item[1])
            state[msg["Subject"]] = {f.decode() for f in flags}
    c.logout()
    return state


def server_store(server, subject, op, flags, expunge=False):
    """STORE op flags on the INBOX message with this subject."""
    c = imap_login(server)
    assert c.select("INBOX")[0] == "OK"
    typ, data = c.search(None, "SUBJECT", f'"{subject}"')
    assert typ == "OK" and len(data[0].split()) == 1, data
    assert c.store(data[0].decode(), op, flags)[0] == "OK"
    if expunge:
        assert c.expunge()[0] == "OK"
    c.logout()


def maildir_files(path):
    return [f for sub in ("cur", "new") for f in (path / sub).iterdir()
            if not f.name.startswith(".")]


def maildir_flags(name):
    _, sep, info = name.rpartition(":2,")
    return {MAILDIR_FLAGS[ch] for ch in info if ch in MAILDIR_FLAGS} if sep else set()


def maildir_state(path):
    """{subject: set of flags} of a local Maildir."""
    state = {}
    for f in maildir_files(path):
        msg = email.message_from_bytes(f.read_bytes())
        state[msg["Subject"]] = maildir_flags(f.name)
    return state


def maildir_find(path, subject):
    found = [f for f in maildir_files(path)
             if email.message_from_bytes(f.read_bytes())["Subject"] == subject]
    assert len(found) == 1, (subject, found)
    return found[0]


def maildir_set_flags(path, subject, letters):
    """Renames the message file into cur/ with exactly these flags."""
    f = maildir_find(path, subject)
    base = f.name.split(":2,")[0]
    f.rename(path / "cur" / f"{base}:2,{''.join(sorted(letters))}")


def maildir_add(path, subject, letters=""):
    """Delivers a new message the Maildir way: tmp/ then a rename."""
    name = f"{int(time.time())}.M{time.monotonic_ns()}P{os.getpid()}.moattest"
    tmp = path / "tmp" / name
    tmp.write_bytes(message(subject))
    if letters:
        tmp.rename(path / "cur" / f"{name}:2,{letters}")
    else:
        tmp.rename(path / "new" / name)


def run_client(args, server, what):
    """Runs a client to completion; its output goes into a failure message."""
    try:
        p = subprocess.run(args, capture_output=True, text=True,
                           timeout=CLIENT_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{what} did not finish within {CLIENT_TIMEOUT}s\n"
                    f"{e.stdout}\n{e.stderr}\n" + server_logs(server))
    print(f"--- {what}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    assert p.returncode == 0, (f"{what} exited with {p.returncode}\n"
                               f"{p.stdout}\n{p.stderr}\n" + server_logs(server))
    return p


# Both sync tests: four messages on the server; first sync pulls them. Then
# locally: m2 flagged, m3 deleted, m5 added; on the server: m1 answered, m4
# expunged. The second sync must leave both sides equal to FINAL.
INITIAL = {"m1 seen": "\\Seen", "m2 plain": "", "m3 plain": "",
           "m4 flagged": "\\Flagged"}
FINAL = {"m1 seen": {"\\Seen", "\\Answered"}, "m2 plain": {"\\Flagged"},
         "m4 flagged": None, "m3 plain": None, "m5 local": {"\\Seen"}}


def fill_server(server):
    for subject, flags in INITIAL.items():
        imap_append(server, "INBOX", subject, flags)


def initial_state():
    return {s: ({f} if f else set()) for s, f in INITIAL.items()}


def final_state():
    return {s: f for s, f in FINAL.items() if f is not None}


def change_both_sides(server, inbox):
    maildir_set_flags(inbox, "m2 plain", "F")
    maildir_find(inbox, "m3 plain").unlink()
    maildir_add(inbox, "m5 local", "S")
    server_store(server, "m1 seen", "+FLAGS", "(\\Answered)")
    server_store(server, "m4 flagged", "+FLAGS", "(\\Deleted)", expunge=True)


# ---- imaplib ----------------------------------------------------------------

def test_imaplib_full_session(moat_server):
    c = imaplib.IMAP4(moat_server.host, moat_server.port, timeout=10)
    assert "IMAP4REV1" in c.capabilities
    typ, data = c.login("testuser1", moat_server.users["testuser1"]["password"])
    assert typ == "OK"

    typ, data = c.list()
    assert typ == "OK"
    names = [imaplib_list_name(x) for x in data]
    assert "INBOX" in names

    assert c.create("Work")[0] == "OK"
    typ, data = c.create("Work")
    assert typ == "NO" and b"ALREADYEXISTS" in data[0].upper()
    assert "Work" in [imaplib_list_name(x) for x in c.list('""', "*")[1]]

    typ, data = c.select("INBOX")
    assert typ == "OK" and data == [b"0"]
    uidvalidity = int(c.untagged_responses["UIDVALIDITY"][0])

    bodies = [message("one"), message("two", "Second body.\r\n"),
              message("three")]
    uids = []
    for body, flags in zip(bodies, [r"(\Seen)", None, r"(\Flagged $Work)"]):
        typ, data = c.append("INBOX", flags, None, body)
        assert typ == "OK", data
        m = re.search(rb"\[APPENDUID (\d+) (\d+)\]", data[0])
        assert m and int(m.group(1)) == uidvalidity, data
        uids.append(int(m.group(2)))
    assert uids == sorted(uids) and len(set(uids)) == 3

    c.noop()
    typ, data = c.select("INBOX")
    assert typ == "OK" and data == [b"3"]

    assert c.search(None, "ALL") == ("OK", [b"1 2 3"])
    assert c.search(None, "SUBJECT", "two") == ("OK", [b"2"])
    assert c.search(None, "SEEN") == ("OK", [b"1"])
    assert c.search(None, "KEYWORD", "$Work") == ("OK", [b"3"])
    assert c.search(None, "BODY", '"Second body"') == ("OK", [b"2"])
    assert c.uid("SEARCH", "ALL") == ("OK", [" ".join(map(str, uids)).encode()])

    typ, data = c.fetch("2", "(UID FLAGS RFC822.SIZE BODY.PEEK[])")
    assert typ == "OK"
    assert data[0][1] == bodies[1]
    assert f"UID {uids[1]}".encode() in data[0][0]
    assert f"RFC822.SIZE {len(bodies[1])}".encode() in data[0][0]
    assert imaplib.ParseFlags(data[0][0]) in ((), (b"\\Recent",))

    typ, data = c.fetch("2", "(BODY[TEXT])")
    assert typ == "OK" and data[0][1] == b"Second body.\r\n"
    typ, data = c.fetch("2", "(FLAGS)")
    assert b"\\Seen" in imaplib.ParseFlags(data[0])

    typ, data = c.store("1", "+FLAGS", r"(\Answered)")
    assert typ == "OK"
    assert set(imaplib.ParseFlags(data[0])) - {b"\\Recent"} == {b"\\Seen", b"\\Answered"}
    typ, data = c.store("3", "-FLAGS.SILENT", r"(\Flagged)")
    assert typ == "OK"

    typ, data = c.copy("1:2", "Work")
    assert typ == "OK"
    assert re.search(rb"\[COPYUID \d+ \S+ \S+\]", data[0]), data
    typ, data = c.status("Work", "(MESSAGES)")
    assert typ == "OK" and b"MESSAGES 2" in data[0]

    assert c.store("1", "+FLAGS", r"(\Deleted)")[0] == "OK"
    typ, data = c.expunge()
    assert typ == "OK" and data == [b"1"]
    assert c.search(None, "ALL") == ("OK", [b"1 2"])
    typ, data = c.fetch("1:2", "(FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
    got = {email.message_from_bytes(d[1])["Subject"]:
           set(imaplib.ParseFlags(d[0])) - {b"\\Recent"}
           for d in data if isinstance(d, tuple)}
    assert got == {"two": {b"\\Seen"}, "three": {b"$Work"}}

    typ, data = c.select("Work", readonly=True)
    assert typ == "OK" and data == [b"2"]
    typ, data = c.fetch("1:2", "(FLAGS BODY.PEEK[])")
    got = [(d[1], set(imaplib.ParseFlags(d[0])) - {b"\\Recent"})
           for d in data if isinstance(d, tuple)]
    assert got == [(bodies[0], {b"\\Seen", b"\\Answered"}),
                   (bodies[1], {b"\\Seen"})]
    assert c.close()[0] == "OK"
    typ, data = c.logout()
    assert typ == "BYE"


def imaplib_list_name(line):
    """The mailbox name of one LIST reply line from imaplib."""
    m = re.match(rb'\((.*?)\) (NIL|"(?:[^"\\]|\\.)*") (.*)$', line)
    assert m, line
    name = m.group(3)
    if name.startswith(b'"'):
        name = name[1:-1].replace(b'\\"', b'"').replace(b"\\\\", b"\\")
    return name.decode()


# ---- mbsync (isync) -----------------------------------------------------------

def mbsync_config(server, workdir):
    local = workdir / "local"
    (local / "INBOX").mkdir(parents=True)
    cfg = workdir / "mbsyncrc"
    cfg.write_text(f"""\
IMAPAccount moat
Host {server.host}
Port {server.port}
User testuser1
Pass {server.users['testuser1']['password']}
SSLType None
AuthMechs LOGIN PLAIN

IMAPStore moat-far
Account moat

MaildirStore near
Path {local}/
Inbox {local}/INBOX
SubFolders Verbatim

Channel test
Far :moat-far:
Near :near:
Patterns INBOX
Create Both
Expunge Both
SyncState *
Sync All
""")
    return cfg, local / "INBOX"


def test_mbsync_two_way(moat_server, workdir):
    mbsync = need("mbsync")
    fill_server(moat_server)
    cfg, inbox = mbsync_config(moat_server, workdir)
    args = [mbsync, "-D" if DEBUG else "-V", "-c", str(cfg), "test"]

    run_client(args, moat_server, "mbsync (first sync)")
    assert maildir_state(inbox) == initial_state()
    assert server_state(moat_server) == initial_state()

    change_both_sides(moat_server, inbox)
    run_client(args, moat_server, "mbsync (second sync)")
    assert server_state(moat_server) == final_state()
    assert maildir_state(inbox) == final_state()

    # A third run finds nothing to do and changes nothing.
    run_client(args, moat_server, "mbsync (third sync)")
    assert server_state(moat_server) == final_state()
    assert maildir_state(inbox) == final_state()


# ---- offlineimap ----------------------------------------------------------------

def offlineimap_config(server, workdir):
    local = workdir / "local"
    local.mkdir()
    cfg = workdir / "offlineimaprc"
    cfg.write_text(f"""\
[general]
accounts = test
metadata = {workdir}/metadata
ui = quiet

[Account test]
localrepository = near
remoterepository = far

[Repository near]
type = Maildir
localfolders = {local}

[Repository far]
type = IMAP
remotehost = {server.host}
remoteport = {server.port}
remoteuser = testuser1
remotepass = {server.users['testuser1']['password']}
ssl = no
starttls = no
auth_mechanisms = PLAIN, LOGIN
folderfilter = lambda name: name == 'INBOX'
createfolders = False
""")
    return cfg, local / "INBOX"


def test_offlineimap_two_way(moat_server, workdir):
    offlineimap = need("offlineimap")
    fill_server(moat_server)
    cfg, inbox = offlineimap_config(moat_server, workdir)
    args = [offlineimap, "-c", str(cfg), "-o", "-u", "quiet"]
    if DEBUG:
        args += ["-d", "imap", "-u", "basic"]

    run_client(args, moat_server, "offlineimap (first sync)")
    assert maildir_state(inbox) == initial_state()
    assert server_state(moat_server) == initial_state()

    change_both_sides(moat_server, inbox)
    run_client(args, moat_server, "offlineimap (second sync)")
    assert server_state(moat_server) == final_state()
    assert maildir_state(inbox) == final_state()

    run_client(args, moat_server, "offlineimap (third sync)")
    assert server_state(moat_server) == final_state()
    assert maildir_state(inbox) == final_state()


# ---- neomutt --------------------------------------------------------------------

def run_in_pty(args, env, timeout):
    """Runs args on a pseudo-terminal, draining its output; returns
    (exit status, output). The child is killed after timeout seconds."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(args[0], args, env)
        finally:
            os._exit(127)
    out = bytearray()
    deadline = time.monotonic() + timeout
    status = None
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                out += data
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
                break
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    code = None if status is None else os.waitstatus_to_exitcode(status)
    return code, out.decode(errors="replace")


def test_neomutt_reads_and_moves(moat_server, workdir):
    neomutt = need("neomutt")
    imap_append(moat_server, "INBOX", "keep me")
    imap_append(moat_server, "INBOX", "move me")
    # The keys: find the message, read it (the pager sets \Seen), save it to
    # =Archive (copy, then mark deleted), sync (expunge) and quit.
    port = moat_server.port
    password = moat_server.users["testuser1"]["password"]
    muttrc = workdir / "muttrc"
    muttrc.write_text(f"""\
set folder = "imap://testuser1@{moat_server.host}:{port}/"
set spoolfile = "+INBOX"
set imap_user = "testuser1"
set imap_pass = "{password}"
set ssl_starttls = no
set ssl_force_tls = no
set header_cache = ""
set message_cachedir = ""
set sort = mailbox-order
set confirmappend = no
set confirmcreate = no
set delete = yes
set move = no
set quit = yes
set mark_old = no
set wait_key = no
set pager_stop = yes
set imap_keepalive = 300
set mail_check = 300
set timeout = 600
push "<search>~s 'move me'<enter><display-message><exit><save-message>=Archive<enter><sync-mailbox><quit>"
""")
    env = {"HOME": str(workdir), "TERM": "xterm", "PATH": "/usr/bin:/bin",
           "LANG": "C.UTF-8"}
    args = [neomutt, "-n", "-F", str(muttrc)]
    log = workdir / "neomutt.log"
    if DEBUG:
        args += ["-d", "2", "-l", str(log)]
    code, out = run_in_pty(args, env, CLIENT_TIMEOUT)
    if DEBUG:
        for f in sorted(workdir.glob("neomutt.log*")):
            print(f"--- neomutt: exit {code}, {f.name}\n" + f.read_text(errors="replace"))
    assert code == 0, (f"neomutt exited with {code}; screen output:\n{out[-3000:]}\n"
                       + server_logs(moat_server))
    assert server_state(moat_server, "INBOX") == {"keep me": set()}
    assert server_state(moat_server, "Archive") == {"move me": {"\\Seen"}}
