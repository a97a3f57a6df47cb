"""LMTP delivery (RFC 2033, with RFC 5321's commands, SIZE RFC 1870,
8BITMIME RFC 6152, CHUNKING RFC 3030, ENHANCEDSTATUSCODES RFC 2034/3463):
every reply code of the service, pipelining, multi-recipient DATA, +detail,
the size limit, and the messages read back over IMAP byte for byte."""

import os
import re
import socket
import stat
import time

import pytest

from moatserver import wait_for

pytestmark = pytest.mark.moat_settings(lmtp=True)

MSG = (b"From: sender@example.org\r\nTo: testuser1@example.org\r\n"
       b"Subject: lmtp test\r\n\r\nline one\r\n.leading dot\r\n..two dots\r\n")


class Lmtp:
    """A raw LMTP client: send lines, read replies (multi-line aware)."""

    def __init__(self, server=None, path=None, timeout=30):
        if path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(str(path))
        else:
            self.sock = socket.create_connection((server.host, server.lmtp_port),
                                                 timeout=timeout)
        self.buf = b""
        self.greeting = self.reply()

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError(self.buf)
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def reply(self):
        """(code, [text lines]) of one reply."""
        lines = []
        while True:
            line = self.line()
            assert re.match(r"^\d{3}[ -]", line), line
            lines.append(line[4:])
            if line[3] == " ":
                return int(line[:3]), lines

    def cmd(self, line):
        self.send(line + "\r\n")
        return self.reply()

    def closed(self):
        """True once the server has closed the connection."""
        try:
            return self.sock.recv(1) == b""
        except OSError:
            return True

    def close(self):
        self.sock.close()


def stuff(message):
    """DATA transparency (RFC 5321 4.5.2) and the end line."""
    lines = message.split(b"\r\n")
    body = b"\r\n".join(b"." + l if l.startswith(b".") else l for l in lines)
    return body + (b"" if body.endswith(b"\r\n") else b"\r\n") + b".\r\n"


def start(c, rcpts, sender="sender@example.org"):
    assert c.cmd("LHLO client.example")[0] == 250
    assert c.cmd(f"MAIL FROM:<{sender}>")[0] == 250
    return [c.cmd(f"RCPT TO:<{r}>") for r in rcpts]


def data(c, message, nrcpt):
    assert c.cmd("DATA")[0] == 354
    c.send(stuff(message))
    return [c.reply() for _ in range(nrcpt)]


def fetch_all(server, user, mailbox="INBOX"):
    """Every message of mailbox, BODY[] in UID order."""
    imap = server.login(user)
    r = imap.command(f"EXAMINE {mailbox}")
    assert r.ok, r
    r = imap.command("UID FETCH 1:* BODY.PEEK[]")
    assert r.ok, r
    msgs = [items["BODY[]"] for _, items in sorted(r.fetches().items())]
    imap.command("LOGOUT")
    return msgs


def delivered(rcpt, sender="sender@example.org"):
    return (f"Return-Path: <{sender}>\r\nDelivered-To: {rcpt}\r\n".encode()
            + MSG)


def test_greeting_and_lhlo(moat_server):
    c = Lmtp(moat_server)
    assert c.greeting[0] == 220 and "LMTP" in c.greeting[1][0]
    code, lines = c.cmd("LHLO client.example")
    assert code == 250
    for ext in ("PIPELINING", "ENHANCEDSTATUSCODES", "8BITMIME", "CHUNKING"):
        assert ext in lines, lines
    assert "SIZE 67108864" in lines, lines
    # RFC 2033 4.1: HELO and EHLO never get a positive reply
    assert c.cmd("HELO x")[0] == 500
    assert c.cmd("EHLO x")[0] == 500
    assert c.cmd("LHLO")[0] == 501
    code, lines = c.cmd("QUIT")
    assert code == 221 and lines[0].startswith("2.0.0")
    assert c.closed()


def test_delivery_read_back(moat_server):
    c = Lmtp(moat_server)
    assert [r[0] for r in start(c, ["testuser1"])] == [250]
    replies = data(c, MSG, 1)
    assert replies[0][0] == 250 and replies[0][1][0].startswith("2.0.0"), replies
    assert c.cmd("QUIT")[0] == 221
    assert fetch_all(moat_server, "testuser1") == [delivered("testuser1")]


