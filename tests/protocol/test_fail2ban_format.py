"""The fail2ban filter shipped in doc/fail2ban.md matches the log lines of
real failed logins and extracts the client's address, and only that."""

import pathlib
import re
import shutil
import subprocess
import time

import pytest

from moatserver import REPO, wait_for
from test_limits_conn import connect_from

DOC = REPO / "doc/fail2ban.md"
FILTER_MARK = "# /etc/fail2ban/filter.d/moat.conf"


def filter_text():
    """The filter.d/moat.conf block of doc/fail2ban.md."""
    text = DOC.read_text()
    start = text.index(FILTER_MARK)
    end = text.index("```", start)
    return text[start:end]


def failregex():
    """The failregex as Python re: fail2ban's <HOST> becomes a named group."""
    for line in filter_text().splitlines():
        if line.startswith("failregex = "):
            rx = line[len("failregex = "):]
            return re.compile(rx.replace("<HOST>", r"(?P<host>\S+)"))
    raise AssertionError("no failregex in doc/fail2ban.md")


def without_date(line):
    """What fail2ban matches: the line after its timestamp."""
    return re.sub(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?", "", line)


def auth_failed_lines(server, count):
    def get():
        lines = [l for l in server.log_path.read_text(errors="replace").splitlines()
                 if " auth failed: " in l]
        return lines if len(lines) >= count else None
    lines = wait_for(get, 30)
    assert lines, server.logs()
    return lines


@pytest.mark.moat_settings(login_trusted_networks="127.0.0.2",
                           disable_plaintext_auth="no")
def test_failregex_extracts_host(moat_server):
    rx = failregex()
    # Wrong password, unknown user, a user name that imitates the fields,
    # a proxied client, then a nologin (not guessing: must not match).
    c = moat_server.connect()
    assert c.command("LOGIN testuser1 wrong").status == "NO"
    assert c.command("LOGIN nosuchuser x").status == "NO"
    d = connect_from(moat_server, "127.0.0.3")
    assert d.command('LOGIN "evil, method=PLAIN, rip=10.9.9.9, reason=x" y').status == "NO"
    p = connect_from(moat_server, "127.0.0.2")
    assert p.command('ID ("x-originating-ip" "2001:db8::7")').ok
    assert p.command("LOGIN testuser2 wrong").status == "NO"
    lines = moat_server.users_path.read_text().splitlines()
    moat_server.users_path.write_text("\n".join(
        l + "nologin" if l.startswith("testuser2:") else l for l in lines) + "\n")
    assert moat_server.connect().command("LOGIN testuser2 secret2").status == "NO"

    lines = auth_failed_lines(moat_server, 5)
    hosts = []
    for line in lines:
        m = rx.search(without_date(line))
        if "reason=nologin" in line:
            assert m is None, line
        else:
            assert m is not None, line
            hosts.append(m.group("host"))
    assert hosts == ["127.0.0.1", "127.0.0.1", "127.0.0.3", "2001:db8::7"], lines
    # Lines of other kinds never match.
    for line in moat_server.log_path.read_text().splitlines():
        if " auth failed: " not in line:
            assert rx.search(without_date(line)) is None, line

    if shutil.which("fail2ban-regex") is None:
        return
    conf = moat_server.tmp / "moat-filter.conf"
    conf.write_text("[Definition]\n" + "\n".join(
        l for l in filter_text().splitlines()
        if not l.startswith("#") and l != "[Definition]") + "\n")
    out = subprocess.run(["fail2ban-regex", "--print-all-matched",
                          str(moat_server.log_path), str(conf)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"Failregex: 4 total", out.stdout), out.stdout
    for host in ("127.0.0.1", "127.0.0.3", "2001:db8::7"):
        assert host in out.stdout, out.stdout
    assert "10.9.9.9" not in out.stdout.split("Failregex:")[1].split("Ignoreregex")[0]
