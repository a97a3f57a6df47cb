#!/usr/bin/env bash
# bench/sort-thread.sh: moat's SORT and THREAD on one big real Maildir
# (the TARGETS.md steps: UID THREAD REFERENCES first / second, UID SORT
# (DATE) and (SUBJECT)).
#
#   bench/sort-thread.sh [--count N] [--prefix DIR]
#
# Streams the first N messages (default 10,000) of the linux-xfs archive
# into a fresh Maildir, starts a private moat (bench/servers.sh, log_debug
# on), drops the page cache, and in one session times SELECT, UID THREAD
# REFERENCES US-ASCII ALL twice (the first parses each header once and
# fills the cache), UID SORT (DATE) and (SUBJECT), then in a second
# session the same SORTs and THREAD ORDEREDSUBJECT. Prints seconds, the
# imap process's key hits / headers parsed (its debug lines), its peak
# RssAnon during each command (heap: mapped index files are RssFile) and
# its VmHWM.
# Run as root. Everything it started is stopped by pid at exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_NAME=sort-thread
# shellcheck source=servers.sh
. "$ROOT/bench/servers.sh"

PREFIX=$ROOT/build/bench/local
COUNT=10000
CORPUS=${BENCH_CORPUS:-$ROOT/../shared/corpus/lists/linux-xfs.mbox.xz}
USER_NAME=sortuser

while [ $# -gt 0 ]; do
	case $1 in
	--count) COUNT=$2; shift ;;
	--prefix) PREFIX=$2; shift ;;
	*) sed -n '2,15p' "$0" >&2; exit 2 ;;
	esac
	shift
done
PREFIX=$(cd "$PREFIX" && pwd)
[ -x "$PREFIX/sbin/moat" ] || { bench_say "no moat in $PREFIX (make install)"; exit 1; }
[ -r "$CORPUS" ] || { bench_say "corpus $CORPUS missing"; exit 1; }
bench_is_root || { bench_say "run as root"; exit 1; }

BENCH_WORK=$(mktemp -d /tmp/moat-sort.XXXXXX)
chmod 0755 "$BENCH_WORK"
trap bench_cleanup EXIT
trap 'exit 1' INT TERM

dir=$BENCH_WORK/moat
mkdir -p "$dir/mail"
bench_write_users "$dir/users" "$USER_NAME"
home=$dir/mail/$USER_NAME
bench_make_home "$home"
bench_say "writing $COUNT messages"
n=$(python3 "$ROOT/bench/mkmaildir.py" "$CORPUS" "$COUNT" "$home/Maildir")
[ "$n" = "$COUNT" ] || bench_die "the corpus gave $n messages, not $COUNT"
chown -R moat-vmail:moat-vmail "$home"

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

sync
[ -n "${SORT_BENCH_WARM:-}" ] || echo 3 2>/dev/null >/proc/sys/vm/drop_caches || bench_say "cannot drop the page cache"
python3 - "$ROOT" "$port" "$USER_NAME" "$COUNT" "$MOAT_PID" <<'PYEOF'
import importlib.util, os, sys, threading, time
root, port, user, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
master = int(sys.argv[5])
spec = importlib.util.spec_from_file_location(
    "bmc", root + "/bench/big-mailbox-client.py")
bmc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bmc)

def imap_pids():
    """The imap processes under master (by their parent links)."""
    parent, comm = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        parent[int(d)] = int(rest[1])
        comm[int(d)] = st[st.index("(") + 1:st.rindex(")")]
    def under(p):
        while p > 1:
            if p == master:
                return True
            p = parent.get(p, 0)
        return False
    return [p for p in parent if comm[p] == "imap" and under(p)]

def status_kb(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

class Sampler:
    """Peak RssAnon (heap, not mapped files) of the imap processes while
    a command runs, polled every millisecond."""
    def __init__(self):
        self.peak, self.stop = 0, threading.Event()
        self.pids = imap_pids()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()
    def run(self):
        while not self.stop.is_set():
            for pid in self.pids:
                self.peak = max(self.peak, status_kb(pid, "RssAnon"))
            time.sleep(0.001)
    def done(self):
        self.stop.set()
        self.t.join()
        return self.peak

def session():
    s = bmc.Session(port)
    tagged, _, _ = s.command(f'LOGIN "{user}" "pass"')
    assert b" OK" in tagged, tagged
    tagged, lines, _ = s.command("SELECT INBOX")
    assert b"* %d EXISTS" % count in lines, lines[:3]
    return s

def timed(s, name, cmd):
    sampler = Sampler()
    t0 = time.perf_counter()
    tagged, lines, total = s.command(cmd)
    dt = time.perf_counter() - t0
    peak = sampler.done()
    if b" OK" not in tagged:
        sys.exit(f"{cmd}: {tagged!r}")
    print(f"{name:36s} {dt:8.4f} s  ({total} bytes, RssAnon peak {peak} kB)",
          flush=True)
    return lines

s = session()
t1 = timed(s, "UID THREAD REFERENCES first", "UID THREAD REFERENCES US-ASCII ALL")
timed(s, "UID THREAD REFERENCES second", "UID THREAD REFERENCES US-ASCII ALL")
timed(s, "UID SORT (DATE)", "UID SORT (DATE) US-ASCII ALL")
timed(s, "UID SORT (SUBJECT)", "UID SORT (SUBJECT) US-ASCII ALL")
s2 = session()
timed(s2, "new session: UID SORT (DATE)", "UID SORT (DATE) US-ASCII ALL")
timed(s2, "new session: UID SORT (SUBJECT)", "UID SORT (SUBJECT) US-ASCII ALL")
timed(s2, "UID SORT (REVERSE ARRIVAL)", "UID SORT (REVERSE ARRIVAL) US-ASCII ALL")
timed(s2, "UID SORT (ARRIVAL)", "UID SORT (ARRIVAL) US-ASCII ALL")
timed(s2, "UID SORT (SIZE)", "UID SORT (SIZE) US-ASCII ALL")
timed(s2, "UID SORT (FROM DATE)", "UID SORT (FROM DATE) US-ASCII ALL")
timed(s2, "UID THREAD ORDEREDSUBJECT", "UID THREAD ORDEREDSUBJECT US-ASCII ALL")
t2 = timed(s2, "UID THREAD REFERENCES (new session)", "UID THREAD REFERENCES US-ASCII ALL")
if t1 != t2:
    a, b = t1[0], t2[0]
    i = next(i for i in range(min(len(a), len(b))) if a[i] != b[i])
    print("THREAD answers differ at", i, a[max(0, i - 200):i + 200], b[max(0, i - 200):i + 200])
PYEOF
for pid in $(bench_tree_pids "$MOAT_PID"); do
	if [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = imap ]; then
		printf 'imap process  VmHWM %s kB, VmRSS %s kB (RssAnon %s kB, RssFile %s kB)\n' \
			"$(bench_proc_field "$pid" VmHWM)" "$(bench_proc_field "$pid" VmRSS)" \
			"$(bench_proc_field "$pid" RssAnon)" "$(bench_proc_field "$pid" RssFile)"
	fi
done
sed -n 's/.*\(\(SORT\|THREAD\): [0-9]* messages.*\)/\1/p' "$dir/moat.log"
cache=$home/Maildir/moat.index.cache
[ -f "$cache" ] && printf 'moat.index.cache                   %d bytes/message\n' \
	$(($(stat -c %s "$cache") / COUNT))