def test_null_sender_and_8bit(moat_server):
    body = ("Subject: caf\u00e9\r\n\r\n\u00e9t\u00e9\r\n").encode()
    c = Lmtp(moat_server)
    assert c.cmd("LHLO x")[0] == 250
    assert c.cmd("MAIL FROM:<> BODY=8BITMIME SIZE=100")[0] == 250
    assert c.cmd("RCPT TO:<testuser1>")[0] == 250
    assert c.cmd("DATA")[0] == 354
    c.send(stuff(body))
    assert c.reply()[0] == 250
    msgs = fetch_all(moat_server, "testuser1")
    assert msgs == [b"Return-Path: <>\r\nDelivered-To: testuser1\r\n" + body]


def test_multiple_recipients_in_order(moat_server):
    """RFC 2033 4.2's example: one reply per accepted RCPT, in order."""
    c = Lmtp(moat_server)
    codes = [r[0] for r in start(c, ["testuser1", "nosuchuser", "testuser2"])]
    assert codes == [250, 550, 250]
    replies = data(c, MSG, 2)
    assert [r[0] for r in replies] == [250, 250], replies
    assert "<testuser1>" in replies[0][1][0]
    assert "<testuser2>" in replies[1][1][0]
    assert fetch_all(moat_server, "testuser1") == [delivered("testuser1")]
    assert fetch_all(moat_server, "testuser2") == [delivered("testuser2")]


def test_unknown_user_code(moat_server):
    c = Lmtp(moat_server)
    (code, lines), = start(c, ["nosuchuser"])
    assert code == 550 and lines[0].startswith("5.1.1"), lines
    # RFC 2033 4.2: no successful RCPT, DATA must fail with 503
    assert c.cmd("DATA")[0] == 503


def test_duplicate_recipient_one_copy(moat_server):
    c = Lmtp(moat_server)
    assert [r[0] for r in start(c, ["testuser1", "testuser1"])] == [250, 250]
    assert [r[0] for r in data(c, MSG, 2)] == [250, 250]
    assert len(fetch_all(moat_server, "testuser1")) == 1


def test_detail_reaches_user(moat_server):
    c = Lmtp(moat_server)
    assert [r[0] for r in start(c, ["testuser1+lists"])] == [250]
    assert data(c, MSG, 1)[0][0] == 250
    assert fetch_all(moat_server, "testuser1") == [delivered("testuser1+lists")]


@pytest.mark.moat_settings(lmtp=True, lmtp_save_to_detail_mailbox="yes")
def test_detail_mailbox(moat_server):
    imap = moat_server.login("testuser1")
    assert imap.command("CREATE lists").ok
    c = Lmtp(moat_server)
    assert [r[0] for r in start(c, ["testuser1+lists", "testuser1+nosuch",
                                    "testuser1"])] == [250, 250, 250]
    assert [r[0] for r in data(c, MSG, 3)] == [250, 250, 250]
    assert fetch_all(moat_server, "testuser1", "lists") == \
        [delivered("testuser1+lists")]
    # a detail without its folder goes to INBOX, like no detail
    assert fetch_all(moat_server, "testuser1") == \
        [delivered("testuser1+nosuch"), delivered("testuser1")]


@pytest.mark.moat_settings(lmtp=True, lmtp_username_format="%Ln")
def test_username_format(moat_server):
    c = Lmtp(moat_server)
    assert [r[0] for r in start(c, ["TestUser1@Example.ORG",
                                    "nosuch@example.org"])] == [250, 550]
    assert data(c, MSG, 1)[0][0] == 250
    assert len(fetch_all(moat_server, "testuser1")) == 1


def test_default_username_format_keeps_domain(moat_server):
    """%Lu: the whole address is the userdb key, as Dovecot's default."""
    c = Lmtp(moat_server)
    assert [r[0] for r in start(c, ["testuser1@example.org"])] == [550]


