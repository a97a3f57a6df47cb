"""moatadm against a real master: the admin socket (who may use it), and
the server commands who, kick, reload, stop, log, stats, user, auth test
and pw (doc/moatadm.8). moatadm runs as a subprocess; its output and exit
code are checked."""

import json
import os
import stat
import subprocess

import pytest

from moatserver import IS_ROOT, MOAT_PREFIX, USER_UID_BASE, USER_GID, root_only, wait_for, USERS

MOATADM = MOAT_PREFIX / "sbin/moatadm"
EX_USAGE, EX_NOUSER, EX_TEMPFAIL, EX_NOPERM = 64, 67, 75, 77
# A group that exists on every Debian system, for admin_group.
ADMIN_GROUP, ADMIN_GID = "nogroup", 65534


def moatadm(server, *args, as_uid=None, groups=None, json_out=False,
            stdin=None, conf=None):
    """Runs moatadm -c server's config; as_uid runs it unprivileged
    (setpriv) with only the supplementary groups given."""
    cmd = [str(MOATADM), "-c", str(conf or server.conf_path)]
    if json_out:
        cmd.append("--json")
    cmd += [str(a) for a in args]
    if as_uid is not None:
        group_opt = (["--groups=" + ",".join(str(g) for g in groups)]
                     if groups else ["--clear-groups"])
        cmd = ["setpriv", f"--reuid={as_uid}", f"--regid={USER_GID}",
               *group_opt, "--"] + cmd
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90,
                          input=stdin, env=env)


def as_json(result):
    assert result.stdout, f"no output: {result}"
    return json.loads(result.stdout)


def wait_sessions(server, user, count):
    """moatadm who until user has count sessions."""
    def check():
        r = moatadm(server, "who", json_out=True)
        rows = [row for row in as_json(r) if row["user"] == user]
        n = sum(row["sessions"] or 0 for row in rows)
        return rows if n == count else None
    rows = wait_for(check, 20)
    assert rows is not None, f"{user} never had {count} sessions\n" + server.logs()
    return rows


# ---- the socket and who may use it -----------------------------------------

def test_admin_socket_mode_and_owner(moat_server):
    st = os.stat(moat_server.base_dir / "admin")
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o660
    if IS_ROOT:
        assert (st.st_uid, st.st_gid) == (0, 0)


@root_only
def test_unprivileged_user_refused(moat_server):
    r = moatadm(moat_server, "who", as_uid=USER_UID_BASE)
    assert r.returncode == EX_NOPERM, r
    assert "permission denied" in r.stderr.lower()


@root_only
def test_peer_credentials_checked_behind_the_file_mode(moat_server):
    """With the file mode opened up, master's SO_PEERCRED check refuses."""
    os.chmod(moat_server.base_dir / "admin", 0o666)
    r = moatadm(moat_server, "who", as_uid=USER_UID_BASE)
    assert r.returncode == EX_NOPERM, r
    assert "admin_group" in r.stderr
    assert "admin: refused uid" in moat_server.logs()


@root_only
@pytest.mark.moat_settings(admin_group=ADMIN_GROUP)
def test_admin_group_member_allowed(moat_server):
    st = os.stat(moat_server.base_dir / "admin")
    assert st.st_gid == ADMIN_GID
    ok = moatadm(moat_server, "stats", as_uid=USER_UID_BASE, groups=[ADMIN_GID],
                 json_out=True)
    assert ok.returncode == 0, ok
    assert as_json(ok)["imap_login_processes"] >= 1
    # the same uid without the group: the file mode refuses it
    r = moatadm(moat_server, "stats", as_uid=USER_UID_BASE)
    assert r.returncode == EX_NOPERM, r
    # and master refuses it when the mode would not
    os.chmod(moat_server.base_dir / "admin", 0o666)
    r = moatadm(moat_server, "stats", as_uid=USER_UID_BASE)
    assert r.returncode == EX_NOPERM, r


def other_config(server, tmp_path, extra=""):
    """A valid copy of server's config for moatadm (master keeps reading
    its own file, which a test may break)."""
    conf = tmp_path / "moatadm.conf"
    conf.write_text(server.conf_path.read_text() + extra)
    return conf


