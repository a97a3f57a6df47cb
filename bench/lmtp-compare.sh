#!/usr/bin/env bash
# LMTP deliveries per second, moat against Dovecot's LMTP (dovecot-lmtpd,
# stock settings: mail_fsync = optimized, as moat's default), same machine,
# same run: to one user and to 20 users, over 1, 5, 10 and 20 connections
# (20 into one mailbox: the group commit, against one connection),
# and how soon a session in IDLE hears of a delivery.
# Usage: bench/lmtp-compare.sh [PREFIX] [SECONDS]
#   PREFIX: an installed moat (default build/run/local... ./local)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(cd "${1:-$here/../local}" && pwd)
secs=${2:-10}
BENCH_NAME=lmtp-compare
# shellcheck source=bench/servers.sh
. "$here/servers.sh"
trap bench_cleanup EXIT
bench_install_dovecot
[ -e /usr/lib/dovecot/lmtp ] || {
	bench_is_root || bench_die "dovecot-lmtpd is missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends dovecot-lmtpd >/dev/null
}
BENCH_WORK=$(mktemp -d /tmp/moat-lmtp-bench.XXXXXX)
chmod 0755 "$BENCH_WORK"
users=()
for i in $(seq 1 20); do users+=("user$i"); done

run_server() {   # NAME: the whole table for one server
	local name=$1 dir=$BENCH_WORK/$1 port lmtp
	mkdir -p "$dir"
	bench_write_users "$dir/users" "${users[@]}"
	for u in "${users[@]}"; do bench_make_home "$dir/mail/$u"; done
	port=$(bench_free_port)
	lmtp=$(bench_free_port)
	if [ "$name" = moat ]; then
		BENCH_LMTP_PORT=$lmtp bench_start_moat "$prefix" "$dir" "$port"
		pid=$MOAT_PID
	else
		BENCH_LMTP_PORT=$lmtp bench_start_dovecot "$dir" "$port" stock
		pid=$DOVECOT_PID
	fi
	for shape in "1 1" "1 5" "1 10" "1 20" "20 1" "20 5" "20 10" "20 20"; do
		set -- $shape
		/usr/bin/python3 "$here/lmtpload.py" --port "$lmtp" --users "$1" \
			--clients "$2" --seconds "$secs" | sed "s/^RESULT /RESULT server=$name /"
	done
	/usr/bin/python3 "$here/idle-latency.py" --imap-port "$port" \
		--lmtp-port "$lmtp" --count 50 | sed "s/^RESULT /RESULT server=$name /"
	bench_stop "$pid"
}

run_server moat | tee "$BENCH_WORK/moat.txt"
run_server dovecot | tee "$BENCH_WORK/dovecot.txt"
/usr/bin/python3 - "$BENCH_WORK/moat.txt" "$BENCH_WORK/dovecot.txt" <<'PY'
import re, sys
def load(p):
    out = {}
    for line in open(p):
        m = re.search(r"users=(\d+) clients=(\d+) .*per_sec=([\d.]+) errors=(\d+)", line)
        if m:
            out[(int(m[1]), int(m[2]))] = (float(m[3]), int(m[4]))
    return out
moat, dove = load(sys.argv[1]), load(sys.argv[2])
print("| users | connections | moat/s | Dovecot/s | moat/Dovecot |")
print("|---|---|---|---|---|")
for k in sorted(moat):
    m, d = moat[k][0], dove.get(k, (0, 0))[0]
    print(f"| {k[0]} | {k[1]} | {m:.0f} | {d:.0f} | {m / d:.2f}x |" if d else
          f"| {k[0]} | {k[1]} | {m:.0f} | - | - |")
one = moat.get((1, 1), (0,))[0]
if one:
    for n in (5, 10, 20):
        if (1, n) in moat:
            print(f"{n} connections into one mailbox: {moat[(1, n)][0] / one:.2f}x one connection (moat)")
for name, path in (("moat", sys.argv[1]), ("Dovecot", sys.argv[2])):
    for line in open(path):
        m = re.search(r"workload=idle-latency .*p50_ms=([\d.]+) p99_ms=([\d.]+)", line)
        if m:
            print(f"{name}: IDLE hears a delivery after {m[1]} ms (median), {m[2]} ms (p99)")
PY
