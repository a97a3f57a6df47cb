#!/usr/bin/env bash
# bench/first-select.sh: the cold first SELECT of a big Maildir that no
# server has indexed yet, moat and Dovecot in the same run.
#
#   bench/first-select.sh [--counts "10000 75000"] [--rounds N]
#                         [--prefix DIR] [--keep]
#
# For each count, the first N messages of the linux-xfs list archive
# (bench/mkmaildir.py, streamed, never unpacked into the tree) are written
# once as a Maildir; every round gives each server a fresh user whose
# Maildir is a hard-linked copy of it (same names, mtimes and sizes; no
# moat or Dovecot file), drops the page cache (dentries and inodes too),
# and times SELECT INBOX twice in one session (bench/big-mailbox-client.py):
# the first builds the index, the second re-opens it. Servers alternate
# moat, Dovecot, moat, ... (bench/servers.sh: private instances on
# 127.0.0.1, random ports, fsync as shipped, stopped by pid). Prints the
# median of the rounds and the ratio Dovecot/moat (> 1: moat faster).
# Run as root (privilege separation, drop_caches).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_NAME=first-select
# shellcheck source=servers.sh
. "$ROOT/bench/servers.sh"

PREFIX=$ROOT/build/bench/local
COUNTS="10000 75000"
ROUNDS=3
CORPUS=${BENCH_CORPUS:-$ROOT/../shared/corpus/lists/linux-xfs.mbox.xz}

while [ $# -gt 0 ]; do
	case $1 in
	--counts) COUNTS=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	--prefix) PREFIX=$2; shift ;;
	--keep) BENCH_KEEP=1 ;;
	*) sed -n '2,17p' "$0" >&2; exit 2 ;;
	esac
	shift
done
PREFIX=$(cd "$PREFIX" && pwd)
[ -x "$PREFIX/sbin/moat" ] || { bench_say "no moat in $PREFIX (make install)"; exit 1; }
[ -r "$CORPUS" ] || { bench_say "corpus $CORPUS missing"; exit 1; }
bench_is_root || { bench_say "run as root"; exit 1; }

BENCH_WORK=$(mktemp -d /tmp/moat-first-select.XXXXXX)
chmod 0755 "$BENCH_WORK"
trap bench_cleanup EXIT
trap 'exit 1' INT TERM
RESULTS=$BENCH_WORK/results.tsv
: >"$RESULTS"

bench_install_dovecot
users=()
for n in $COUNTS; do
	for ((r = 1; r <= ROUNDS; r++)); do users+=("fs${n}r$r"); done
done
declare -A PORT PID
for s in moat dovecot; do
	mkdir -p "$BENCH_WORK/$s/mail"
	bench_write_users "$BENCH_WORK/$s/users" "${users[@]}"
	PORT[$s]=$(bench_free_port)
done
bench_start_moat "$PREFIX" "$BENCH_WORK/moat" "${PORT[moat]}"
PID[moat]=$MOAT_PID
bench_start_dovecot "$BENCH_WORK/dovecot" "${PORT[dovecot]}" stock
PID[dovecot]=$DOVECOT_PID

for n in $COUNTS; do
	pristine=$BENCH_WORK/pristine-$n
	bench_say "writing $n messages"
	got=$(python3 "$ROOT/bench/mkmaildir.py" "$CORPUS" "$n" "$pristine")
	[ "$got" = "$n" ] || bench_die "the corpus gave $got messages, not $n"
	for ((r = 1; r <= ROUNDS; r++)); do
		for s in moat dovecot; do
			u=fs${n}r$r
			home=$BENCH_WORK/$s/mail/$u
			bench_make_home "$home"
			rm -rf "$home/Maildir"
			cp -al "$pristine" "$home/Maildir"
			chown -R "$(bench_mail_owner)":"$(bench_mail_owner)" "$home"
			sync
			echo 3 2>/dev/null >/proc/sys/vm/drop_caches ||
				bench_say "cannot drop the page cache"
			out=$BENCH_WORK/$s-$u.out
			python3 "$ROOT/bench/big-mailbox-client.py" "${PORT[$s]}" \
				"$u" pass "$n" select select >"$out" ||
				bench_die "$s: the client failed ($(cat "$out"))"
			printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$s" "$r" \
				"$(awk '$1 == "select1_s" { print $2 }' "$out")" \
				"$(awk '$1 == "select2_s" { print $2 }' "$out")" >>"$RESULTS"
			# the next user's copy must not wait on this one's files
			rm -rf "$home/Maildir"
		done
	done
	rm -rf "$pristine"
done

python3 - "$RESULTS" "$ROUNDS" <<'EOF'
import statistics, sys

rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
rounds = sys.argv[2]
res = {}
for n, s, r, first, second in rows:
    res.setdefault((int(n), s), []).append((float(first), float(second)))
print(f"first SELECT of a Maildir nobody indexed (page cache dropped), then "
      f"a second SELECT; median of {rounds} rounds, seconds; ratio = "
      f"Dovecot/moat (> 1: moat faster)")
print()
print("| messages | step | moat | dovecot | ratio |")
print("|---|---|---|---|---|")
for n in sorted({k[0] for k in res}):
    for i, step in enumerate(("first SELECT", "second SELECT")):
        m = statistics.median(x[i] for x in res[(n, "moat")])
        d = statistics.median(x[i] for x in res[(n, "dovecot")])
        print(f"| {n} | {step} | {m:.4f} s | {d:.4f} s | "
              f"{d / m if m > 0 else 0:.2f} |")
print()
print("rounds (messages, server, round, first, second):")
for row in rows:
    print("  " + " ".join(row))
EOF