def break_config(server):
    """Makes master's file fail to load; returns the original text."""
    text = server.conf_path.read_text()
    server.conf_path.write_text(text + "no_such_setting = 1\n")
    return text


def test_no_master_is_tempfail(moat_server, tmp_path):
    conf = other_config(moat_server, tmp_path,
                        f"base_dir = {tmp_path}/nothing\n")
    r = moatadm(moat_server, "who", conf=conf)
    assert r.returncode == EX_TEMPFAIL, r
    assert "is moat running" in r.stderr


def test_usage_errors(moat_server):
    assert moatadm(moat_server, "nonsense").returncode == EX_USAGE
    assert moatadm(moat_server, "kick").returncode == EX_USAGE
    assert moatadm(moat_server, "user").returncode == EX_USAGE
    r = moatadm(moat_server, "--json", "frobnicate")
    assert r.returncode == EX_USAGE
    assert as_json(r)["error"]["code"] == "usage"


# ---- who, kick ---------------------------------------------------------------

def test_who_lists_users_sessions_and_pid(moat_server):
    r = moatadm(moat_server, "who", json_out=True)
    assert r.returncode == 0, r
    assert as_json(r) == []
    moat_server.login("testuser1")
    moat_server.login("testuser1")
    moat_server.login("testuser2")
    rows = wait_sessions(moat_server, "testuser1", 2)
    assert len(rows) == 1
    row = rows[0]
    assert row["pid"] in moat_server.child_pids("imap")
    assert row["rss_kib"] > 0
    assert row["addresses"] == "127.0.0.1"
    wait_sessions(moat_server, "testuser2", 1)
    text = moatadm(moat_server, "who")
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0].split("\t") == ["user", "pid", "rss_kib", "sessions", "addresses"]
    assert any(line.startswith("testuser2\t") for line in lines[1:])


def test_kick_ends_sessions_with_bye_and_reason(moat_server):
    c1 = moat_server.login("testuser1")
    c2 = moat_server.login("testuser1")
    other = moat_server.login("testuser2")
    wait_sessions(moat_server, "testuser1", 2)
    r = moatadm(moat_server, "kick", "testuser1", "Mailbox migration", json_out=True)
    assert r.returncode == 0, r
    assert as_json(r) == {"user": "testuser1", "sessions": 2}
    for c in (c1, c2):
        line = c.read_line_within(20)
        assert line == b"* BYE Mailbox migration", line
        c.wait_closed(20)
        assert c.closed
    assert other.command("NOOP").ok
    assert "Kicked by the administrator" in moat_server.logs()
    again = moatadm(moat_server, "kick", "testuser1")
    assert again.returncode == EX_NOUSER, again


# ---- reload, stop, log, stats -----------------------------------------------

def test_reload_rereads_config(moat_server, tmp_path):
    login_before = moat_server.child_pids("imap-login")
    r = moatadm(moat_server, "reload")
    assert r.returncode == 0, r
    assert r.stdout == ""
    assert "moatadm reload by uid" in moat_server.logs()
    # as SIGHUP: the imap-login processes are replaced
    assert wait_for(lambda: not set(login_before) &
                    set(moat_server.child_pids("imap-login")), 20), moat_server.logs()
    # master's file broken: reload fails, master runs on with the old one
    conf = other_config(moat_server, tmp_path)
    original = break_config(moat_server)
    bad = moatadm(moat_server, "reload", json_out=True, conf=conf)
    assert bad.returncode == EX_TEMPFAIL, bad
    assert "no_such_setting" in as_json(bad)["error"]["message"]
    moat_server.conf_path.write_text(original)
    # as after SIGHUP: auth restarts (moatserver's login_after_reload)
    moat_server.login_after_reload("testuser1")
    # moatadm itself refuses to use a broken file, with file:line
    original = break_config(moat_server)
    own = moatadm(moat_server, "reload")
    moat_server.conf_path.write_text(original)
    assert own.returncode == EX_USAGE, own
    assert "moat.conf:" in own.stderr


