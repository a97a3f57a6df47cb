"""OpenMetrics from master (doc/configuration.md, "Metrics"): GET /metrics
on metrics_listener (a unix socket under base_dir) and metrics_port
(127.0.0.1), scraped while logins, IMAP sessions and an LMTP delivery
run; the text is checked by a strict parser of the OpenMetrics text
format written here; bad requests get 400/404/405."""

import re
import socket
import threading

import pytest

from moatserver import free_port, wait_for
from test_lmtp import MSG, Lmtp, data, start
from test_moatadm import as_json, moatadm, wait_sessions

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*"'
SAMPLE_RE = re.compile(rf"^({NAME})(?:\{{((?:{LABEL})(?:,{LABEL})*)\}})? "
                       r"(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|[-+]?Inf|NaN)$")
TYPES = {"counter": ("_total", "_created"), "gauge": ("",),
         "histogram": ("_bucket", "_count", "_sum", "_created"),
         "summary": ("", "_count", "_sum", "_created"), "info": ("_info",),
         "stateset": ("",), "unknown": ("",), "gaugehistogram": ("_bucket", "_gcount", "_gsum")}


def parse_openmetrics(text):
    """{family: {"type": t, "samples": {(name, labels): value}}}; asserts
    the OpenMetrics 1.0 text rules we rely on: '# EOF' last and once,
    TYPE before a family's samples, families not interleaved, sample
    names made of the family name and its type's suffixes, no
    duplicate samples, counters not negative."""
    assert text.endswith("# EOF\n"), text[-80:]
    lines = text[:-1].split("\n")
    assert lines.count("# EOF") == 1 and lines[-1] == "# EOF"
    families, current, done = {}, None, set()
    for line in lines[:-1]:
        assert line, "empty line"
        if line.startswith("#"):
            m = re.match(rf"^# (TYPE|HELP|UNIT) ({NAME}) ?(.*)$", line)
            assert m, line
            kind, name, rest = m.groups()
            if kind == "TYPE":
                assert name not in families, f"family {name} twice"
                assert rest in TYPES, line
                if current is not None:
                    done.add(current)
                families[name] = {"type": rest, "samples": {}}
                current = name
            else:
                assert name == current, f"{kind} of {name} outside its family"
            continue
        m = SAMPLE_RE.match(line)
        assert m, f"bad sample line {line!r}"
        name, labels, value = m.groups()
        assert current is not None and current not in done, line
        fam = families[current]
        suffix = name[len(current):] if name.startswith(current) else None
        assert suffix in TYPES[fam["type"]], f"{name} in family {current}"
        key = (name, labels or "")
        assert key not in fam["samples"], f"duplicate {line!r}"
        v = float(value)
        if fam["type"] == "counter":
            assert v >= 0, line
        fam["samples"][key] = v
    for name, fam in families.items():
        if fam["type"] == "histogram":
            check_histogram(name, fam["samples"])
    return families


def check_histogram(name, samples):
    """Per label set: le buckets ascending with non-decreasing counts,
    ending at +Inf, which equals _count; a _sum."""
    series = {}
    for (sname, labels), v in samples.items():
        parts = dict(re.findall(r'([a-zA-Z_]+)="([^"]*)"', labels))
        le = parts.pop("le", None)
        key = tuple(sorted(parts.items()))
        series.setdefault(key, {"buckets": [], "count": None, "sum": None})
        if sname == name + "_bucket":
            series[key]["buckets"].append((float(le), v))
        elif sname == name + "_count":
            series[key]["count"] = v
        elif sname == name + "_sum":
            series[key]["sum"] = v
    for key, s in series.items():
        b = s["buckets"]
        assert b and b[-1][0] == float("inf"), (name, key)
        assert [x for x, _ in b] == sorted(x for x, _ in b), (name, key)
        assert all(b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)), (name, key, b)
        assert s["count"] == b[-1][1] and s["sum"] is not None, (name, key)


def http(send, path=None, port=None):
    """One request; returns (status code, headers dict, body str)."""
    if port is None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(str(path))
    else:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
    with s:
        s.sendall(send)
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    m = re.match(r"^HTTP/1\.1 (\d{3}) ", lines[0])
    assert m, lines[0]
    headers = {}
    for h in lines[1:]:
        k, _, v = h.partition(":")
        headers[k.strip().lower()] = v.strip()
    assert int(headers["content-length"]) == len(body)
    return int(m.group(1)), headers, body.decode()


