"""imap-login process management: client_limit, process_limit,
service_count and idle_kill (master's LOAD / LISTEN-DONE handling)."""

import pytest

from moatserver import wait_for


@pytest.mark.moat_settings(services={"imap-login": {
    "client_limit": 1, "process_limit": 3, "process_min_avail": 1}})
def test_full_login_process_gets_company(moat_server):
    clients = []
    for n in range(3):
        clients.append(moat_server.connect())
        # Each full process gets company, so the next client finds one.
        assert wait_for(lambda: len(moat_server.child_pids("imap-login")) >= min(n + 2, 3), 30), \
            moat_server.logs()
    for c in clients:
        assert c.command("NOOP").ok
    assert len(moat_server.child_pids("imap-login")) == 3


@pytest.mark.moat_settings(services={"imap-login": {
    "client_limit": 1, "process_limit": 2, "process_min_avail": 1}})
def test_process_limit_caps_login_processes(moat_server):
    clients = [moat_server.connect()]
    assert wait_for(lambda: len(moat_server.child_pids("imap-login")) == 2, 30)
    clients.append(moat_server.connect())
    # Both processes are full and the limit is reached: no third one.
    assert not wait_for(lambda: len(moat_server.child_pids("imap-login")) > 2, 1)
    for c in clients:
        assert c.command("NOOP").ok


@pytest.mark.moat_settings(services={"imap-login": {
    "client_limit": 1, "process_limit": 3, "process_min_avail": 1,
    "idle_kill": 1}})
def test_idle_kill_stops_extra_processes(moat_server):
    c1 = moat_server.connect()
    assert wait_for(lambda: len(moat_server.child_pids("imap-login")) >= 2, 30)
    c1.command("LOGOUT")
    c1.close()
    # Back to process_min_avail once the extra process idled for idle_kill.
    assert wait_for(lambda: len(moat_server.child_pids("imap-login")) == 1, 30), \
        moat_server.logs()
    c = moat_server.connect()
    assert c.command("NOOP").ok


@pytest.mark.moat_settings(services={"imap-login": {"service_count": 1}})
def test_service_count_one_gives_each_client_its_own_process(moat_server):
    c1 = moat_server.connect()
    c2 = moat_server.connect()
    c3 = moat_server.connect()
    assert c1.command("NOOP").ok and c2.command("NOOP").ok and c3.command("NOOP").ok
    assert len(moat_server.child_pids("imap-login")) >= 3
