"""Start-up checks of the master that need no running server."""

import subprocess

from moatserver import MOAT_PREFIX


def run_moat(*args):
    return subprocess.run([str(MOAT_PREFIX / "sbin/moat"), *args],
                          capture_output=True, text=True, timeout=20)


def test_unknown_setting_fails_with_file_and_line(tmp_path):
    conf = tmp_path / "moat.conf"
    conf.write_text(f"base_dir = {tmp_path}/run\n"
                    "# a comment\n"
                    "no_such_setting = 1\n")
    r = run_moat("-n", "-c", str(conf))
    assert r.returncode != 0, r
    assert f"{conf}:3" in r.stdout + r.stderr, r


def test_print_non_default_settings(tmp_path):
    conf = tmp_path / "moat.conf"
    conf.write_text(f"base_dir = {tmp_path}/run\n"
                    "imap_max_bad_commands = 7\n"
                    "passdb {\n  driver = passwd-file\n"
                    f"  args = {tmp_path}/users\n}}\n")
    r = run_moat("-n", "-c", str(conf))
    assert r.returncode == 0, r
    assert "imap_max_bad_commands = 7" in r.stdout, r
