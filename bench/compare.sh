#!/usr/bin/env bash
# bench/compare.sh: moat and Dovecot side by side on this machine.
#
#   bench/compare.sh [--quick] [--prefix DIR] [--imapload PATH] [--rounds N]
#                    [--secs N] [--big N] [--out FILE] [--keep]
#                    [--only WORKLOAD[,WORKLOAD...]] [--pipeline N]
#
# Starts a private moat (from --prefix, default build/bench/local) and two
# private Dovecots (Debian's package, installed when missing: stock settings
# and the documented high-performance login settings), all on 127.0.0.1 at
# random ports with their own base_dir, users testuser1..20/pass, Maildir,
# fsync as shipped. Loads the same messages into both, runs each workload
# against each server in turn (A B A B ...), and prints one table with the
# median of the rounds, peak RSS per process kind and idle memory. Everything
# it started is stopped by pid at exit. Run as root (privilege separation
# of both servers needs it).
#   --quick: 2 rounds of 1 s, fewer client counts: under 3 minutes.
#   default: 3 rounds of 5 s, every client count: about 30 minutes (22 before the -1user shapes).
#   --only: run just these workloads (login, login-hp, list, status,
#     fetch-all, fetch-body, store, fetch-range, fetch2, store-range,
#     append, append-one-mailbox, append-own-mailbox, big), e.g.
#     --only status,list; a pipelined run is named with "-pN" (list-p8);
#     10 connections of one user with "-1user" (fetch2-1user, list-p8-1user).
#   --pipeline N: the depth of the pipelined runs of list, status,
#     fetch-range, fetch2 and store-range (8), which follow their runs
#     with one command in flight; 1 = no pipelined runs.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_NAME=compare
# shellcheck source=servers.sh
. "$ROOT/bench/servers.sh"

PREFIX=$ROOT/build/bench/local
IMAPLOAD=""
QUICK=0
ROUNDS=""
SECS=""
BIG=""
OUT=""
ONLY=""
PIPE=8
CORPUS=${BENCH_CORPUS:-$ROOT/../shared/corpus/lists/linux-xfs.mbox.xz}
READ_USERS=20          # testuser1..20, 100 messages each
INBOX_MESSAGES=100
APPEND_USERS=400       # a fresh, empty user for every APPEND run

while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--prefix) PREFIX=$2; shift ;;
	--imapload) IMAPLOAD=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	--secs) SECS=$2; shift ;;
	--big) BIG=$2; shift ;;
	--out) OUT=$2; shift ;;
	--keep) BENCH_KEEP=1 ;;
	--only) ONLY=",$2,"; shift ;;
	--pipeline) PIPE=$2; shift ;;
	*) sed -n '2,24p' "$0" >&2; exit 2 ;;
	esac
	shift
done
PREFIX=$(cd "$PREFIX" && pwd)
[ -n "$IMAPLOAD" ] || IMAPLOAD=$(dirname "$PREFIX")/bench/imapload
[ -x "$IMAPLOAD" ] || { bench_say "no imapload at $IMAPLOAD (make bench/imapload)"; exit 1; }
[ -x "$PREFIX/sbin/moat" ] || { bench_say "no moat in $PREFIX (make install)"; exit 1; }
[ -r "$CORPUS" ] || { bench_say "corpus $CORPUS missing"; exit 1; }
bench_is_root || { bench_say "run as root"; exit 1; }
if [ "$QUICK" = 1 ]; then
	: "${ROUNDS:=2}" "${SECS:=1}" "${BIG:=2000}"
	FEW="1 10"; FETCH_CLIENTS="1 5"; CONC="1 4 20"
else
	: "${ROUNDS:=3}" "${SECS:=5}" "${BIG:=10000}"
	FEW="1 10"; FETCH_CLIENTS="1 5"; CONC="1 2 4 8 20"
fi
APPEND_SECS=$([ "$QUICK" = 1 ] && echo 1 || echo 5)

BENCH_WORK=$(mktemp -d /tmp/moat-bench.XXXXXX)
chmod 0755 "$BENCH_WORK"
trap 'bench_cleanup' EXIT
trap 'exit 130' INT TERM
RESULTS=$BENCH_WORK/results.tsv
: >"$RESULTS"
RSS=$BENCH_WORK/rss.tsv
: >"$RSS"
T0=$(date +%s)

bench_install_dovecot

