"""strace -f attached to a running server process, for the tests that
check the order of its system calls (syncs before replies)."""

import re
import shutil
import signal
import subprocess

import pytest

from moatserver import proc_status, wait_for

# One call: "TID name(" with -f's TID column, or "[pid TID] name(".
CALL = re.compile(r"(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?(\w+)\(")


class Strace:
    """strace -f -p pid of the calls in trace (strace's -e trace= list),
    written to path; strings shown up to strsize bytes. Skips the test
    where strace is missing or may not attach."""

    def __init__(self, pid, path, trace, strsize=256):
        if shutil.which("strace") is None:
            pytest.skip("strace is not installed")
        self.pid, self.path = pid, path
        self.proc = subprocess.Popen(
            ["strace", "-f", "-qq", "-y", "-s", str(strsize), "-o", str(path),
             "-e", "trace=" + trace, "-p", str(pid)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        attached = wait_for(
            lambda: self.proc.poll() is not None or
            int(proc_status(pid).get("TracerPid", "0")) != 0, 10)
        if self.proc.poll() is not None or not attached:
            err = self.proc.stderr.read().decode(errors="replace")
            self.stop()
            pytest.skip(f"strace cannot attach here: {err.strip()}")

    def stop(self):
        """Detaches; returns calls()."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(30)
        self.proc.stderr.close()
        return self.calls()

    def calls(self):
        """[(tid or None, name, line)] in the order they began (an
        unfinished call counts where it began)."""
        out = []
        for line in self.path.read_text(errors="replace").splitlines():
            m = CALL.match(line)
            if m:
                tid = m.group(1) or m.group(2)
                out.append((int(tid) if tid else None, m.group(3), line))
        return out