def scrape(server, port=None):
    code, headers, body = http(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                               b"Accept: application/openmetrics-text\r\n\r\n",
                               server.base_dir / "metrics", port)
    assert code == 200, body
    assert headers["content-type"] == CONTENT_TYPE
    return parse_openmetrics(body)


def value(families, family, name, labels=""):
    return families[family]["samples"][(name, labels)]


METRICS_PORT = free_port()


@pytest.mark.moat_settings(lmtp=True, metrics_port=METRICS_PORT)
def test_counters_move_under_load(moat_server):
    before = scrape(moat_server)
    for fam in ("moat_logins", "moat_imap_sessions", "moat_lmtp_recipients",
                "moat_processes", "moat_connections",
                "moat_resident_memory_bytes", "moat_uptime_seconds"):
        assert fam in before, fam
    assert value(before, "moat_processes", "moat_processes",
                 'service="imap-login"') >= 1
    failures = []

    def load():
        try:
            for i in range(5):
                c = moat_server.login("testuser1" if i % 2 else "testuser2")
                assert c.command("SELECT INBOX").ok
                assert c.command("LOGOUT").ok
            bad = moat_server.connect()
            assert bad.command("LOGIN testuser1 wrong").status == "NO"
        except Exception as e:   # reported by the main thread
            failures.append(e)
    t = threading.Thread(target=load)
    t.start()
    # scrapes while the load runs: each must parse
    while t.is_alive():
        scrape(moat_server)
        scrape(moat_server, port=METRICS_PORT)
    t.join()
    assert not failures, failures
    lm = Lmtp(moat_server)
    assert [r[0] for r in start(lm, ["testuser1"])] == [250]
    assert data(lm, MSG, 1)[0][0] == 250
    lm.close()

    def moved():
        after = scrape(moat_server)
        ok = (value(after, "moat_logins", "moat_logins_total", 'result="ok"') >=
              value(before, "moat_logins", "moat_logins_total", 'result="ok"') + 5 and
              value(after, "moat_logins", "moat_logins_total", 'result="failed"') >=
              value(before, "moat_logins", "moat_logins_total", 'result="failed"') + 1 and
              value(after, "moat_imap_sessions", "moat_imap_sessions_total") >=
              value(before, "moat_imap_sessions", "moat_imap_sessions_total") + 5 and
              value(after, "moat_lmtp_recipients", "moat_lmtp_recipients_total") >=
              value(before, "moat_lmtp_recipients", "moat_lmtp_recipients_total") + 1)
        return after if ok else None
    after = wait_for(moved, 20)
    assert after, scrape(moat_server)

    # the imap processes' command counters arrive batched (every 5 s,
    # and when a process ends)
    def commands_counted():
        m = scrape(moat_server)
        fam = m["moat_imap_commands"]["samples"]
        sel = fam.get(("moat_imap_commands_total", 'command="SELECT"'), 0)
        out = fam.get(("moat_imap_commands_total", 'command="LOGOUT"'), 0)
        return m if sel >= 5 and out >= 5 else None
    m = wait_for(commands_counted, 30)
    assert m, scrape(moat_server)
    hist = m["moat_imap_command_duration_seconds"]["samples"]
    assert hist[("moat_imap_command_duration_seconds_count",
                 'command="SELECT"')] >= 5
    # /proc/PID/statm of the running processes is read
    assert value(after, "moat_resident_memory_bytes",
                 "moat_resident_memory_bytes", 'service="imap-login"') > 0