@pytest.mark.moat_settings(lmtp=True, message_size_limit="1k")
def test_size_limit(moat_server):
    c = Lmtp(moat_server)
    code, lines = c.cmd("LHLO x")
    assert "SIZE 1024" in lines
    code, lines = c.cmd("MAIL FROM:<a@b> SIZE=2000")
    assert code == 552 and lines[0].startswith("5.3.4"), lines
    assert c.cmd("MAIL FROM:<a@b>")[0] == 250
    assert c.cmd("RCPT TO:<testuser1>")[0] == 250
    assert c.cmd("RCPT TO:<testuser2>")[0] == 250
    big = b"Subject: big\r\n\r\n" + b"x" * 70 + b"\r\n"
    replies = data(c, big * 20, 2)
    assert [r[0] for r in replies] == [552, 552], replies
    assert all(r[1][0].startswith("5.3.4") for r in replies)
    # the session goes on, and a message at the limit fits
    assert c.cmd("MAIL FROM:<a@b>")[0] == 250
    assert c.cmd("RCPT TO:<testuser1>")[0] == 250
    exact = b"Subject: s\r\n\r\n"
    exact += b"y" * (1024 - len(exact) - 2) + b"\r\n"
    assert len(exact) == 1024
    assert data(c, exact, 1)[0][0] == 250
    assert fetch_all(moat_server, "testuser1") == [
        b"Return-Path: <a@b>\r\nDelivered-To: testuser1\r\n" + exact]
    assert fetch_all(moat_server, "testuser2") == []


def test_pipelined_transaction(moat_server):
    c = Lmtp(moat_server)
    c.send("LHLO x\r\nMAIL FROM:<s@example.org>\r\nRCPT TO:<testuser1>\r\n"
           "RCPT TO:<bogus>\r\nRCPT TO:<testuser2>\r\nDATA\r\n")
    codes = [c.reply()[0] for _ in range(6)]
    assert codes == [250, 250, 250, 550, 250, 354]
    # the message, its end and the next transaction in one write
    c.send(stuff(MSG) + b"MAIL FROM:<t@example.org>\r\nRCPT TO:<testuser1>\r\n"
           b"DATA\r\n")
    codes = [c.reply()[0] for _ in range(5)]
    assert codes == [250, 250, 250, 250, 354]
    c.send(stuff(MSG) + b"QUIT\r\n")
    assert [c.reply()[0] for _ in range(2)] == [250, 221]
    assert fetch_all(moat_server, "testuser1") == [
        delivered("testuser1", "s@example.org"),
        delivered("testuser1", "t@example.org")]
    assert fetch_all(moat_server, "testuser2") == [
        delivered("testuser2", "s@example.org")]


def test_bdat(moat_server):
    binary = bytes(range(256)) + b"\r\n.\r\n"
    message = b"Subject: chunks\r\n\r\n" + binary
    c = Lmtp(moat_server)
    start(c, ["testuser1", "testuser2"])
    c.send(b"BDAT 10\r\n" + message[:10])
    assert c.reply()[0] == 250
    c.send(f"BDAT {len(message) - 10} LAST\r\n".encode() + message[10:])
    assert [c.reply()[0] for _ in range(2)] == [250, 250]
    head = b"Return-Path: <sender@example.org>\r\nDelivered-To: "
    # on disk as sent (IMAP would show NUL as 0x80 and bare LF as CRLF)
    files = list((moat_server.maildir("testuser1") / "cur").iterdir())
    assert [f.read_bytes() for f in files] == [head + b"testuser1\r\n" + message]
    # BDAT without MAIL: the chunk is read and dropped, then 503
    c.send(b"BDAT 5\r\nhello")
    assert c.reply()[0] == 503
    # 0-byte LAST chunk ends a message too; DATA after BDAT is refused
    start_codes = [c.cmd("MAIL FROM:<a@b>")[0], c.cmd("RCPT TO:<testuser2>")[0]]
    assert start_codes == [250, 250]
    c.send(b"BDAT 3\r\nabc")
    assert c.reply()[0] == 250
    assert c.cmd("DATA")[0] == 503
    assert c.cmd("BDAT 0 LAST")[0] == 250
    assert fetch_all(moat_server, "testuser2")[-1].endswith(b"testuser2\r\nabc")
    # a BDAT whose size cannot be read ends the session
    assert c.cmd("BDAT many")[0] == 501
    assert c.closed()


