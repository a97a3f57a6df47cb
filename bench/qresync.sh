#!/usr/bin/env bash
# bench/qresync.sh: what a resync of a big mailbox costs (doc/performance.md).
#
#   bench/qresync.sh [--count N] [--changes C] [--rounds R] [--prefix DIR]
#                    [--no-dovecot] [--keep]
#
# Writes one Maildir of N small messages (default 100,000) for moat and
# for a private Dovecot (bench/servers.sh: 127.0.0.1, random ports, both
# started here and stopped by pid), lets each index it with a first
# SELECT, then another session flags C messages and expunges C others
# (default 10) and a client that cached the mailbox resyncs R times
# (default 5; medians) with bench/qresync-client.py:
#   select     SELECT alone (what opening the mailbox costs)
#   qresync    SELECT (QRESYNC (uidvalidity modseq))
#   condstore  SELECT (CONDSTORE) + UID FETCH 1:* (FLAGS) (CHANGEDSINCE) +
#              UID SEARCH ALL
#   full       SELECT + UID FETCH 1:* (FLAGS)
# and prints seconds, bytes received and lines per method and server, and
# for moat the index records the QRESYNC select looked at (its debug line
# "FETCH: ... N records looked at"). Run as root.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_NAME=qresync
# shellcheck source=servers.sh
. "$ROOT/bench/servers.sh"

PREFIX=$ROOT/build/bench/local
COUNT=100000
CHANGES=10
ROUNDS=5
DOVECOT=1
USER_NAME=syncuser

while [ $# -gt 0 ]; do
	case $1 in
	--count) COUNT=$2; shift ;;
	--changes) CHANGES=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	--prefix) PREFIX=$2; shift ;;
	--no-dovecot) DOVECOT=0 ;;
	--keep) BENCH_KEEP=1 ;;
	*) sed -n '2,20p' "$0" >&2; exit 2 ;;
	esac
	shift
done
PREFIX=$(cd "$PREFIX" && pwd)
[ -x "$PREFIX/sbin/moat" ] || { bench_say "no moat in $PREFIX (make install)"; exit 1; }
bench_is_root || { bench_say "run as root"; exit 1; }
[ "$DOVECOT" = 1 ] && bench_install_dovecot

BENCH_WORK=$(mktemp -d /tmp/moat-qresync.XXXXXX)
chmod 0755 "$BENCH_WORK"
trap bench_cleanup EXIT
trap 'exit 1' INT TERM

# qresync_maildir DIR: COUNT small messages in DIR/cur, a third \Seen
qresync_maildir() {
	python3 - "$1" "$COUNT" <<'EOF'
import os, sys
cur, count = os.path.join(sys.argv[1], "cur"), int(sys.argv[2])
for d in ("cur", "new", "tmp"):
    os.makedirs(os.path.join(sys.argv[1], d), exist_ok=True)
for i in range(1, count + 1):
    name = f"{1700000000 + i}.M{i}P1.bench:2,{'S' if i % 3 else ''}"
    with open(os.path.join(cur, name), "wb") as f:
        f.write(b"From: a@example.org\r\nSubject: message %d\r\n"
                b"Date: Mon, 1 Jan 2024 00:00:00 +0000\r\n\r\nBody.\r\n" % i)
EOF
}

# qresync_run NAME PORT: the client's figures, prefixed by NAME
qresync_run() {
	python3 "$ROOT/bench/qresync-client.py" "$2" "$USER_NAME" pass \
		"$CHANGES" "$ROUNDS" 4242 | sed "s/^/$1 /"
}

results=$BENCH_WORK/results
: >"$results"

# ---- moat ---------------------------------------------------------------------
dir=$BENCH_WORK/moat
mkdir -p "$dir/mail"
bench_write_users "$dir/users" "$USER_NAME"
bench_make_home "$dir/mail/$USER_NAME"
bench_say "writing $COUNT messages for moat"
qresync_maildir "$dir/mail/$USER_NAME/Maildir"
chown -R "$(bench_mail_owner):$(bench_mail_owner)" "$dir/mail/$USER_NAME"
port=$(bench_free_port)
bench_start_moat "$PREFIX" "$dir" "$port"
bench_stop "$MOAT_PID"
printf 'log_debug = yes\n' >>"$dir/moat.conf"
: >"$dir/moat.log"
setsid "$PREFIX/sbin/moat" -F -c "$dir/moat.conf" \
	</dev/null >"$dir/master.stderr" 2>&1 &
MOAT_PID=$!
BENCH_PIDS+=("$MOAT_PID")
bench_wait_greeting "$port" "$MOAT_PID" || bench_die "moat did not restart"
bench_say "moat: indexing and resyncing"
qresync_run moat "$port" >>"$results" || bench_die "the moat client failed"
looked=$(sed -n 's/.*FETCH: .* \([0-9]*\) records looked at.*/\1/p' "$dir/moat.log" |
	head -n 1)
bench_stop "$MOAT_PID"

# ---- Dovecot ------------------------------------------------------------------
if [ "$DOVECOT" = 1 ]; then
	dir=$BENCH_WORK/dovecot
	mkdir -p "$dir/mail"
	bench_write_users "$dir/users" "$USER_NAME"
	bench_make_home "$dir/mail/$USER_NAME"
	bench_say "writing $COUNT messages for Dovecot"
	qresync_maildir "$dir/mail/$USER_NAME/Maildir"
	chown -R "$(bench_mail_owner):$(bench_mail_owner)" "$dir/mail/$USER_NAME"
	port=$(bench_free_port)
	bench_start_dovecot "$dir" "$port" stock
	bench_say "Dovecot: indexing and resyncing"
	qresync_run dovecot "$port" >>"$results" || bench_die "the Dovecot client failed"
	bench_stop "$DOVECOT_PID"
fi

printf '%d messages, %d flag changes and %d expunges, median of %d rounds\n' \
	"$COUNT" "$CHANGES" "$CHANGES" "$ROUNDS"
printf '%-8s %-10s %10s %12s %8s\n' server method ms bytes lines
awk '{ printf "%-8s %-10s %10.2f %12d %8d\n", $1, $2, $3 * 1000, $4, $5 }' "$results"
printf 'moat: index records looked at by the QRESYNC select: %s\n' "${looked:-?}"
