"""The password verification cache (auth_cache_*, auth/auth-cache.h).

What a login answers never depends on the cache: a password that was
right stops working the moment the passwd-file has a new hash, one that
was wrong works once it is the new password, and an unknown user stays
unknown. The cache only saves the hashing (measured in bench/, not here:
tests do not time)."""

import pytest

from moatserver import hash_password
from test_config import run_moat
from test_sasl import set_passwords


def login(server, user, password):
    c = server.connect()
    r = c.command(f"LOGIN {user} {password}")
    c.close()
    return r


def refused(r):
    return r.status == "NO" and r.code == "AUTHENTICATIONFAILED"


@pytest.mark.parametrize("size", [
    pytest.param("1M", marks=pytest.mark.moat_settings(auth_cache_size="1M")),
    pytest.param("0", marks=pytest.mark.moat_settings(auth_cache_size="0")),
])
def test_cached_logins_follow_the_passwd_file(moat_server, size):
    server = moat_server
    user, old = "testuser1", server.users["testuser1"]["password"]
    new = "n3w-" + old
    set_passwords(server, {user: hash_password(old)})
    # twice each: the second of each comes from the cache (when on)
    for _ in range(2):
        assert login(server, user, old).ok
        assert refused(login(server, user, new))
        assert refused(login(server, "nosuchuser", old))
    set_passwords(server, {user: hash_password(new)})
    for _ in range(2):
        assert refused(login(server, user, old))
        assert login(server, user, new).ok
    # the other users' logins are untouched by the change
    assert login(server, "testuser2",
                 server.users["testuser2"]["password"]).ok


def test_cache_settings(tmp_path):
    conf = tmp_path / "moat.conf"
    base = (f"base_dir = {tmp_path}/run\n"
            "passdb {\n  driver = passwd-file\n"
            f"  args = {tmp_path}/users\n}}\n")
    conf.write_text(base + "auth_cache_size = 64k\n"
                    "auth_cache_ttl = 10 mins\n"
                    "auth_cache_negative_ttl = 0\n")
    r = run_moat("-n", "-c", str(conf))
    assert r.returncode == 0, r
    for line in ("auth_cache_size = 64k", "auth_cache_ttl = 10 mins",
                 "auth_cache_negative_ttl = 0"):
        assert line in r.stdout, (line, r.stdout)
    conf.write_text(base + "auth_cache_size = lots\n")
    r = run_moat("-n", "-c", str(conf))
    assert r.returncode != 0 and "auth_cache_size" in r.stdout + r.stderr, r
