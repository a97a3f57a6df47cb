"""Runs an installed moat as moat.service would and checks that it serves.

    run-server.py MOAT CONFIG USER PASSWORD

Plays the manager: $NOTIFY_SOCKET is a datagram socket here, and the
server must send READY=1 from its main pid. Then an IMAP login over
implicit TLS on 127.0.0.1:993 (the packaged listener) and a SELECT INBOX
that must find the one message tests/pkg/run.sh placed, then SIGTERM:
STOPPING=1 and exit status 0. Runs inside run.sh's throwaway namespaces,
so the fixed port is ours alone."""

import os
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time

# A busy CI machine: generous bounds, each a wait for a condition.
TIMEOUT = 60.0


def notify_socket(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    sock.bind(path)
    sock.settimeout(TIMEOUT)
    return sock


def receive(sock):
    """(fields, sender pid) of the next notification."""
    creds = struct.calcsize("3i")
    data, anc, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(creds))
    pid = None
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = struct.unpack("3i", payload[:creds])[0]
    return dict(l.split("=", 1) for l in data.decode().split("\n") if l), pid


def imap_session(user, password):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the package's own self-signed one
    deadline = time.monotonic() + TIMEOUT
    with socket.create_connection(("127.0.0.1", 993), timeout=TIMEOUT) as raw:
        with ctx.wrap_socket(raw) as s:
            f = s.makefile("rwb")

            def command(tag, text):
                f.write(f"{tag} {text}\r\n".encode())
                f.flush()
                lines = []
                while time.monotonic() < deadline:
                    line = f.readline()
                    if not line:
                        raise RuntimeError(f"closed after {lines}")
                    lines.append(line.decode(errors="replace").rstrip("\r\n"))
                    if line.startswith(tag.encode() + b" "):
                        return lines
                raise RuntimeError("timeout")

            greeting = f.readline()
            assert greeting.startswith(b"* OK"), greeting
            r = command("a", f"LOGIN {user} {password}")
            assert r[-1].startswith("a OK"), r
            r = command("b", "SELECT INBOX")
            assert r[-1].startswith("b OK"), r
            assert "* 1 EXISTS" in r, r
            r = command("c", "LOGOUT")
            assert r[-1].startswith("c OK"), r


def main():
    moat, config, user, password = sys.argv[1:5]
    path = "/run/moat-test-notify"
    sock = notify_socket(path)
    env = dict(os.environ, NOTIFY_SOCKET=path)
    env.pop("JOURNAL_STREAM", None)
    log_path = "/run/moat-pkg-test.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen([moat, "-F", "-c", config], env=env,
                                stdin=subprocess.DEVNULL, stderr=log_file)
    ok = False
    try:
        fields, pid = receive(sock)
        assert fields.get("READY") == "1" and pid == proc.pid, (fields, pid)
        imap_session(user, password)
        proc.send_signal(signal.SIGTERM)
        fields, pid = receive(sock)
        assert fields.get("STOPPING") == "1" and pid == proc.pid, (fields, pid)
        rc = proc.wait(TIMEOUT)
        assert rc == 0, rc
        ok = True
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        with open(log_path, "rb") as log_file:
            log = log_file.read().decode(errors="replace")
        if not ok or re.search(r"\b(error|fatal|panic):", log):
            sys.stderr.write("--- moat's log ---\n" + log)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