def test_session_commands(moat_server):
    c = Lmtp(moat_server)
    assert c.cmd("NOOP")[0] == 250
    assert c.cmd("MAIL FROM:<a@b>")[0] == 503   # LHLO first
    assert c.cmd("LHLO x")[0] == 250
    assert c.cmd("RCPT TO:<testuser1>")[0] == 503   # MAIL first
    assert c.cmd("DATA")[0] == 503
    assert c.cmd("MAIL FROM:<a@b>")[0] == 250
    assert c.cmd("MAIL FROM:<a@b>")[0] == 503   # nested
    assert c.cmd("RCPT TO:<testuser1>")[0] == 250
    code, lines = c.cmd("RSET")
    assert code == 250 and lines[0].startswith("2.0.0")
    assert c.cmd("DATA")[0] == 503   # the transaction is gone
    code, lines = c.cmd("VRFY testuser1")
    assert code == 252, lines   # declined politely, not confirmed
    assert c.cmd("HELP")[0] == 214
    assert c.cmd("STARTTLS")[0] == 502
    assert c.cmd("FROBNICATE")[0] == 500
    assert c.cmd("MAIL TO:<a@b>")[0] == 501
    code, lines = c.cmd("MAIL FROM:<a@b> XFOO=1")
    assert code == 555 and lines[0].startswith("5.5.4")
    assert c.cmd("MAIL FROM:<a@b> BODY=BINARYMIME")[0] == 555
    assert c.cmd("MAIL FROM:<a@b")[0] == 501
    code, _ = c.cmd("X" * 5000)
    assert code == 500
    assert c.cmd("NOOP")[0] == 250   # resynchronised after the long line


def test_too_many_errors(moat_server):
    c = Lmtp(moat_server)
    codes = []
    for _ in range(30):
        try:
            code, _ = c.cmd("BOGUS")
        except EOFError:
            break
        codes.append(code)
        if code == 421:
            break
    assert codes[-1] == 421 and codes.count(500) == 20, codes
    assert c.closed()


@pytest.mark.moat_settings(lmtp=True, lmtp_max_recipients=100)
def test_too_many_recipients(moat_server):
    c = Lmtp(moat_server)
    start(c, [])
    c.send("".join(f"RCPT TO:<testuser1+{i}>\r\n" for i in range(101)))
    codes = [c.reply()[0] for _ in range(101)]
    assert codes == [250] * 100 + [452]
    assert [r[0] for r in data(c, MSG, 100)] == [250] * 100
    assert len(fetch_all(moat_server, "testuser1")) == 1


def test_unix_socket(moat_server):
    path = moat_server.lmtp_socket
    st = os.stat(path)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o666
    c = Lmtp(path=path)
    start(c, ["testuser2"])
    assert data(c, MSG, 1)[0][0] == 250
    assert fetch_all(moat_server, "testuser2") == [delivered("testuser2")]


def test_idle_hears_delivery(moat_server):
    imap = moat_server.login("testuser1")
    assert imap.command("SELECT INBOX").ok
    tag = imap.next_tag()
    imap.send(f"{tag} IDLE\r\n")
    assert imap.read_line().startswith(b"+ ")
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, MSG, 1)[0][0] == 250
    line = imap.read_line_within(10)
    assert line == b"* 1 EXISTS", line
    imap.send("DONE\r\n")
    assert imap.read_tagged(tag).ok


def test_delivery_logged_and_process_lingers(moat_server):
    c = Lmtp(moat_server)
    start(c, ["testuser2"])
    assert data(c, MSG, 1)[0][0] == 250
    assert wait_for(lambda: re.search(r"imap\(testuser2\).*delivered: "
                                      r"mailbox=INBOX, uid=1",
                                      moat_server.logs()), 30), moat_server.logs()
    # the user's process goes away after its linger time, as after logins
    assert wait_for(lambda: not moat_server.child_pids("imap"), 30)


def test_idle_connection_times_out_is_bounded(moat_server):
    """A client that connects and goes away mid-transaction delivers
    nothing."""
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert c.cmd("DATA")[0] == 354
    c.send(b"Subject: cut\r\n\r\nhalf a mess")
    c.close()
    # the next session works, and the cut message never arrived
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, MSG, 1)[0][0] == 250
    assert fetch_all(moat_server, "testuser1") == [delivered("testuser1")]


def restart(server):
    """The server stopped and started again: a new imap process that
    remembers nothing of earlier deliveries."""
    server.close_clients()
    assert server.stop()[0] == 0
    server.start()


