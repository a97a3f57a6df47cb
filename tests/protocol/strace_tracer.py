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
# The end of a call that another thread's line interrupted:
# "TID <... name resumed>rest".
RESUMED = re.compile(r"(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?<\.\.\. (\w+) "
                     r"resumed>(.*)$")
UNFINISHED = " <unfinished ...>"


class Strace:
    """strace -f -p pid of the calls in trace (strace's -e trace= list),
    written to path; strings shown up to strsize bytes; extra: more
    strace arguments (such as an -e inject=). Skips the test
    where strace is missing or may not attach."""

    def __init__(self, pid, path, trace, strsize=256, extra=()):
        if shutil.which("strace") is None:
            pytest.skip("strace is not installed")
        self.pid, self.path = pid, path
        self.proc = subprocess.Popen(
            ["strace", "-f", "-qq", "-y", "-s", str(strsize), "-o", str(path),
             "-e", "trace=" + trace, *extra, "-p", str(pid)],
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

    def calls(self, where="began"):
        """[(tid or None, name, line)] in the order they began, or with
        where="ended" in the order they returned. A call another thread
        interrupted (strace's "<unfinished ...>" and "<... resumed>"
        lines) is one entry whose line is joined from both."""
        out = []
        open_calls = {}   # tid -> index in out of its unfinished call
        for line in self.path.read_text(errors="replace").splitlines():
            r = RESUMED.match(line)
            if r:
                tid = int(r.group(1) or r.group(2) or 0)
                i = open_calls.pop(tid, None)
                if i is None or out[i] is None:
                    continue
                t, name, begun = out[i]
                joined = (t, name,
                          begun.rstrip()[:-len(UNFINISHED)] + r.group(4))
                if where == "ended":
                    out[i] = None
                    out.append(joined)
                else:
                    out[i] = joined
                continue
            m = CALL.match(line)
            if m:
                tid = m.group(1) or m.group(2)
                out.append((int(tid) if tid else None, m.group(3), line))
                if line.rstrip().endswith(UNFINISHED):
                    open_calls[int(tid) if tid else 0] = len(out) - 1
        return [c for c in out if c is not None]
