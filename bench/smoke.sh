#!/usr/bin/env bash
# bench/smoke.sh PREFIX [IMAPLOAD]: a few seconds of every imapload workload
# at 1-2 clients against a private moat from PREFIX (sbin/moat), so that the
# load generator and the server's replies never rot. Asserts correctness
# only: any error fails; "unsupported" (a command moat does not have yet)
# is reported and passes. Speed is never judged here.
# IMAPLOAD defaults to PREFIX/../bench/imapload (the build tree next to it).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_NAME=smoke
# shellcheck source=servers.sh
. "$ROOT/bench/servers.sh"

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 PREFIX [IMAPLOAD]" >&2; exit 2; }
PREFIX=$(cd "$1" && pwd)
IMAPLOAD=${2:-$(dirname "$PREFIX")/bench/imapload}
[ -x "$IMAPLOAD" ] || { bench_say "no imapload at $IMAPLOAD"; exit 1; }
[ -x "$PREFIX/sbin/moat" ] || { bench_say "no moat in $PREFIX"; exit 1; }
if bench_is_root && ! getent passwd moat-vmail >/dev/null; then
	bench_say "system user moat-vmail is missing (./dev.sh creates it)"
	exit 1
fi

MESSAGES=10
SECS=0.4
BENCH_WORK=$(mktemp -d /tmp/moat-smoke.XXXXXX)
chmod 0755 "$BENCH_WORK"
trap 'bench_cleanup' EXIT
trap 'exit 130' INT TERM

DIR=$BENCH_WORK/moat
mkdir -p "$DIR/mail"
USERS=(testuser1 testuser2 biguser apuser1 apuser2 apuser3)
bench_write_users "$DIR/users" "${USERS[@]}"
for u in "${USERS[@]}"; do bench_make_home "$DIR/mail/$u"; done
PORT=$(bench_free_port)
bench_start_moat "$PREFIX" "$DIR" "$PORT"

FAILED=0
# smoke NAME IMAPLOAD-ARGS...: one run; errors fail the smoke test.
smoke() {
	local name=$1 out line
	shift
	out=$BENCH_WORK/$name.out
	"$IMAPLOAD" -p "$PORT" "$@" >"$out" 2>&1 || true
	line=$(grep '^RESULT' "$out" | grep -v 'step=' | tail -1) || true
	case $line in
	*status=ok*)
		printf '  %-22s ok (%s ops)\n' "$name" \
			"$(sed -n 's/.* ops=\([0-9]*\).*/\1/p' <<<"$line")" >&2 ;;
	*status=unsupported*)
		printf '  %-22s unsupported: %s\n' "$name" \
			"$(sed -n 's/^first unsupported: //p' "$out")" >&2 ;;
	*)
		printf '  %-22s FAILED\n' "$name" >&2
		sed 's/^/    /' "$out" >&2
		FAILED=1 ;;
	esac
}

bench_say "moat from $PREFIX on 127.0.0.1:$PORT"
smoke populate-users -c 2 -n "$MESSAGES" --populate
smoke populate-big -u biguser -f 0 -S -n "$MESSAGES" --populate
grep -q 'status=ok' "$BENCH_WORK/populate-users.out" ||
	{ bench_say "populating failed"; exit 1; }
smoke login -c 2 -t "$SECS" login
smoke list -c 1 -t "$SECS" list
smoke status -c 2 -t "$SECS" -e "$MESSAGES" status
smoke fetch-all -c 2 -t "$SECS" -e "$MESSAGES" fetch-all
smoke fetch-body -c 2 -t "$SECS" fetch-body
smoke store -c 2 -t "$SECS" store
smoke fetch-range -c 2 -t "$SECS" -e "$MESSAGES" fetch-range
smoke fetch2 -c 2 -t "$SECS" fetch2
smoke store-range -c 2 -t "$SECS" store-range
smoke status-pipelined -c 2 -t "$SECS" -e "$MESSAGES" --pipeline 8 status
smoke list-pipelined -t "$SECS" --pipeline 8 list
smoke fetch-range-pipelined -c 2 -t "$SECS" -e "$MESSAGES" --pipeline 8 fetch-range
smoke fetch2-pipelined -c 2 -t "$SECS" --pipeline 8 fetch2
smoke store-range-pipelined -c 2 -t "$SECS" --pipeline 8 store-range
smoke append -t "$SECS" -u apuser1 -f 0 -S append
smoke append-one-mailbox -c 2 -t "$SECS" -u apuser2 -f 0 -S append
smoke append-own-mailbox -c 2 -t "$SECS" -u apuser3 -f 0 -S -m 'bench%u' append
smoke big -u biguser -f 0 -S -e "$MESSAGES" -M "$DIR/mail/biguser/Maildir" big

if [ "$FAILED" != 0 ]; then
	BENCH_KEEP=1
	bench_say "FAILED (kept $BENCH_WORK)"
	exit 1
fi
bench_say "passed"
