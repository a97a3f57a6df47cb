"""pytest fixtures for moat's protocol tests (see moatserver.py)."""

import pytest

from moatserver import MoatServer, STOP_TIMEOUT

# Lines of the server's log shown under a failed test: what moat said
# about the failure (a disconnect's reason, an error) without a rerun.
FAILED_LOG_TAIL = 60


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the item, for moat_server's teardown."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, "moat_report_" + report.when, report)


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
    call = getattr(request.node, "moat_report_call", None)
    if call is not None and call.failed:
        tail = server.logs().splitlines()[-FAILED_LOG_TAIL:]
        print(f"--- the server's log, last {FAILED_LOG_TAIL} lines ---")
        print("\n".join(tail))
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
