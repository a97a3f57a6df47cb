#!/usr/bin/python3
"""bench/idle-connections.py: memory per idle connection with many of
them at once, before and after login (doc/performance.md records the
figures; the targets: <= 32 KB per idle pre-auth connection, <= 64 KB
per idle logged-in one, and new logins still answered meanwhile).

    bench/idle-connections.py [--prefix DIR] [--connections N] [--tls]

Starts a private moat (tests/protocol/moatserver.py: a temporary
directory, 127.0.0.1, a random port, stopped by pid; run as root for
privilege separation as in production), raises the fd limits (this
process and the server it starts inherit them), then:

  1. opens N connections (default 5000), each reading its greeting (or,
     with --tls, finishing its handshake on the imaps port first), and
     leaves them idle; imap-login serves them over as many processes as
     client_limit (1000) needs;
  2. measures the VmRSS of all imap-login processes against the same
     with no client (a fresh connection is opened and closed first so
     that each process's steady state is the baseline);
  3. logs a fresh client in and out while all are idle (the time it
     took is printed);
  4. logs every connection in (half as testuser1, half as testuser2:
     one imap process each, per-user limits off), and measures the VmRSS
     of imap-login and imap together against step 2's baseline plus the
     two imap processes with one client each.

A sanitizer build (the default prefix, build/test/local) inflates every
figure; use a release build (./dev.sh build: --prefix local) for the
table. ASan's quarantine is turned off either way."""

import argparse
import os
import pathlib
import resource
import socket
import ssl
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "protocol"))

# Descriptors: N client sockets here, N in imap-login (and, after the
# handoff of plaintext connections, N in the imap processes), and room.
FD_HEADROOM = 1024
PER_PROCESS_CLIENTS = 1000


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < want:
        if os.geteuid() != 0:
            sys.exit(f"fd hard limit {hard} < {want}: run as root or raise it")
        hard = want
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))


def rss_kib(pids):
    total = 0
    for pid in pids:
        try:
            for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def read_line(sock):
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    return data


def connect(server, tls, ctx):
    s = socket.create_connection((server.host, server.tls_port if tls else server.port), 60)
    if tls:
        s = ctx.wrap_socket(s)
    line = read_line(s)
    assert line.startswith(b"* OK"), line
    return s


def login(sock, user, password, tag=b"l1"):
    sock.sendall(tag + b" LOGIN " + user.encode() + b" " + password.encode() + b"\r\n")
    while True:
        line = read_line(sock)
        if line.startswith(tag + b" "):
            assert line.startswith(tag + b" OK"), line
            return


def settle(server, comm, want, timeout=120):
    """Pids of comm once their count stopped changing (or timeout)."""
    deadline = time.monotonic() + timeout
    last, stable = None, 0
    while time.monotonic() < deadline:
        pids = sorted(server.child_pids(comm))
        stable = stable + 1 if pids == last else 0
        if stable >= 10 and len(pids) >= want:
            return pids
        last = pids
        time.sleep(0.1)
    return last or []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", default=str(HERE.parent / "build/test/local"))
    ap.add_argument("--connections", type=int, default=5000)
    ap.add_argument("--tls", action="store_true")
    args = ap.parse_args()
    n = args.connections
    os.environ["MOAT_PREFIX"] = args.prefix
    os.environ["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "detect_leaks=0") +
                                  ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0")
    raise_fd_limit(3 * n + FD_HEADROOM)
    from moatserver import MoatServer   # after MOAT_PREFIX is set

    procs = (n + PER_PROCESS_CLIENTS - 1) // PER_PROCESS_CLIENTS + 1
    server = MoatServer({
        "tls": args.tls,
        # idle pre-auth connections must outlive the set-up of all of them
        "login_timeout": 3600,
        "login_max_connections_per_ip": 0,
        "mail_max_userip_connections": 0,
        "mail_max_user_connections": 0,
        "services": {
            "imap-login": {"client_limit": PER_PROCESS_CLIENTS,
                           "process_limit": procs + 2,
                           "process_min_avail": procs},
            "imap": {"client_limit": n + 10},
        },
    })
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    socks = []
    try:
        server.prepare()
        server.start()
        users = [(name, u["password"]) for name, u in server.users.items()]
        # the baseline: every process started and warmed by one client
        login_pids = settle(server, "imap-login", procs)
        for _ in range(2 * len(login_pids)):
            connect(server, args.tls, ctx).close()
        time.sleep(1)
        base_login = rss_kib(login_pids)
        print(f"imap-login processes: {len(login_pids)}, VmRSS with no client: "
              f"{base_login} KiB")

        t0 = time.monotonic()
        for i in range(n):
            socks.append(connect(server, args.tls, ctx))
        took = time.monotonic() - t0
        login_pids = settle(server, "imap-login", 1)
        idle_login = rss_kib(login_pids)
        per_preauth = (idle_login - base_login) * 1024 / n
        print(f"{n} idle pre-auth connections in {took:.1f} s over "
              f"{len(login_pids)} imap-login processes: {idle_login} KiB, "
              f"{per_preauth / 1024:.1f} KiB per connection")

        t0 = time.monotonic()
        extra = connect(server, args.tls, ctx)
        login(extra, *users[0])
        extra.sendall(b"x LOGOUT\r\n")
        extra.close()
        print(f"a new login while they idle: {1000 * (time.monotonic() - t0):.0f} ms")

        # one client per user first: the imap processes' own baseline
        for k, (user, password) in enumerate(users):
            login(socks[k], user, password)
        imap_pids = settle(server, "imap", len(users))
        base_imap = rss_kib(imap_pids)
        t0 = time.monotonic()
        for i in range(len(users), n):
            user, password = users[i % len(users)]
            login(socks[i], user, password)
        took = time.monotonic() - t0
        imap_pids = settle(server, "imap", len(users))
        login_pids = settle(server, "imap-login", 1)
        after_login = rss_kib(login_pids)
        after_imap = rss_kib(imap_pids)
        total = (after_login - base_login) + (after_imap - base_imap)
        per_loggedin = total * 1024 / (n - len(users))
        print(f"{n} logged in in {took:.1f} s: imap-login {after_login} KiB, "
              f"imap ({len(imap_pids)} processes) {after_imap} KiB "
              f"(from {base_imap}); {per_loggedin / 1024:.1f} KiB per logged-in "
              "connection (imap-login and imap together)")

        t0 = time.monotonic()
        extra = connect(server, args.tls, ctx)
        login(extra, *users[1])
        extra.close()
        print(f"a new login with all of them logged in: "
              f"{1000 * (time.monotonic() - t0):.0f} ms")
        print(f"RESULT connections={n} tls={int(args.tls)} "
              f"preauth_kib_per_conn={per_preauth / 1024:.1f} "
              f"loggedin_kib_per_conn={per_loggedin / 1024:.1f}")
    finally:
        for s in socks:
            try:
                s.close()
            except OSError:
                pass
        server.close_clients()
        server.stop()
        server.kill_everything()
        server.cleanup()


if __name__ == "__main__":
    main()
