"""A private Postfix for tests: its own config directory, queue and log
under a temporary directory, smtpd on a free 127.0.0.1 port, nothing
system-wide changed (the Debian package only has to be installed, with
"No configuration"). Stopped with `postfix stop` and by its master's pid."""

import os
import pathlib
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

from moatserver import free_port, wait_for

POSTFIX = shutil.which("postfix") or "/usr/sbin/postfix"


def available():
    """None if a private Postfix can run here, else why not."""
    if os.geteuid() != 0:
        return "starting Postfix needs root"
    if not os.path.exists(POSTFIX) or not os.path.exists("/etc/postfix/master.cf"):
        return "Postfix is not installed (apt-get install postfix)"
    try:
        pwd.getpwnam("postfix")
    except KeyError:
        return "the postfix user is missing"
    return None


class Postfix:
    def __init__(self, main_cf):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="moat-postfix-", dir="/tmp"))
        os.chmod(self.dir, 0o755)
        self.conf = self.dir / "conf"
        self.queue = self.dir / "queue"
        self.data = self.dir / "data"
        self.log = self.dir / "maillog"
        for d in (self.conf, self.queue, self.data):
            d.mkdir()
        shutil.chown(self.data, "postfix")
        self.port = free_port()
        self.master_pid = None
        settings = {
            "compatibility_level": "3.6",
            "queue_directory": str(self.queue),
            "data_directory": str(self.data),
            "meta_directory": "/etc/postfix",
            "mail_owner": "postfix",
            "setgid_group": "postdrop",
            "myhostname": "mx.test.example",
            "mydomain": "test.example",
            "myorigin": "test.example",
            "mydestination": "",
            "inet_interfaces": "127.0.0.1",
            "inet_protocols": "ipv4",
            "mynetworks": "127.0.0.0/8",
            "smtpd_relay_restrictions": "permit_mynetworks, reject",
            "alias_maps": "",
            "alias_database": "",
            "maillog_file": str(self.log),
            "maillog_file_prefixes": str(self.dir),
            "syslog_name": "postfix-moattest",
            # deliveries and bounces at once, not after a back-off
            "queue_run_delay": "1s",
            "minimal_backoff_time": "1s",
            "maximal_backoff_time": "2s",
            "delay_warning_time": "0",
            # the servers under test are sanitizer builds
            "import_environment": "MAIL_CONFIG MAIL_DEBUG MAIL_LOGTAG TZ LANG=C "
                                  "POSTLOG_SERVICE POSTLOG_HOSTNAME "
                                  "ASAN_OPTIONS=detect_leaks=0 "
                                  "UBSAN_OPTIONS=halt_on_error=1",
            "export_environment": "TZ MAIL_CONFIG LANG ASAN_OPTIONS UBSAN_OPTIONS",
        }
        settings.update(main_cf)
        (self.conf / "main.cf").write_text(
            "".join(f"{k} = {v}\n" for k, v in settings.items()))
        (self.conf / "master.cf").write_text(self._master_cf())

    def _master_cf(self):
        """Debian's master.cf without chroots (the queue directory has no
        copy of /etc), smtpd on our port only."""
        lines = []
        for line in pathlib.Path("/etc/postfix/master.cf").read_text().splitlines():
            fields = line.split()
            if line.startswith(("#", " ", "\t")) or len(fields) < 8:
                lines.append(line)
                continue
            if fields[0] == "smtp" and fields[1] == "inet":
                fields[0] = f"127.0.0.1:{self.port}"
            fields[4] = "n"
            lines.append(" ".join(fields))
        return "\n".join(lines) + "\n"

    def start(self):
        subprocess.run([POSTFIX, "-c", str(self.conf), "start"], check=True,
                       capture_output=True, timeout=60)
        pid_file = self.queue / "pid" / "master.pid"
        assert wait_for(pid_file.exists, 30), self.logs()
        self.master_pid = int(pid_file.read_text().split()[0])

    def stop(self):
        subprocess.run([POSTFIX, "-c", str(self.conf), "stop"],
                       capture_output=True, timeout=60)
        if self.master_pid is not None:
            def gone():
                try:
                    os.kill(self.master_pid, 0)
                    return False
                except ProcessLookupError:
                    return True
            if not wait_for(gone, 30):
                os.kill(self.master_pid, signal.SIGKILL)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self):
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return "(no Postfix log)"

    def wait_log(self, pattern, timeout=60):
        rx = re.compile(pattern)
        return wait_for(lambda: rx.search(self.logs()), timeout)
