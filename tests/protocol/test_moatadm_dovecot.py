"""moatadm config-from-dovecot against the real `doveconf -n` of a private
Dovecot config (never the system service: doveconf only reads the file):
the moat.conf it writes is accepted by moat (`moat -c out -n`) and keeps
what both servers share; what it cannot carry is listed on stderr."""

import shutil
import subprocess

import pytest

from moatserver import MOAT_PREFIX
from test_moatadm import EX_USAGE, MOATADM

DOVECOT_CONF = """base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
protocols = imap lmtp pop3
listen = 127.0.0.1, ::1
ssl = required
ssl_cert = <{d}/cert.pem
ssl_key = <{d}/key.pem
ssl_min_protocol = TLSv1.2
auth_mechanisms = plain login digest-md5
disable_plaintext_auth = yes
first_valid_uid = 1000
mail_location = maildir:~/Maildir:LAYOUT=fs
recipient_delimiter = +
lmtp_save_to_detail_mailbox = yes
passdb {{
  driver = passwd-file
  args = scheme=CRYPT username_format=%u {d}/passwd
}}
passdb {{
  driver = pam
  args = session=yes dovecot
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {d}/passwd
  default_fields = uid=1000 gid=1000 home=/srv/mail/%u
}}
userdb {{
  driver = static
  args = uid=vmail gid=vmail home=/srv/vmail/%u
}}
namespace inbox {{
  inbox = yes
  mailbox Sent {{
    special_use = \\Sent
    auto = subscribe
  }}
  mailbox "Deleted Messages" {{
    special_use = \\Trash
  }}
}}
service imap-login {{
  process_limit = 128
  chroot =
  inet_listener imap {{
    port = 1143
  }}
  inet_listener imaps {{
    port = 1993
    ssl = yes
  }}
}}
service lmtp {{
  unix_listener lmtp {{
    mode = 0660
  }}
}}
service stats {{
  client_limit = 10
}}
protocol imap {{
  mail_max_userip_connections = 30
  mail_plugins = quota
}}
plugin {{
  quota = maildir:User quota
  quota_rule = *:storage=1G
  quota_rule2 = *:messages=10000
  quota_grace = 10%%
  quota_warning = storage=95%% quota-warning 95 %u
  quota_warning2 = storage=80%% quota-warning 80 %u
}}
"""


def doveconf_n(tmp_path, show_secrets=True):
    doveconf = shutil.which("doveconf")
    if doveconf is None:
        pytest.skip("doveconf (dovecot-core) is not installed")
    for name in ("run", "state"):
        (tmp_path / name).mkdir()
    (tmp_path / "passwd").write_text("u:{PLAIN}x::::/tmp/u::\n")
    # doveconf reads the PEM files of ssl_cert/ssl_key: any will do
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", str(tmp_path / "key.pem"), "-out",
                    str(tmp_path / "cert.pem"), "-days", "2", "-subj", "/CN=x"],
                   check=True, capture_output=True)
    conf = tmp_path / "dovecot.conf"
    conf.write_text(DOVECOT_CONF.format(d=tmp_path))
    r = subprocess.run([doveconf, "-n", *(["-P"] if show_secrets else []),
                        "-c", str(conf)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r
    return r.stdout


def convert(text):
    return subprocess.run([str(MOATADM), "config-from-dovecot", "-"], input=text,
                          capture_output=True, text=True, timeout=60)


def moat_n(path):
    return subprocess.run([str(MOAT_PREFIX / "sbin" / "moat"), "-c", str(path),
                           "-n"], capture_output=True, text=True, timeout=60)


def test_config_from_dovecot(tmp_path):
    r = convert(doveconf_n(tmp_path))
    assert r.returncode == 0, r
    out = tmp_path / "moat.conf"
    out.write_text(r.stdout)
    conf = r.stdout
    for line in ("protocols = imap lmtp", "ssl = required",
                 f"ssl_cert = <{tmp_path}/cert.pem", "auth_mechanisms = plain login",
                 "first_valid_uid = 1000", "mail_location = maildir:~/Maildir",
                 "mail_max_userip_connections = 30",
                 "mailbox_sent = Sent", 'mailbox_trash = "Deleted Messages"',
                 "quota_storage = 1G", "quota_messages = 10000",
                 "quota_grace = 10%", "quota_warning = 80 95",
                 f"  args = {tmp_path}/passwd", "  driver = pam", "  args = dovecot",
                 "  process_limit = 128", "    address = 127.0.0.1",
                 "    port = 1143", "    port = 1993", "    mode = 0660"):
        assert line + "\n" in conf, (line, conf)
    # what moat has no place for is listed, never silently dropped
    for word in ("pop3", "digest-md5", "LAYOUT=fs", "static", "service stats",
                 "::1", "mail_plugins", "scheme=CRYPT", "state_dir"):
        assert word in r.stderr, (word, r.stderr)
    assert "static" not in conf and "pop3" not in conf
    # moat accepts it
    n = moat_n(out)
    assert n.returncode == 0, (n, conf)
    assert "quota_storage = 1G" in n.stdout and "ssl = required" in n.stdout


def test_config_from_dovecot_hidden_secret(tmp_path):
    """Without -P doveconf hides ssl_key: said so, not carried as text."""
    r = convert(doveconf_n(tmp_path, show_secrets=False))
    assert r.returncode == 0, r
    assert "ssl_key" in r.stderr and "doveconf -n -P" in r.stderr, r
    assert "ssl_key" not in r.stdout


def test_config_from_dovecot_defaults_that_differ(tmp_path):
    """doveconf -n omits Dovecot's defaults: where moat's differ, the
    output says Dovecot's."""
    users = tmp_path / "passwd"
    users.write_text("u:{PLAIN}x::::/tmp/u::\n")
    r = convert(f"passdb {{\n  driver = passwd-file\n  args = {users}\n}}\n"
                f"userdb {{\n  driver = passwd-file\n  args = {users}\n}}\n")
    assert r.returncode == 0, r
    assert "auth_mechanisms = plain\n" in r.stdout
    assert "mail_max_userip_connections = 10\n" in r.stdout
    assert "no mail_location" in r.stderr
    out = tmp_path / "moat.conf"
    out.write_text(r.stdout)
    n = moat_n(out)
    assert n.returncode == 0, n


def test_config_from_dovecot_bad_input(tmp_path):
    r = convert("service imap {\n  process_limit = 5\n")
    assert r.returncode == EX_USAGE and "not closed" in r.stderr, r
    r = convert("this is not a config\n")
    assert r.returncode == EX_USAGE and ":1:" in r.stderr, r
    r = subprocess.run([str(MOATADM), "config-from-dovecot",
                        str(tmp_path / "missing")], capture_output=True, text=True)
    assert r.returncode == 67, r
