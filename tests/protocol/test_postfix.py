"""A real Postfix delivering to moat: by LMTP over moat's unix socket
(virtual_transport), and through mailbox_command = moat-lda (local(8)
delivery to a system user). Mail goes in by SMTP and is read back over
IMAP byte for byte; an unknown recipient produces a bounce."""

import os
import pwd
import smtplib
import subprocess

import pytest

from moatserver import MOAT_PREFIX, wait_for
import postfix

pytestmark = pytest.mark.skipif(postfix.available() is not None,
                                reason=str(postfix.available()))

MESSAGE = (b"From: Sender <testuser2@example.org>\r\n"
           b"To: testuser1@example.org\r\n"
           b"Subject: through postfix\r\n"
           b"Date: Tue, 01 Dec 2026 10:00:00 +0000\r\n"
           b"Message-ID: <postfix-test-1@example.org>\r\n"
           b"\r\n"
           b"Hello through Postfix.\r\n"
           b".A line with a leading dot.\r\n")


def inbox(server, user, timeout=60, count=1):
    """The messages of user's INBOX once there are count of them."""
    def fetch():
        c = server.login(user)
        assert c.command("EXAMINE INBOX").ok
        r = c.command("UID FETCH 1:* BODY.PEEK[]")
        c.command("LOGOUT")
        msgs = [items["BODY[]"] for _, items in sorted(r.fetches().items())]
        return msgs if len(msgs) >= count else None
    return wait_for(fetch, timeout, interval=0.5)


def split_header(msg):
    head, _, body = msg.partition(b"\r\n\r\n")
    return head.split(b"\r\n"), body


@pytest.fixture
def pf(request):
    pfx = request.getfixturevalue("pf_settings")
    p = postfix.Postfix(pfx)
    try:
        p.start()
        yield p
    finally:
        p.stop()
        p.cleanup()


@pytest.fixture
def pf_settings(moat_server):
    return {
        "virtual_mailbox_domains": "example.org",
        "virtual_transport": f"lmtp:unix:{moat_server.lmtp_socket}",
        # unknown users are told by moat's 550, as a bounce
        "smtpd_reject_unlisted_recipient": "no",
    }


@pytest.mark.moat_settings(lmtp=True, lmtp_username_format="%Ln")
def test_postfix_lmtp_unix_socket(moat_server, pf):
    with smtplib.SMTP("127.0.0.1", pf.port, timeout=30) as s:
        refused = s.sendmail("testuser2@example.org",
                             ["testuser1@example.org", "nosuchuser@example.org"],
                             MESSAGE)
    assert refused == {}
    msgs = inbox(moat_server, "testuser1")
    assert msgs, pf.logs() + moat_server.logs()
    lines, body = split_header(msgs[0])
    assert lines[0] == b"Return-Path: <testuser2@example.org>"
    assert lines[1] == b"Delivered-To: testuser1@example.org"
    assert lines[2].startswith(b"Received: from ")   # Postfix's own
    # everything the client sent, byte for byte, after Postfix's header
    assert msgs[0].endswith(MESSAGE), msgs[0]
    assert pf.wait_log(r"to=<testuser1@example.org>.*relay=.*status=sent"), pf.logs()

    # the unknown recipient: moat said 550 5.1.1, Postfix bounced it to
    # the sender, which is a moat user too
    assert pf.wait_log(r"to=<nosuchuser@example.org>.*status=bounced"), pf.logs()
    bounces = inbox(moat_server, "testuser2")
    assert bounces, pf.logs()
    assert b"nosuchuser@example.org" in bounces[0]
    assert b"5.1.1" in bounces[0]


LDA_USER = "moattestlda"


@pytest.fixture
def lda_user(moat_server):
    """A system user for local(8) (it delivers to passwd users only),
    removed after the test; its home is in the server's directory."""
    home = moat_server.tmp / "lda-home"
    subprocess.run(["useradd", "--system", "--home-dir", str(home),
                    "--create-home", "--shell", "/usr/sbin/nologin",
                    "--user-group", LDA_USER], check=True, capture_output=True)
    try:
        pw = pwd.getpwnam(LDA_USER)
        os.chmod(home, 0o700)
        # moat's passdb/userdb learn the user (the file is re-read on change)
        with open(moat_server.users_path, "a") as f:
            f.write(f"{LDA_USER}:{{PLAIN}}ldapass:{pw.pw_uid}:{pw.pw_gid}::"
                    f"{home}::\n")
        moat_server.users[LDA_USER] = {"password": "ldapass",
                                       "uid": pw.pw_uid, "gid": pw.pw_gid,
                                       "home": home}
        yield pw
    finally:
        subprocess.run(["userdel", LDA_USER], capture_output=True)


@pytest.fixture
def pf_lda_settings(moat_server):
    lda = MOAT_PREFIX / "bin" / "moat-lda"
    return {
        "mydestination": "localhost.test.example",
        "local_recipient_maps": "proxy:unix:passwd.byname",
        "mailbox_command": f'{lda} -c {moat_server.conf_path} '
                           f'-f "$SENDER" -a "$RECIPIENT"',
    }


@pytest.mark.moat_settings(first_valid_uid=100)
def test_postfix_mailbox_command_lda(moat_server, lda_user, request):
    p = postfix.Postfix(request.getfixturevalue("pf_lda_settings"))
    try:
        p.start()
        to = f"{LDA_USER}@localhost.test.example"
        message = MESSAGE.replace(b"testuser1@example.org", to.encode())
        with smtplib.SMTP("127.0.0.1", p.port, timeout=30) as s:
            assert s.sendmail("someone@example.net", [to], message) == {}
        assert p.wait_log(rf"to=<{to}>.*status=sent"), p.logs()
        msgs = inbox(moat_server, LDA_USER)
        assert msgs, moat_server.logs()
        lines, _ = split_header(msgs[0])
        # Postfix wrote Delivered-To and Return-Path for the command;
        # moat-lda did not add second ones
        assert sum(l.lower().startswith(b"delivered-to:") for l in lines) == 1
        assert sum(l.lower().startswith(b"return-path:") for l in lines) == 1
        assert msgs[0].endswith(message), msgs[0]
        # the file belongs to the user, in the user's own Maildir
        cur = lda_user.pw_dir + "/Maildir/cur"
        files = os.listdir(cur)
        assert len(files) == 1
        assert os.stat(os.path.join(cur, files[0])).st_uid == lda_user.pw_uid

        # an unknown local user: Postfix bounces before moat-lda runs
        with smtplib.SMTP("127.0.0.1", p.port, timeout=30) as s:
            with pytest.raises(smtplib.SMTPRecipientsRefused):
                s.sendmail("someone@example.net",
                           ["nobody-here@localhost.test.example"], message)
    finally:
        p.stop()
        p.cleanup()


@pytest.mark.moat_settings(lmtp=True, lmtp_username_format="%Ln",
                           quota_grace="0")
def test_postfix_bounces_over_quota(moat_server, pf):
    from test_quota import set_userdb_fields
    set_userdb_fields(moat_server, "testuser1", "quota_storage=1k")
    big = MESSAGE + b"x" * 2000 + b"\r\n"
    with smtplib.SMTP("127.0.0.1", pf.port, timeout=30) as s:
        assert s.sendmail("testuser2@example.org",
                          ["testuser1@example.org"], big) == {}
    # moat: 552 5.2.2; Postfix bounces it to the sender
    assert pf.wait_log(r"to=<testuser1@example.org>.*status=bounced.*5\.2\.2"), \
        pf.logs()
    bounces = inbox(moat_server, "testuser2")
    assert bounces and b"5.2.2" in bounces[0], bounces