def test_repeated_delivery_is_one_message(moat_server):
    """An MTA that did not get the answer (the process died after saving)
    sends the same delivery again: the saved message is recognised by its
    id (folder, envelope and bytes), answered 250 and not saved twice,
    also by a new process after a restart. Other messages are new."""
    for _ in range(2):
        c = Lmtp(moat_server)
        start(c, ["testuser1"])
        assert data(c, MSG, 1)[0][0] == 250
    files = list((moat_server.maildir("testuser1") / "cur").iterdir())
    assert len(files) == 1
    assert re.match(r"^\d+\.M\d+P\d+Q\d+D[0-9a-f]{32}\.", files[0].name), files
    restart(moat_server)
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, MSG, 1)[0][0] == 250
    assert fetch_all(moat_server, "testuser1") == [delivered("testuser1")]
    # another sender, another folder detail or other bytes: new messages
    c = Lmtp(moat_server)
    start(c, ["testuser1"], sender="other@example.org")
    assert data(c, MSG, 1)[0][0] == 250
    start2 = [c.cmd("MAIL FROM:<sender@example.org>")[0],
              c.cmd("RCPT TO:<testuser1>")[0]]
    assert start2 == [250, 250]
    assert data(c, MSG + b"more\r\n", 1)[0][0] == 250
    assert len(fetch_all(moat_server, "testuser1")) == 3
    assert wait_for(lambda: "not saved again" in moat_server.logs(), 30)


@pytest.mark.moat_settings(lmtp=True, lmtp_retry_window=3)
def test_retry_window_counts_deliveries(moat_server):
    """A new process knows the folder's newest lmtp_retry_window
    deliveries, however many APPENDed messages came after them (the
    crash test's retry once came 1,200 APPENDs after its lost answer and
    was saved twice); a retry after more newer deliveries than that is
    saved again, as documented."""
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, MSG, 1)[0][0] == 250
    imap = moat_server.login()
    for i in range(40):
        assert imap.append("INBOX", b"Subject: appended %d\r\n\r\nx\r\n" % i).ok
    imap.command("LOGOUT")
    restart(moat_server)
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, MSG, 1)[0][0] == 250
    assert wait_for(lambda: "not saved again" in moat_server.logs(), 30)
    msgs = fetch_all(moat_server, "testuser1")
    assert len(msgs) == 41 and msgs.count(delivered("testuser1")) == 1
    # three newer deliveries: a new process no longer knows the first
    for i in range(3):
        c = Lmtp(moat_server)
        start(c, ["testuser1"])
        assert data(c, MSG + b"newer %d\r\n" % i, 1)[0][0] == 250
    restart(moat_server)
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, MSG, 1)[0][0] == 250
    msgs = fetch_all(moat_server, "testuser1")
    assert len(msgs) == 45 and msgs.count(delivered("testuser1")) == 2


def test_concurrent_deliveries_group_commit(moat_server):
    """Deliveries that reach the user's process together are committed
    together (one sync, consecutive UIDs); each still gets its own answer
    and message."""
    import threading
    results = []

    def one(i):
        c = Lmtp(moat_server)
        start(c, ["testuser1"])
        body = MSG + b"message %d\r\n" % i
        results.append((i, data(c, body, 1)[0][0]))
        c.cmd("QUIT")
    threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [(i, 250) for i in range(12)]
    msgs = fetch_all(moat_server, "testuser1")
    assert sorted(m.rsplit(b"message ", 1)[1] for m in msgs) == \
        sorted(b"%d\r\n" % i for i in range(12))


@pytest.mark.moat_settings(lmtp=True, lmtp_save_to_detail_mailbox="yes")
def test_delivery_only_process_creates_no_special_folders(moat_server):
    """A process started for a delivery into INBOX does not create the
    SPECIAL-USE folders (five folders and their directory syncs were most
    of a cold delivery); the first login does, and a delivery to a
    detail naming one finds it."""
    md = moat_server.maildir("testuser1")
    c = Lmtp(moat_server)
    start(c, ["testuser1"])
    assert data(c, MSG, 1)[0][0] == 250
    assert not (md / ".Junk").exists() and not (md / ".Sent").exists()
    imap = moat_server.login()
    r = imap.command('LIST "" *')
    assert r.ok and any(b"Junk" in line for line in r.untagged), r
    assert (md / ".Junk" / "cur").is_dir()
    imap.command("LOGOUT")
    c = Lmtp(moat_server)
    start(c, ["testuser1+Junk"])
    assert data(c, MSG, 1)[0][0] == 250
    assert len(list((md / ".Junk" / "cur").iterdir())) == 1
    # a first delivery to a SPECIAL-USE detail creates the folders first
    md2 = moat_server.maildir("testuser2")
    c = Lmtp(moat_server)
    start(c, ["testuser2+Junk"])
    assert data(c, MSG, 1)[0][0] == 250
    assert len(list((md2 / ".Junk" / "cur").iterdir())) == 1
    assert not list((md2 / "cur").iterdir())


# -- SMTPUTF8 (RFC 6531, RFC 6532): doc/mail-storage.md "Delivery"