def test_bad_requests(moat_server):
    path = moat_server.base_dir / "metrics"
    for req, code in [
            (b"GET /other HTTP/1.1\r\n\r\n", 404),
            (b"GET / HTTP/1.0\r\n\r\n", 404),
            (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
            (b"GET /metrics\r\n\r\n", 400),
            (b"GET /metrics HTTP/2.0\r\n\r\n", 400),
            (b"hello\n\n", 400),
            (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 5000, 400),
            (b"GET /metrics HTTP/1.0\n\n", 200)]:
        got, _, body = http(req, path)
        assert got == code, (req[:40], got, body)
    # many scrapers at once, and one that never sends: the others are served
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(str(path))
    results = []
    threads = [threading.Thread(target=lambda: results.append(scrape(moat_server)))
               for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert len(results) == 8
    idle.close()


@pytest.mark.moat_settings(metrics_listener='""')
def test_no_listener(moat_server):
    assert not (moat_server.base_dir / "metrics").exists()


def test_moatadm_stats_shows_the_same(moat_server):
    """moatadm stats and the scrape report the same counters."""
    moat_server.login("testuser1")
    bad = moat_server.connect()
    assert bad.command("LOGIN testuser1 wrong").status == "NO"
    wait_sessions(moat_server, "testuser1", 1)

    def settled():
        st = as_json(moatadm(moat_server, "stats", json_out=True))
        return st if st["logins_failed"] == 1 else None
    st = wait_for(settled, 20)
    assert st, moat_server.logs()
    m = scrape(moat_server)
    assert st["logins_ok"] == value(m, "moat_logins", "moat_logins_total",
                                    'result="ok"') == 1
    assert st["logins_failed"] == value(m, "moat_logins", "moat_logins_total",
                                        'result="failed"') == 1
    assert st["imap_sessions_total"] == value(m, "moat_imap_sessions",
                                              "moat_imap_sessions_total")
    assert st["imap_processes"] == value(m, "moat_processes", "moat_processes",
                                         'service="imap"') == 1
    assert st["imap_rss_bytes"] > 0
    assert st["imap_login_rss_bytes"] > 0


def samples(families, family):
    return families[family]["samples"]


def counter(families, family, labels=""):
    """A counter family's _total sample (0 when the label set is absent:
    per-mechanism series appear with the first use)."""
    return samples(families, family).get((family + "_total", labels), 0)


NEW_COUNTERS = [
    ("moat_connections_accepted", 'service="imap-login"'),
    ("moat_tls_handshakes", 'result="ok"'),
    ("moat_tls_handshakes", 'result="failed"'),
    ("moat_preauth_disconnects", 'reason="logout"'),
    ("moat_preauth_disconnects", 'reason="closed"'),
    ("moat_preauth_disconnects", 'reason="tls"'),
    ("moat_received_bytes", 'service="imap-login"'),
    ("moat_received_bytes", 'service="imap"'),
    ("moat_sent_bytes", 'service="imap-login"'),
    ("moat_sent_bytes", 'service="imap"'),
    ("moat_auth_requests", 'mechanism="PLAIN",result="ok"'),
    ("moat_auth_requests", 'mechanism="PLAIN",result="failed"'),
    ("moat_lmtp_deliveries", 'result="delivered"'),
    ("moat_lmtp_deliveries", 'result="permfail"'),
]


@pytest.mark.moat_settings(tls=True, lmtp=True, message_size_limit="4k")
def test_login_auth_bytes_and_delivery_counters_move(moat_server):
    """Each counter that imap-login, auth, imap and lmtp send batched
    (LOGIN-STATS, AUTH-STATS, IO-STATS, DELIVERY-STATS) is seen moving,
    and moatadm stats reports the same totals."""
    from test_tls import connect_tls
    before = scrape(moat_server)
    for fam in ("moat_connections_accepted", "moat_tls_handshakes",
                "moat_preauth_disconnects", "moat_received_bytes",
                "moat_sent_bytes", "moat_auth_requests",
                "moat_auth_duration_seconds", "moat_lmtp_deliveries"):
        assert fam in before, fam
    # a TLS session relayed by imap-login, and a plain one
    c = connect_tls(moat_server)
    assert c.command("LOGIN testuser1 " +
                     moat_server.users["testuser1"]["password"]).ok
    assert c.command("SELECT INBOX").ok
    assert c.command("LOGOUT").ok
    c = moat_server.login("testuser2")
    assert c.command("LIST \"\" *").ok
    assert c.command("LOGOUT").ok
    # a failed login, a pre-auth LOGOUT, a client that just goes away
    bad = moat_server.connect()
    assert bad.command("LOGIN testuser1 wrong").status == "NO"
    assert bad.command("LOGOUT").ok
    gone = moat_server.connect()
    gone.sock.close()
    # a handshake that fails: not a ClientHello
    s = socket.create_connection(("127.0.0.1", moat_server.tls_port), timeout=30)
    s.sendall(b"a1 LOGIN not tls\r\n" * 8)
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
    s.close()
    # LMTP: one delivered, one refused as too big (5xx)
    lm = Lmtp(moat_server)
    assert [r[0] for r in start(lm, ["testuser1"])] == [250]
    assert data(lm, MSG, 1)[0][0] == 250
    assert lm.cmd("MAIL FROM:<a@b>")[0] == 250
    assert lm.cmd("RCPT TO:<testuser1>")[0] == 250
    big = b"Subject: big\r\n\r\n" + (b"x" * 70 + b"\r\n") * 80
    assert data(lm, big, 1)[0][0] == 552
    lm.close()

    def moved():
        after = scrape(moat_server)
        still = [(f, lab) for f, lab in NEW_COUNTERS
                 if counter(after, f, lab) <= counter(before, f, lab)]
        return after if not still else None
    after = wait_for(moved, 40)
    if not after:
        last = scrape(moat_server)
        pytest.fail("not moving: " + repr(
            [(f, lab, counter(last, f, lab)) for f, lab in NEW_COUNTERS
             if counter(last, f, lab) <= counter(before, f, lab)]))
    assert counter(after, "moat_connections_accepted",
                   'service="imap-login"') >= 5
    assert counter(after, "moat_auth_requests",
                   'mechanism="PLAIN",result="ok"') >= 2
    hist = samples(after, "moat_auth_duration_seconds")
    assert hist[("moat_auth_duration_seconds_count",
                 'mechanism="PLAIN"')] >= 3
    # the IMAP session sent at least its greeting-less responses
    assert counter(after, "moat_sent_bytes", 'service="imap"') > 100

    # moatadm stats: the same totals (nothing runs any more, but a
    # process's last batch may still be on its way: wait for equality)
    keys = {
        "imap_login_connections_total": ("moat_connections_accepted",
                                         'service="imap-login"'),
        "tls_handshakes_ok": ("moat_tls_handshakes", 'result="ok"'),
        "tls_handshakes_failed": ("moat_tls_handshakes", 'result="failed"'),
        "imap_login_received_bytes": ("moat_received_bytes",
                                      'service="imap-login"'),
        "imap_login_sent_bytes": ("moat_sent_bytes", 'service="imap-login"'),
        "imap_received_bytes": ("moat_received_bytes", 'service="imap"'),
        "imap_sent_bytes": ("moat_sent_bytes", 'service="imap"'),
        "preauth_disconnects_logout": ("moat_preauth_disconnects",
                                       'reason="logout"'),
        "preauth_disconnects_closed": ("moat_preauth_disconnects",
                                       'reason="closed"'),
        "preauth_disconnects_tls": ("moat_preauth_disconnects",
                                    'reason="tls"'),
        "lmtp_delivered": ("moat_lmtp_deliveries", 'result="delivered"'),
        "lmtp_permfail": ("moat_lmtp_deliveries", 'result="permfail"'),
    }

    def same():
        st = as_json(moatadm(moat_server, "stats", json_out=True))
        m = scrape(moat_server)
        diff = {k: (st[k], counter(m, f, lab)) for k, (f, lab) in keys.items()
                if st[k] != counter(m, f, lab)}
        return (st, m) if not diff else None
    got = wait_for(same, 30)
    assert got, as_json(moatadm(moat_server, "stats", json_out=True))
    st, m = got
    assert st["lmtp_delivered"] >= 1 and st["lmtp_permfail"] >= 1
    rows = as_json(moatadm(moat_server, "stats", "auth", json_out=True))
    plain = [r for r in rows if r["mechanism"] == "PLAIN"]
    assert plain and plain[0]["ok"] == counter(
        m, "moat_auth_requests", 'mechanism="PLAIN",result="ok"'), rows
    assert plain[0]["failed"] >= 1


def test_moatadm_stats_text(moat_server):
    """The text form lists the new keys too; a bad argument is a usage
    error."""
    out = moatadm(moat_server, "stats")
    for key in ("tls_handshakes_ok", "imap_received_bytes",
                "preauth_disconnects_timeout", "lmtp_tempfail"):
        assert key in out.stdout, out.stdout
    assert moatadm(moat_server, "stats", "bogus").returncode == 64


def test_imap_sessions_gauge(moat_server):
    """moat_connections{service="imap"}: the logged-in sessions the imap
    processes last reported (LOAD, at most every 5 s), two users' added."""
    def sessions():
        return value(scrape(moat_server), "moat_connections",
                     "moat_connections", 'service="imap"')
    assert sessions() == 0
    a = moat_server.login("testuser1")
    b = moat_server.login("testuser1")
    c = moat_server.login("testuser2")
    assert wait_for(lambda: sessions() == 3, 30), scrape(moat_server)
    assert a.command("LOGOUT").ok
    c.close()
    assert wait_for(lambda: sessions() == 1, 30), scrape(moat_server)
    assert b.command("NOOP").ok
