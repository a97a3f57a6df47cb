"""A private Dovecot to compare moat with (differential tests).

Never the system service: its own base_dir, config and passwd-file under a
temporary directory, one IMAP listener on a free 127.0.0.1 port, started
with `dovecot -F` in its own session and stopped by its pid. As root the
mail belongs to the `dovecot` user (Dovecot refuses uid 0 for mail);
otherwise everything runs as the invoking user. The configuration is the
one tests/compare/compare-dovecot-mime.sh uses."""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from moatimap import ImapClient
from moatserver import free_port

USER = "dvtest"
PASSWORD = "dvpass"
START_TIMEOUT = 15.0


def dovecot_binary():
    """The dovecot binary, or None when Dovecot is not installed."""
    path = shutil.which("dovecot") or "/usr/sbin/dovecot"
    return path if os.access(path, os.X_OK) else None


class DovecotServer:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="moat-dovecot-")
        os.chmod(self.tmp, 0o755)
        self.port = free_port()
        self.proc = None

    def _config(self, uid, gid, internal_user):
        d = self.tmp
        return f"""base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
auth_mechanisms = plain
disable_plaintext_auth = no
default_internal_user = {internal_user}
default_login_user = {internal_user}
first_valid_uid = 0
mail_uid = {uid}
mail_gid = {gid}
mail_location = maildir:{d}/mail/%u
passdb {{
  driver = passwd-file
  args = {d}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={d}/mail/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
"""

    def start(self):
        if os.geteuid() == 0:
            pw = pwd.getpwnam("dovecot")
            uid, gid, internal = pw.pw_uid, pw.pw_gid, "dovenull"
        else:
            uid, gid = os.getuid(), os.getgid()
            internal = pwd.getpwuid(uid).pw_name
        for sub in ("run", "state", "mail"):
            os.mkdir(os.path.join(self.tmp, sub))
        os.chown(os.path.join(self.tmp, "mail"), uid, gid)
        with open(os.path.join(self.tmp, "passwd"), "w") as f:
            f.write(f"{USER}:{{PLAIN}}{PASSWORD}:{uid}:{gid}::"
                    f"{self.tmp}/mail/{USER}\n")
        conf = os.path.join(self.tmp, "dovecot.conf")
        with open(conf, "w") as f:
            f.write(self._config(uid, gid, internal))
        self.proc = subprocess.Popen(
            [dovecot_binary(), "-F", "-c", conf], stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(self.tmp, "stdout"), "w"),
            stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("dovecot did not start: " + self.logs())

    def logs(self):
        text = ""
        for name in ("stdout", "dovecot.log"):
            try:
                with open(os.path.join(self.tmp, name), errors="replace") as f:
                    text += f.read()
            except OSError:
                pass
        return text

    def login(self):
        c = ImapClient("127.0.0.1", self.port)
        c.read_greeting()
        r = c.command(f'LOGIN "{USER}" "{PASSWORD}"')
        assert r.ok, r
        return c

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            # the master's session: dovecot and the children it forked
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)