def test_log_keeps_recent_errors(moat_server, tmp_path):
    r = moatadm(moat_server, "log", json_out=True)
    assert r.returncode == 0, r
    before = len(as_json(r))
    # a failed reload is an error master logs
    conf = other_config(moat_server, tmp_path)
    original = break_config(moat_server)
    assert moatadm(moat_server, "reload", conf=conf).returncode == EX_TEMPFAIL
    moat_server.conf_path.write_text(original)
    rows = as_json(moatadm(moat_server, "log", json_out=True))
    assert len(rows) > before
    assert any("reload failed" in row["line"] and "error:" in row["line"]
               for row in rows), rows
    assert all(row["time"].endswith("Z") for row in rows)
    # info lines are not kept
    assert not any("info: " in row["line"][:40] for row in rows)


def test_stats_counts_logins(moat_server):
    first = as_json(moatadm(moat_server, "stats", json_out=True))
    assert first["logins_ok"] == 0 and first["logins_failed"] == 0
    moat_server.login("testuser1")
    bad = moat_server.connect()
    assert not bad.command("LOGIN testuser1 wrong").ok
    wait_sessions(moat_server, "testuser1", 1)

    def counted():
        s = as_json(moatadm(moat_server, "stats", json_out=True))
        return s if s["logins_failed"] == 1 else None
    stats = wait_for(counted, 20)
    assert stats is not None, moat_server.logs()
    assert stats["logins_ok"] == 1
    assert stats["imap_processes"] == 1
    assert stats["imap_sessions"] == 1
    assert stats["imap_sessions_total"] >= 1
    assert stats["imap_login_processes"] >= 1
    text = moatadm(moat_server, "stats").stdout
    assert "logins_ok: 1\n" in text


def test_stop(moat_server):
    r = moatadm(moat_server, "stop")
    assert r.returncode == 0, r
    moat_server.proc.wait(30)
    assert moat_server.proc.returncode == 0
    assert not (moat_server.base_dir / "admin").exists()


# ---- user, auth test, pw -----------------------------------------------------

def test_user_shows_userdb_fields(moat_server):
    r = moatadm(moat_server, "user", "testuser1", json_out=True)
    assert r.returncode == 0, r
    u = as_json(r)
    expected = moat_server.users["testuser1"]
    assert u["user"] == "testuser1"
    assert u["home"] == str(expected["home"])
    assert u["uid"] == expected["uid"] and u["gid"] == expected["gid"]
    assert u["imap_pid"] is None
    moat_server.login("testuser1")
    wait_sessions(moat_server, "testuser1", 1)
    u = as_json(moatadm(moat_server, "user", "testuser1", json_out=True))
    assert u["imap_pid"] in moat_server.child_pids("imap")
    missing = moatadm(moat_server, "user", "nobody-here")
    assert missing.returncode == EX_NOUSER, missing
    assert "No such user" in missing.stderr


def test_auth_test(moat_server):
    ok = moatadm(moat_server, "auth", "test", "testuser1", "pass", json_out=True)
    assert ok.returncode == 0, ok
    assert as_json(ok) == {"user": "testuser1", "result": "ok"}
    bad = moatadm(moat_server, "auth", "test", "testuser1", "wrong")
    assert bad.returncode == EX_NOPERM, bad
    assert "result: authfailed" in bad.stdout
    # the password from stdin, not the command line
    piped = moatadm(moat_server, "auth", "test", "testuser2", stdin="secret2\n")
    assert piped.returncode == 0, piped
    assert "result: ok" in piped.stdout
    unknown = moatadm(moat_server, "auth", "test", "nobody-here", "x")
    assert unknown.returncode == EX_NOPERM
    # the test went through auth: its failure line for fail2ban is there
    assert "auth failed: user=testuser1" in moat_server.logs()


def test_pw_is_moat_pw(moat_server):
    r = moatadm(moat_server, "pw", "-s", "SHA512-CRYPT", "-p", "hunter2")
    assert r.returncode == 0, r
    hashed = r.stdout.strip()
    assert hashed.startswith("{SHA512-CRYPT}$6$")
    check = moatadm(moat_server, "pw", "-t", hashed, "-p", "hunter2")
    assert check.returncode == 0, check
    wrong = moatadm(moat_server, "pw", "-t", hashed, "-p", "hunter3")
    assert wrong.returncode != 0