# ---- users, servers, data -------------------------------------------------
users=()
for ((i = 1; i <= READ_USERS; i++)); do users+=("testuser$i"); done
for ((i = 1; i <= APPEND_USERS; i++)); do users+=("apuser$i"); done
for ((i = 1; i <= ROUNDS; i++)); do users+=("biguser$i"); done
SERVERS=(moat dovecot dovecot-hp)
declare -A PORT PID APPEND_NEXT
for s in "${SERVERS[@]}"; do
	mkdir -p "$BENCH_WORK/$s/mail"
	bench_write_users "$BENCH_WORK/$s/users" "${users[@]}"
	for u in "${users[@]}"; do bench_make_home "$BENCH_WORK/$s/mail/$u"; done
	PORT[$s]=$(bench_free_port)
	APPEND_NEXT[$s]=1
done
bench_start_moat "$PREFIX" "$BENCH_WORK/moat" "${PORT[moat]}"
PID[moat]=$MOAT_PID
bench_start_dovecot "$BENCH_WORK/dovecot" "${PORT[dovecot]}" stock
PID[dovecot]=$DOVECOT_PID
bench_start_dovecot "$BENCH_WORK/dovecot-hp" "${PORT[dovecot-hp]}" hp
PID[dovecot-hp]=$DOVECOT_PID
sleep 1
for s in "${SERVERS[@]}"; do
	printf 'idle\t%s\t%s\n' "$s" "$(bench_tree_rss "${PID[$s]}")" >>"$RSS"
done
bench_say "servers up: moat :${PORT[moat]}, dovecot :${PORT[dovecot]}, dovecot-hp :${PORT[dovecot-hp]}"

# wanted WORKLOAD: selected by --only (everything without it).
wanted() {
	[ -z "$ONLY" ] || [[ $ONLY == *",$1,"* ]]
}

python3 "$ROOT/bench/mkmaildir.py" --mbox "$BENCH_WORK/inbox.mbox" "$CORPUS" \
	"$INBOX_MESSAGES" >/dev/null
for s in moat dovecot; do
	"$IMAPLOAD" -p "${PORT[$s]}" -c "$READ_USERS" -n "$INBOX_MESSAGES" \
		-s "$BENCH_WORK/inbox.mbox" --populate >"$BENCH_WORK/populate-$s.out" ||
		{ cat "$BENCH_WORK/populate-$s.out" >&2; bench_die "populating $s failed"; }
done
bench_say "populated ${READ_USERS} INBOXes of $INBOX_MESSAGES messages"
wanted big && python3 "$ROOT/bench/mkmaildir.py" "$CORPUS" "$BIG" \
	"$BENCH_WORK/big-pristine" >/dev/null

# ---- running --------------------------------------------------------------

# sample_rss SERVER: peak RSS (VmHWM) of each live process of the server.
sample_rss() {
	bench_tree_kinds "${PID[$1]}" | while read -r kind kb; do
		printf 'peak\t%s\t%s\t%s\n' "$1" "$kind" "$kb"
	done >>"$RSS"
}

# run_one WORKLOAD CLIENTS SERVER ROUND IMAPLOAD-ARGS...
run_one() {
	local wl=$1 clients=$2 server=$3 round=$4 out line
	shift 4
	out=$BENCH_WORK/run-$wl-$clients-$server-$round.out
	"$IMAPLOAD" -p "${PORT[$server]}" -c "$clients" "$@" >"$out" 2>&1 &
	local lpid=$!
	sleep "$(awk -v s="$SECS" 'BEGIN { print (s > 1 ? s / 2 : 0.5) }')"
	sample_rss "$server"
	wait "$lpid" || true
	line=$(grep '^RESULT' "$out" | tail -1) || true
	[ -n "$line" ] || line="RESULT ops_per_sec=0 errors=1 status=crashed"
	printf '%s\t%s\t%s\t%s\t%s\n' "$wl" "$clients" "$server" "$round" \
		"$line" >>"$RESULTS"
	if ! grep -q 'status=ok\|status=unsupported' <<<"$line"; then
		bench_say "$wl c=$clients $server: $(grep -m1 '^first error' "$out" || echo "$line")"
	fi
}

# Next fresh append user of a server.
next_append_user() {
	local s=$1 n=${APPEND_NEXT[$1]}
	APPEND_NEXT[$s]=$((n + 1))
	[ "$n" -le "$APPEND_USERS" ] || bench_die "out of append users"
	echo "$n"
}

# bench_pair WORKLOAD CLIENTS SERVERS ARGS...: A B A B over the rounds.
# After moat answered "unsupported" once, it is not asked again.
bench_pair() {
	local wl=$1 clients=$2 servers=$3 r s
	shift 3
	local skip_moat=0
	wanted "$wl" || return 0
	for ((r = 1; r <= ROUNDS; r++)); do
		for s in $servers; do
			[ "$s" = moat ] && [ "$skip_moat" = 1 ] && continue
			run_one "$wl" "$clients" "$s" "$r" "$@"
			if [ "$s" = moat ] && tail -1 "$RESULTS" | grep -q 'status=unsupported'; then
				skip_moat=1
			fi
		done
	done
}

