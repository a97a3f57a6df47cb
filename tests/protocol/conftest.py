"""pytest fixtures for moat's protocol tests (see moatserver.py)."""

import pytest

from moatserver import MoatServer, STOP_TIMEOUT


@pytest.fixture
def moat_server(request):
    """A started server, stopped (and checked) after the test."""
    marker = request.node.get_closest_marker("moat_settings")
    settings = dict(marker.kwargs) if marker else {}
    server = MoatServer(settings)
    try:
        server.prepare()
        server.start()
        yield server
    except BaseException:
        server.kill_everything()
        server.cleanup()
        raise
    server.close_clients()
    rc, leftovers = server.stop()
    problems = []
    if rc is None:
        problems.append(f"master did not exit within {STOP_TIMEOUT}s of SIGTERM")
    elif rc != 0:
        problems.append(f"master exited with status {rc} after SIGTERM")
    if leftovers:
        problems.append(f"processes left behind: {leftovers}")
    reports = server.sanitizer_reports()
    if reports:
        problems.append("sanitizer report(s) in the log: " + ", ".join(reports))
    logs = server.logs() if problems else ""
    server.kill_everything()
    if not problems:
        server.cleanup()
    if problems:
        pytest.fail("; ".join(problems) + f"\n(kept {server.tmp})\n" + logs)
