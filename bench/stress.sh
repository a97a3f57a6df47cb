#!/usr/bin/env bash
# bench/stress.sh [--dovecot] [--keep] PREFIX [IMAPLOAD] [-- IMAPLOAD-OPTIONS]
#
# The checked random stress workload (imapload stress, bench/stress.h)
# against a private moat from PREFIX (sbin/moat), or with --dovecot
# against a private Dovecot (Debian's dovecot-imapd; validates the
# checker: a correct server gets 0 errors). Users testuser1..testuser9,
# password "pass", empty homes. The options after -- go to imapload, e.g.
#
#   bench/stress.sh build/test/local -- -c 10 -t 20 --users 2 -r 7
#
# Exit status: imapload's (0 only without errors). On a failure the
# server's directory is kept and its log's errors are shown.
# IMAPLOAD defaults to PREFIX/../bench/imapload (the build tree next to it).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_NAME=stress
# shellcheck source=servers.sh
. "$ROOT/bench/servers.sh"

SERVER=moat
while [ $# -gt 0 ]; do
	case $1 in
	--dovecot) SERVER=dovecot; shift ;;
	--keep) BENCH_KEEP=1; shift ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--dovecot] [--keep] PREFIX [IMAPLOAD] [-- OPTIONS]" >&2; exit 2; }
PREFIX=$(cd "$1" && pwd)
shift
IMAPLOAD=$(dirname "$PREFIX")/bench/imapload
if [ $# -gt 0 ] && [ "$1" != -- ]; then
	IMAPLOAD=$1
	shift
fi
[ $# -gt 0 ] && [ "$1" = -- ] && shift
[ -x "$IMAPLOAD" ] || { bench_say "no imapload at $IMAPLOAD"; exit 1; }
if bench_is_root && ! getent passwd moat-vmail >/dev/null; then
	bench_say "system user moat-vmail is missing (./dev.sh creates it)"
	exit 1
fi

BENCH_WORK=$(mktemp -d /tmp/moat-stress.XXXXXX)
chmod 0755 "$BENCH_WORK"
trap 'bench_cleanup' EXIT
trap 'exit 130' INT TERM

DIR=$BENCH_WORK/$SERVER
mkdir -p "$DIR/mail"
USERS=()
for i in 1 2 3 4 5 6 7 8 9; do USERS+=("testuser$i"); done
bench_write_users "$DIR/users" "${USERS[@]}"
for u in "${USERS[@]}"; do bench_make_home "$DIR/mail/$u"; done
PORT=$(bench_free_port)
if [ "$SERVER" = dovecot ]; then
	bench_install_dovecot
	bench_start_dovecot "$DIR" "$PORT" stock
	LOG=$DIR/dovecot.log
else
	bench_start_moat "$PREFIX" "$DIR" "$PORT"
	LOG=$DIR/moat.log
fi
bench_say "$SERVER on 127.0.0.1:$PORT: imapload stress $*"
rc=0
"$IMAPLOAD" -p "$PORT" "$@" stress || rc=$?
if [ "$SERVER" = moat ] && grep -E 'panic|fatal|AddressSanitizer|runtime error' "$LOG" >&2; then
	bench_say "the server's log has reports (above)"
	[ "$rc" -ne 0 ] || rc=1
fi
if [ "$rc" -ne 0 ]; then
	BENCH_KEEP=1
	grep -E ': (error|warning|panic|fatal):' "$LOG" | tail -20 >&2 || true
	bench_say "FAILED (status $rc; kept $BENCH_WORK)"
	exit "$rc"
fi
bench_say "passed"
