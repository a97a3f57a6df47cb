#!/usr/bin/env bash
# bench/big-mailbox.sh: moat on one big real Maildir (issue 3's figures).
#
#   bench/big-mailbox.sh [--full] [--count N] [--prefix DIR] [--keep]
#
# Streams the first N messages (default 10,000; --full: all 82,190) of the
# linux-xfs list archive (xz -dc, never unpacked into the tree) into a fresh
# Maildir of one user, starts a private moat (bench/servers.sh, 127.0.0.1,
# random port, log_debug on) and prints, in one session:
#   - first SELECT (no index yet: builds it), page cache dropped first
#   - second SELECT (re-open, nothing changed)
#   - SELECT after renaming 1% of the files in cur/ (a flag change, as
#     mutt would do it: another client; page cache warm)
#   - FETCH 1:* (UID FLAGS ENVELOPE INTERNALDATE BODYSTRUCTURE) the first
#     time (parses the files, fills the cache) and the second time (from
#     the cache), each with the message files it opened (from the imap
#     process's debug line "FETCH: ... files opened")
#   - index + cache bytes per message (moat.index* files / N)
#   - the imap process's VmHWM and VmRSS
# Run as root (privilege separation). Everything it started is stopped by
# pid at exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_NAME=big-mailbox
# shellcheck source=servers.sh
. "$ROOT/bench/servers.sh"

PREFIX=$ROOT/build/bench/local
COUNT=10000
FULL_COUNT=82190
CORPUS=${BENCH_CORPUS:-$ROOT/../shared/corpus/lists/linux-xfs.mbox.xz}
USER_NAME=biguser

while [ $# -gt 0 ]; do
	case $1 in
	--full) COUNT=$FULL_COUNT ;;
	--count) COUNT=$2; shift ;;
	--prefix) PREFIX=$2; shift ;;
	--keep) BENCH_KEEP=1 ;;
	*) sed -n '2,20p' "$0" >&2; exit 2 ;;
	esac
	shift
done
PREFIX=$(cd "$PREFIX" && pwd)
[ -x "$PREFIX/sbin/moat" ] || { bench_say "no moat in $PREFIX (make install)"; exit 1; }
[ -r "$CORPUS" ] || { bench_say "corpus $CORPUS missing"; exit 1; }
bench_is_root || { bench_say "run as root"; exit 1; }

BENCH_WORK=$(mktemp -d /tmp/moat-big.XXXXXX)
chmod 0755 "$BENCH_WORK"
trap bench_cleanup EXIT
trap 'exit 1' INT TERM

# ---- the Maildir ------------------------------------------------------------
dir=$BENCH_WORK/moat
mkdir -p "$dir/mail"
bench_write_users "$dir/users" "$USER_NAME"
home=$dir/mail/$USER_NAME
bench_make_home "$home"
bench_say "writing $COUNT messages"
n=$(python3 "$ROOT/bench/mkmaildir.py" "$CORPUS" "$COUNT" "$home/Maildir")
[ "$n" = "$COUNT" ] || bench_die "the corpus gave $n messages, not $COUNT"
chown -R moat-vmail:moat-vmail "$home"
maildir_bytes=$(du -sb "$home/Maildir/cur" | cut -f1)

# ---- the server: bench_start_moat's config plus log_debug -------------------
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

# ---- the session --------------------------------------------------------------
sync
echo 3 2>/dev/null >/proc/sys/vm/drop_caches || bench_say "cannot drop the page cache"
out=$BENCH_WORK/client.out
fifo=$BENCH_WORK/client.in
mkfifo "$fifo"
python3 "$ROOT/bench/big-mailbox-client.py" "$port" "$USER_NAME" pass "$COUNT" \
	select select wait select wait fetch fetch wait <"$fifo" >"$out" &
client=$!
exec 3>"$fifo"

# big_wait_client N: until the client printed its Nth "waiting"
big_wait_client() {
	local i
	for ((i = 0; i < 12000; i++)); do
		[ "$(grep -c '^waiting' "$out")" -ge "$1" ] && return 0
		kill -0 "$client" 2>/dev/null || break
		sleep 0.05
	done
	cat "$out" >&2
	bench_die "the client failed"
}
# big_imap_mem: "VmHWM VmRSS RssAnon RssFile" (kB) of the user's imap
# process (RssFile: mostly the mapped index and cache files)
big_imap_mem() {
	local pid
	for pid in $(bench_tree_pids "$MOAT_PID"); do
		if [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = imap ]; then
			echo "$(bench_proc_field "$pid" VmHWM) $(bench_proc_field "$pid" VmRSS)" \
				"$(bench_proc_field "$pid" RssAnon) $(bench_proc_field "$pid" RssFile)"
			return
		fi
	done
	echo "? ? ? ?"
}
big_wait_client 1
read -r hwm_sel rss_sel anon_sel file_sel < <(big_imap_mem)
# another client changes \Seen of 1% of the messages
renamed=$(python3 "$ROOT/bench/mkmaildir.py" --flip-seen "$home/Maildir" 100)
echo >&3
big_wait_client 2
echo >&3
big_wait_client 3
read -r hwm rss anon file < <(big_imap_mem)
echo >&3
exec 3>&-
wait "$client" || bench_die "the client failed"

index_bytes=$(find "$home/Maildir" -maxdepth 1 -name 'moat.index*' -type f \
	-printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
file_sizes=$(cd "$home/Maildir" && for f in moat.index moat.index.log moat.index.log.2 \
	moat.index.cache; do [ -f "$f" ] && printf '%s %d/msg, ' "$f" \
	$(($(stat -c %s "$f") / COUNT)); done)
# the imap process's "FETCH: N messages, M message files opened" lines
mapfile -t opened < <(sed -n 's/.*FETCH: [0-9]* messages, \([0-9]*\) message files opened.*/\1/p' \
	"$dir/moat.log")

val() { awk -v k="$1" '$1 == k { print $2 }' "$out"; }
printf 'messages                       %d (%d MB of Maildir files)\n' \
	"$COUNT" $((maildir_bytes / 1000000))
printf 'first SELECT (builds index)    %s s\n' "$(val select1_s)"
printf 'second SELECT                  %s s\n' "$(val select2_s)"
printf 'SELECT after renaming 1%% in cur/ %s s (%d files renamed)\n' \
	"$(val select3_s)" "$renamed"
printf 'FETCH 1:* first (fills cache)  %s s, %s message files opened, %s bytes\n' \
	"$(val fetch1_s)" "${opened[0]:-?}" "$(val fetch1_bytes)"
printf 'FETCH 1:* second (from cache)  %s s, %s message files opened, %s bytes\n' \
	"$(val fetch2_s)" "${opened[1]:-?}" "$(val fetch2_bytes)"
printf 'index+cache on disk            %d bytes = %d bytes/message\n' \
	"$index_bytes" $((index_bytes / COUNT))
printf '  by file                      %s\n' "${file_sizes%, }"
printf 'imap process after SELECTs     VmHWM %s kB, VmRSS %s kB (anon %s, file %s)\n' \
	"$hwm_sel" "$rss_sel" "$anon_sel" "$file_sel"
printf 'imap process after FETCHes     VmHWM %s kB, VmRSS %s kB (anon %s, file %s)\n' \
	"$hwm" "$rss" "$anon" "$file"
if [ "${opened[1]:-x}" != 0 ]; then
	bench_say "the second FETCH opened message files"
	exit 1
fi