# Appends get a new user each run: the mailbox is empty at the start.
bench_append_pair() {
	local wl=$1 clients=$2 mailbox=$3 secs=$4 r s u
	wanted "$wl" || return 0
	for ((r = 1; r <= ROUNDS; r++)); do
		for s in moat dovecot; do
			u=$(next_append_user "$s")
			run_one "$wl" "$clients" "$s" "$r" -t "$secs" -u apuser%u \
				-f "$u" -S -m "$mailbox" append
		done
	done
}

bench_big() {
	local r s home
	wanted big || return 0
	for ((r = 1; r <= ROUNDS; r++)); do
		for s in moat dovecot; do
			home=$BENCH_WORK/$s/mail/biguser$r
			rm -rf "$home/Maildir"
			cp -a "$BENCH_WORK/big-pristine" "$home/Maildir"
			chown -R moat-vmail:moat-vmail "$home"
			sync
			echo 3 2>/dev/null >/proc/sys/vm/drop_caches || true
			"$IMAPLOAD" -p "${PORT[$s]}" -u "biguser$r" -f 0 -S -e "$BIG" \
				-M "$home/Maildir" big >"$BENCH_WORK/big-$s-$r.out" 2>&1 || true
			sample_rss "$s"
			{ grep '^RESULT workload=big step=' "$BENCH_WORK/big-$s-$r.out" || true; } |
				sed "s/^/big\t$BIG\t$s\t$r\t/" >>"$RESULTS"
		done
	done
}

bench_say "rounds=$ROUNDS secs=$SECS big=$BIG"
for c in $FEW; do bench_pair login "$c" "moat dovecot" -t "$SECS" login; done
for c in $FEW; do bench_pair login-hp "$c" "moat dovecot-hp" -t "$SECS" login; done
for c in $FEW; do bench_pair list "$c" "moat dovecot" -t "$SECS" list; done
for c in $FEW; do
	bench_pair status "$c" "moat dovecot" -t "$SECS" -e "$INBOX_MESSAGES" status
done
for c in $FETCH_CLIENTS; do
	bench_pair fetch-all "$c" "moat dovecot" -t "$SECS" -e "$INBOX_MESSAGES" fetch-all
done
for c in $FETCH_CLIENTS; do
	bench_pair fetch-body "$c" "moat dovecot" -t "$SECS" fetch-body
done
for c in $FETCH_CLIENTS; do bench_pair store "$c" "moat dovecot" -t "$SECS" store; done
# The shapes of issue 15 (imaptest's), one command in flight and then
# PIPE in flight per connection: 1 and 10 clients, each its own user.
# wl_for NAME DEPTH: the name a run is reported (and --only chosen) by.
wl_for() { if [ "$2" = 1 ]; then echo "$1"; else echo "$1-p$2"; fi; }
DEPTHS=1
[ "$PIPE" = 1 ] || DEPTHS="1 $PIPE"
for d in $DEPTHS; do
	for c in $FEW; do
		[ "$d" = 1 ] || bench_pair "$(wl_for list "$d")" "$c" "moat dovecot" \
			-t "$SECS" --pipeline "$d" list
		[ "$d" = 1 ] || bench_pair "$(wl_for status "$d")" "$c" "moat dovecot" \
			-t "$SECS" -e "$INBOX_MESSAGES" --pipeline "$d" status
		bench_pair "$(wl_for fetch-range "$d")" "$c" "moat dovecot" \
			-t "$SECS" -e "$INBOX_MESSAGES" --pipeline "$d" fetch-range
		bench_pair "$(wl_for fetch2 "$d")" "$c" "moat dovecot" \
			-t "$SECS" --pipeline "$d" fetch2
		bench_pair "$(wl_for store-range "$d")" "$c" "moat dovecot" \
			-t "$SECS" --pipeline "$d" store-range
	done
done
# The same shapes and the old read/flag workloads by 10 connections of ONE
# user (-S: every client is testuser1): moat serves them all in that user's
# one process, Dovecot in ten (issue 15: "10 connections of one user at
# least as fast as Dovecot on every workload"). Named NAME-1user.
ONE_USER_CLIENTS=10
bench_pair fetch-all-1user "$ONE_USER_CLIENTS" "moat dovecot" -t "$SECS" -S \
	-e "$INBOX_MESSAGES" fetch-all
bench_pair fetch-body-1user "$ONE_USER_CLIENTS" "moat dovecot" -t "$SECS" -S \
	fetch-body
