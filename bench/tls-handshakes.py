#!/usr/bin/python3
"""bench/tls-handshakes.py: full TLS handshakes per second against
imap-login with the key in the key-signer (ssl_key_isolation = yes, the
default) and with the key in imap-login (no). doc/performance.md
records the figures.

    bench/tls-handshakes.py [--prefix DIR] [--seconds N] [--clients N]
                            [--rounds N] [--keys rsa,ec] [--versions 1.2,1.3]

For each key type (RSA-2048, P-256) and TLS version it starts a private
moat (tests/protocol/moatserver.py: a temporary directory, 127.0.0.1, a
random port, stopped by pid) once per setting and runs N `openssl s_time
-new` clients at once against the implicit-TLS listener for the given
time (every connection a full handshake, no resumption). The figure is
the sum of their connections per second, the median of --rounds rounds
that alternate the two settings (so that a change of the machine's load
hits both alike); the ratio is isolated / in process. One imap-login process (the default process_min_avail), so both
settings sign on one core: in process it is imap-login's, isolated the
key-signer's. Run as root (privilege separation, as in production) or
as anyone."""

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests/protocol"))

S_TIME_RE = re.compile(rb"(\d+) connections in ([\d.]+) real seconds")


def s_time(host, port, version, seconds, clients):
    """Connections per second of clients parallel s_time runs."""
    flag = {"1.2": "-tls1_2", "1.3": "-tls1_3"}[version]
    procs = [subprocess.Popen(
        ["openssl", "s_time", "-connect", f"{host}:{port}", "-new", flag,
         "-time", str(seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(clients)]
    total = 0.0
    for p in procs:
        out, _ = p.communicate(timeout=seconds * 4 + 60)
        m = S_TIME_RE.search(out)
        if m is None:
            raise RuntimeError(f"s_time: {out.decode(errors='replace')}")
        total += int(m.group(1)) / float(m.group(2))
    return total


def run(MoatServer, key, version, isolation, args):
    server = MoatServer({"tls": True, "tls_key_type": key,
                         "ssl_key_isolation": isolation})
    server.prepare()
    server.start()
    try:
        # one short round first: the processes are started and warm
        s_time(server.host, server.tls_port, version, 1, 1)
        return s_time(server.host, server.tls_port, version, args.seconds,
                      args.clients)
    finally:
        server.close_clients()
        server.stop()
        server.kill_everything()
        server.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", default=str(REPO / "build/test/local"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keys", default="rsa,ec")
    ap.add_argument("--versions", default="1.3,1.2")
    args = ap.parse_args()
    os.environ["MOAT_PREFIX"] = args.prefix
    from moatserver import MoatServer  # reads MOAT_PREFIX at import

    print(f"{'key':4} {'TLS':4} {'in process/s':>13} {'isolated/s':>11} {'ratio':>6}")
    for key in args.keys.split(","):
        for version in args.versions.split(","):
            plain, isolated = [], []
            for _ in range(args.rounds):
                plain.append(run(MoatServer, key, version, "no", args))
                isolated.append(run(MoatServer, key, version, "yes", args))
            plain = statistics.median(plain)
            isolated = statistics.median(isolated)
            print(f"{key:4} {version:4} {plain:13.1f} {isolated:11.1f} "
                  f"{isolated / plain:6.2f}", flush=True)


if __name__ == "__main__":
    main()