UTF8_SENDER = "j\u00f6rg@b\u00fccher.example"
UTF8_MSG = ("From: J\u00f6rg <j\u00f6rg@b\u00fccher.example>\r\n"
            "To: \u7528\u6237 <testuser1@example.org>\r\n"
            "Subject: \u00dcberweisung \u2014 \u4f8b\u5b50\r\n\r\n"
            "K\u00f6rper\r\n").encode()


def test_lhlo_offers_smtputf8(moat_server):
    c = Lmtp(moat_server)
    code, lines = c.cmd("LHLO client.example")
    assert code == 250 and "SMTPUTF8" in lines, lines


def test_smtputf8_sender_and_headers_stored_byte_for_byte(moat_server):
    c = Lmtp(moat_server)
    assert c.cmd("LHLO x")[0] == 250
    code, lines = c.cmd(f"MAIL FROM:<{UTF8_SENDER}> SMTPUTF8 BODY=8BITMIME")
    assert code == 250, lines
    assert c.cmd("RCPT TO:<testuser1>")[0] == 250
    assert data(c, UTF8_MSG, 1)[0][0] == 250
    assert fetch_all(moat_server, "testuser1") == [
        f"Return-Path: <{UTF8_SENDER}>\r\nDelivered-To: testuser1\r\n"
        .encode() + UTF8_MSG]


def test_utf8_address_needs_smtputf8(moat_server):
    """RFC 6531: a non-ASCII envelope address without SMTPUTF8 on MAIL
    is refused with 553 5.6.7; 8-bit headers without it are accepted as
    before (test_null_sender_and_8bit)."""
    c = Lmtp(moat_server)
    assert c.cmd("LHLO x")[0] == 250
    code, lines = c.cmd(f"MAIL FROM:<{UTF8_SENDER}>")
    assert code == 553 and lines[0].startswith("5.6.7"), lines
    assert c.cmd("MAIL FROM:<a@example.org>")[0] == 250
    code, lines = c.cmd("RCPT TO:<t\u00e9st@example.org>")
    assert code == 553 and lines[0].startswith("5.6.7"), lines
    assert c.cmd("RCPT TO:<testuser1>")[0] == 250
    assert data(c, UTF8_MSG, 1)[0][0] == 250


def test_smtputf8_syntax_errors(moat_server):
    c = Lmtp(moat_server)
    assert c.cmd("LHLO x")[0] == 250
    # RFC 6531 3.4: SMTPUTF8 has no value
    code, lines = c.cmd("MAIL FROM:<a@example.org> SMTPUTF8=yes")
    assert code == 501, lines
    # the address must be UTF-8 (RFC 6531 3.3), not any 8-bit bytes
    c.send(b"MAIL FROM:<j\xf6rg@example.org> SMTPUTF8\r\n")
    code, lines = c.reply()
    assert code == 501 and lines[0].startswith("5.1.7"), lines
    assert c.cmd("MAIL FROM:<a@example.org> smtputf8")[0] == 250
    c.send(b"RCPT TO:<t\xe9st@example.org>\r\n")
    code, lines = c.reply()
    assert code == 501 and lines[0].startswith("5.1.3"), lines
    code, lines = c.cmd("RCPT TO:<n\u00f6body@example.org>")
    assert code == 550 and lines[0].startswith("5.1.1"), lines


@pytest.mark.moat_settings(lmtp=True, extra_users={"j\u00f6rg": "pw"})
def test_utf8_recipient_resolved(moat_server):
    """A UTF-8 local part is the userdb key as written (passwd-file keys
    are bytes; %L lowercases ASCII only)."""
    c = Lmtp(moat_server)
    assert c.cmd("LHLO x")[0] == 250
    assert c.cmd(f"MAIL FROM:<{UTF8_SENDER}> SMTPUTF8")[0] == 250
    code, lines = c.cmd("RCPT TO:<J\u00f6rg>")
    assert code == 250, lines
    assert data(c, UTF8_MSG, 1)[0][0] == 250
    new = moat_server.maildir("j\u00f6rg") / "new"
    cur = moat_server.maildir("j\u00f6rg") / "cur"
    files = list(new.iterdir()) + list(cur.iterdir())
    assert len(files) == 1
    assert files[0].read_bytes() == (
        f"Return-Path: <{UTF8_SENDER}>\r\nDelivered-To: J\u00f6rg\r\n"
        .encode() + UTF8_MSG)