bench_pair store-1user "$ONE_USER_CLIENTS" "moat dovecot" -t "$SECS" -S store
for d in $DEPTHS; do
	bench_pair "$(wl_for list "$d")-1user" "$ONE_USER_CLIENTS" "moat dovecot" \
		-t "$SECS" -S --pipeline "$d" list
	bench_pair "$(wl_for status "$d")-1user" "$ONE_USER_CLIENTS" "moat dovecot" \
		-t "$SECS" -S -e "$INBOX_MESSAGES" --pipeline "$d" status
	bench_pair "$(wl_for fetch-range "$d")-1user" "$ONE_USER_CLIENTS" \
		"moat dovecot" -t "$SECS" -S -e "$INBOX_MESSAGES" --pipeline "$d" \
		fetch-range
	bench_pair "$(wl_for fetch2 "$d")-1user" "$ONE_USER_CLIENTS" "moat dovecot" \
		-t "$SECS" -S --pipeline "$d" fetch2
	bench_pair "$(wl_for store-range "$d")-1user" "$ONE_USER_CLIENTS" \
		"moat dovecot" -t "$SECS" -S --pipeline "$d" store-range
done
bench_append_pair append 1 INBOX "$APPEND_SECS"
for c in $CONC; do
	bench_append_pair append-one-mailbox "$c" INBOX "$APPEND_SECS"
done
for c in $CONC; do
	bench_append_pair append-own-mailbox "$c" 'bench%u' "$APPEND_SECS"
done
bench_big

# ---- the table ------------------------------------------------------------
TABLE=$BENCH_WORK/table.md
python3 - "$RESULTS" "$RSS" "$ROUNDS" "$SECS" "$BIG" "$(($(date +%s) - T0))" >"$TABLE" <<'EOF'
import statistics, sys
from collections import OrderedDict, defaultdict

results, rss, rounds, secs, big, elapsed = sys.argv[1:7]
runs = OrderedDict()
for line in open(results):
    wl, clients, server, rnd, rest = line.rstrip("\n").split("\t", 4)
    kv = dict(f.split("=", 1) for f in rest.split()[1:] if "=" in f)
    key = (wl, clients) if wl != "big" else ("big: " + kv.get("step", "?"), big)
    runs.setdefault(key, defaultdict(list))[server].append(kv)

def summary(kvs, field):
    if not kvs:
        return None, "-"
    ok = [k for k in kvs if k.get("status") == "ok"]
    errs = sum(int(k.get("errors", "0")) for k in kvs)
    if any(k.get("status") in ("errors", "crashed") for k in kvs):
        vals = [float(k.get(field, 0)) for k in kvs]
        return None, f"ERRORS({errs}) {statistics.median(vals):g}"
    if not ok:
        return None, "unsupported"
    med = statistics.median(float(k[field]) for k in ok)
    return med, (f"{med:.4f} s" if field == "secs" else f"{med:,.0f}")

print(f"rounds {rounds}, {secs} s per run, big mailbox {big} messages, "
      f"total {elapsed} s\n")
print("ops/s, or seconds for the big-mailbox steps; median of the rounds. "
      "ratio = how many times faster moat is (ops/s moat/dovecot, or "
      "seconds dovecot/moat): > 1 means moat is faster.\n")
print("| workload | clients | moat | dovecot | ratio |")
print("|---|---|---|---|---|")
for (wl, clients), by in runs.items():
    field = "secs" if wl.startswith("big") else "ops_per_sec"
    other = "dovecot-hp" if "dovecot-hp" in by else "dovecot"
    m, mtxt = summary(by.get("moat", []), field)
    d, dtxt = summary(by.get(other, []), field)
    name = wl + (" (Dovecot high-perf login)" if other == "dovecot-hp" else "")
    if m and d:
        ratio = (d / m) if field == "secs" else (m / d)
        rtxt = f"{ratio:.2f}"
    else:
        rtxt = "-"
    if field == "secs":
        name += " (seconds)"
    print(f"| {name} | {clients} | {mtxt} | {dtxt} | {rtxt} |")

idle = {}
peak = defaultdict(dict)
for line in open(rss):
    f = line.rstrip("\n").split("\t")
    if f[0] == "idle":
        idle[f[1]] = int(f[2])
    else:
        server, kind, kb = f[1], f[2], int(f[3])
        peak[server][kind] = max(peak[server].get(kind, 0), kb)
print("\nMemory (kB): idle = total VmRSS of the server's processes 1 s after "
      "start; peak = highest VmHWM seen per process kind during the runs.\n")
print("| server | idle total | peak per process kind |")
print("|---|---|---|")
for server in ("moat", "dovecot", "dovecot-hp"):
    kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(peak[server].items()))
    print(f"| {server} | {idle.get(server, 0):,} | {kinds} |")
EOF
cat "$TABLE"
[ -z "$OUT" ] || cp "$TABLE" "$OUT"
