"""RLIMIT_NOFILE for the services' limits (master/master-fdlimit.c): a
service manager's or shell's soft limit of 1024 is below what the default
client_limit and process_limit need, so master raises the soft limit
(every child inherits it) up to the hard limit, and warns when the hard
limit is short."""

import resource

import pytest

from moatserver import MoatServer, wait_for

# the defaults: imap's client_limit 1000 at 5 descriptors a client + 128
DEFAULT_NEED = 1000 * 5 + 128


def soft_limit(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError(f"no open-file limit for {pid}")


@pytest.fixture
def start_with_limit():
    servers = []

    def start(soft, hard, settings=None):
        server = MoatServer(dict(settings or {}))
        servers.append(server)
        server.rlimit_nofile = (soft, hard)
        server.prepare()
        server.start()
        return server
    yield start
    for server in servers:
        server.close_clients()
        server.stop()
        server.kill_everything()
        server.cleanup()


def test_soft_limit_raised_for_the_defaults(start_with_limit):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < DEFAULT_NEED:
        pytest.skip(f"hard limit {hard} is below {DEFAULT_NEED}")
    server = start_with_limit(256, hard)
    assert soft_limit(server.pid) >= DEFAULT_NEED, server.logs()
    c = server.login("testuser1")
    assert c.command("NOOP").ok
    for comm in ("imap-login", "imap"):
        for pid in server.wait_children(comm, 1):
            assert soft_limit(pid) >= DEFAULT_NEED, (comm, server.logs())
    assert "open-file hard limit" not in server.logs()


def test_short_hard_limit_is_used_and_named(start_with_limit):
    server = start_with_limit(256, 1024)
    assert soft_limit(server.pid) == 1024
    assert wait_for(lambda: "open-file hard limit (1024) is below what imap"
                    in server.logs(), 10), server.logs()
    assert server.login("testuser1").command("NOOP").ok


def test_limits_that_fit_leave_it_alone(start_with_limit):
    # small limits need less than the soft limit the server starts with
    settings = {"services": {"imap": {"client_limit": 10, "process_limit": 10}}}
    server = start_with_limit(4096, 4096, settings)
    assert soft_limit(server.pid) == 4096
    assert "open-file hard limit" not in server.logs()
