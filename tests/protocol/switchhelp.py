"""Helpers of the tests that switch a Maildir between Dovecot and moat in
place (test_switch_*.py, doc/migration.md): a private Dovecot with the
'/' hierarchy separator moat uses, moving the Maildir from one server's
user to the other's, and reading a folder's state over IMAP."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from dovecotserver import DovecotServer, dovecot_binary, START_TIMEOUT

# The namespace an admin sets for clients to see '/' (Dovecot's Maildir++
# default is '.'); the folders on disk are the same either way.
NAMESPACE = """namespace inbox {
  inbox = yes
  separator = /
}
"""


def need_dovecot():
    if dovecot_binary() is None:
        pytest.skip("dovecot is not installed (dev.sh installs dovecot-imapd)")


class SwitchDovecot(DovecotServer):
    """A private Dovecot that can be stopped and started again on the same
    Maildir (stop() removes everything, halt() only the processes)."""

    def _config(self, uid, gid, internal_user):
        return super()._config(uid, gid, internal_user) + NAMESPACE

    @property
    def maildir(self):
        return os.path.join(self.tmp, "mail", "dvtest")

    def owner(self):
        st = os.stat(os.path.join(self.tmp, "mail"))
        return st.st_uid, st.st_gid

    def halt(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def restart(self):
        self.halt()
        shutil.rmtree(os.path.join(self.tmp, "run"), ignore_errors=True)
        os.mkdir(os.path.join(self.tmp, "run"))
        self.proc = subprocess.Popen(
            [dovecot_binary(), "-F", "-c", os.path.join(self.tmp, "dovecot.conf")],
            stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(self.tmp, "stdout"), "a"),
            stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("dovecot did not start again: " + self.logs())


def chown_tree(path, uid, gid):
    os.chown(path, uid, gid)
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(top, name), uid, gid, follow_symlinks=False)


def move_maildir(src, dest, uid, gid):
    """The admin's step: the same Maildir, now owned by the other server's
    user (a rename keeps every file as it was)."""
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    os.rename(src, dest)
    chown_tree(dest, uid, gid)


def message(subject, extra=""):
    return (f"From: Alice <alice@example.org>\r\nTo: bob@example.org\r\n"
            f"Subject: {subject}\r\nDate: Mon, 1 Jan 2024 10:00:00 +0000\r\n"
            f"Message-ID: <{re.sub(r'[^A-Za-z0-9]', '', subject)}@example.org>\r\n"
            f"\r\nBody of {subject}.\r\n{extra}").encode()


def append(c, box, subject, flags=()):
    r = c.append(box, message(subject), list(flags))
    assert r.ok, r
    m = re.search(rb"APPENDUID (\d+) (\d+)", r.line)
    return int(m.group(2)) if m else None


def code_value(resp, name):
    for line in resp.untagged:
        m = re.search(rb"\[" + name.encode() + rb" (\d+)\]", line)
        if m:
            return int(m.group(1))
    return None


def folder_state(c, box, examine=True):
    """(UIDVALIDITY, UIDNEXT, RECENT, {uid: (subject, flags without \\Recent)})."""
    r = c.command(f'{"EXAMINE" if examine else "SELECT"} "{box}"')
    assert r.ok, r
    recent = 0
    for line in r.untagged:
        m = re.match(rb"\* (\d+) RECENT", line)
        if m:
            recent = int(m.group(1))
    msgs = {}
    f = c.command("UID FETCH 1:* (UID FLAGS BODY.PEEK[])")
    assert f.ok, f
    for items in f.fetches().values():
        body = items["BODY[]"]
        subject = re.search(rb"Subject: ([^\r\n]*)", body).group(1).decode()
        flags = frozenset(x for x in items["FLAGS"] if x.lower() != "\\recent")
        msgs[int(items["UID"])] = (subject, flags)
    return (code_value(r, "UIDVALIDITY"), code_value(r, "UIDNEXT"), recent, msgs)


def list_names(c, command="LIST"):
    r = c.command(f'{command} "" "*"')
    assert r.ok, r
    names = set()
    for line in r.untagged:
        m = re.match(rb'\* (?:LIST|LSUB) \(([^)]*)\) (?:NIL|"[^"]*") (.*)$', line)
        if not m:
            continue
        name = m.group(2)
        if name.startswith(b'"'):
            name = name[1:-1].replace(b'\\"', b'"').replace(b"\\\\", b"\\")
        names.add((name.decode(), "\\noselect" in m.group(1).decode().lower()))
    return {n for n, noselect in names if not noselect}


def subscribed_names(c):
    r = c.command('LSUB "" "*"')
    assert r.ok, r
    names = set()
    for line in r.untagged:
        m = re.match(rb'\* LSUB \([^)]*\) (?:NIL|"[^"]*") (.*)$', line)
        if m:
            name = m.group(1)
            if name.startswith(b'"'):
                name = name[1:-1]
            names.add(name.decode())
    return names
