#!/usr/bin/env bash
# bench/sort-thread-compare.sh: moat's and Dovecot's SORT and THREAD
# answers on the same messages (not a benchmark: a correctness check).
#
#   bench/sort-thread-compare.sh [--count N] [--prefix DIR]
#
# Writes the first N messages (default 500) of the linux-xfs archive into
# one Maildir per server (same file names), starts a private moat and a
# private Dovecot (bench/servers.sh; installs dovecot-imapd if missing),
# runs each SORT/THREAD command on both, maps every message number to the
# message (Message-ID and size) and prints which answers agree; for those
# that do not, how many positions (SORT), threads (THREAD) or messages
# (SEARCH) differ and the first difference. The SEARCH keys are non-ASCII
# (i;unicode-casemap, RFC 5051). Run as root.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_NAME=sort-thread-compare
# shellcheck source=servers.sh
. "$ROOT/bench/servers.sh"

PREFIX=$ROOT/build/bench/local
COUNT=500
CORPUS=${BENCH_CORPUS:-$ROOT/../shared/corpus/lists/linux-xfs.mbox.xz}
# a worktree under wt/ has the shared directory one level further up
[ -n "${BENCH_CORPUS:-}" ] || [ -e "$CORPUS" ] ||
	CORPUS=$ROOT/../../shared/corpus/lists/linux-xfs.mbox.xz
USER_NAME=cmpuser

while [ $# -gt 0 ]; do
	case $1 in
	--count) COUNT=$2; shift ;;
	--prefix) PREFIX=$2; shift ;;
	*) sed -n '2,12p' "$0" >&2; exit 2 ;;
	esac
	shift
done
PREFIX=$(cd "$PREFIX" && pwd)
bench_is_root || { bench_say "run as root"; exit 1; }
bench_install_dovecot

BENCH_WORK=$(mktemp -d /tmp/moat-sortcmp.XXXXXX)
chmod 0755 "$BENCH_WORK"
trap bench_cleanup EXIT
trap 'exit 1' INT TERM

for s in moat dovecot; do
	mkdir -p "$BENCH_WORK/$s/mail"
	bench_write_users "$BENCH_WORK/$s/users" "$USER_NAME"
	bench_make_home "$BENCH_WORK/$s/mail/$USER_NAME"
done
python3 "$ROOT/bench/mkmaildir.py" "$CORPUS" "$COUNT" \
	"$BENCH_WORK/moat/mail/$USER_NAME/Maildir" \
	"$BENCH_WORK/dovecot/mail/$USER_NAME/Maildir" >/dev/null
for s in moat dovecot; do
	chown -R "$(bench_mail_owner)" "$BENCH_WORK/$s/mail/$USER_NAME"
done
mport=$(bench_free_port)
bench_start_moat "$PREFIX" "$BENCH_WORK/moat" "$mport"
dport=$(bench_free_port)
bench_start_dovecot "$BENCH_WORK/dovecot" "$dport" stock

python3 - "$ROOT" "$mport" "$dport" "$USER_NAME" <<'PYEOF'
import importlib.util, os, re, sys
root, mport, dport, user = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
spec = importlib.util.spec_from_file_location(
    "bmc", root + "/bench/big-mailbox-client.py")
bmc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bmc)

COMMANDS = [
    "SORT (ARRIVAL) UTF-8 ALL", "SORT (DATE) UTF-8 ALL",
    "SORT (SUBJECT) UTF-8 ALL", "SORT (FROM) UTF-8 ALL",
    "SORT (TO) UTF-8 ALL", "SORT (CC) UTF-8 ALL", "SORT (SIZE) UTF-8 ALL",
    "SORT (DISPLAYFROM) UTF-8 ALL", "SORT (DISPLAYTO) UTF-8 ALL",
    "SORT (REVERSE DATE) UTF-8 ALL", "SORT (SUBJECT REVERSE DATE) UTF-8 ALL",
    "THREAD ORDEREDSUBJECT UTF-8 ALL", "THREAD REFERENCES UTF-8 ALL",
]
# Header searches whose answers depend on the folding: accents that
# decompose, case, a no-break space, fullwidth and ligature forms.
for what, key in [("SUBJECT", "\u00e9"), ("SUBJECT", "\u00c9"),
                  ("SUBJECT", "\u00f6"), ("SUBJECT", "e\u0301"),
                  ("SUBJECT", "\u00a0"), ("SUBJECT", "\uff41"),
                  ("SUBJECT", "\u00df"), ("SUBJECT", "\u0142"),
                  ("FROM", "\u00f6"), ("FROM", "\u00fc"), ("FROM", "\u0141"),
                  ("FROM", "\u00e9"), ("FROM", "\u00e7"),
                  ("FROM", "\u00c5"), ("FROM", "\u017c")]:
    data = key.encode()
    COMMANDS.append(f"SEARCH CHARSET UTF-8 {what} {{{len(data)}+}}\r\n{key}")

def session(port):
    s = bmc.Session(port)
    tagged, _, _ = s.command(f'LOGIN "{user}" "pass"')
    assert b" OK" in tagged, tagged
    assert b" OK" in s.command("SELECT INBOX")[0]
    return s

def message_keys(s):
    """seq -> a name of the message both servers agree on: its size and
    Message-ID (the last quoted msg-id of the ENVELOPE)"""
    _, lines, _ = s.command("FETCH 1:* (RFC822.SIZE ENVELOPE)")
    keys = {}
    for line in lines:
        m = re.match(rb"\* (\d+) FETCH ", line)
        size = re.search(rb"RFC822\.SIZE (\d+)", line)
        ids = re.findall(rb'"(<[^"]*>)"\)', line)
        if m:
            keys[int(m.group(1))] = "%s/%s" % (
                size.group(1).decode() if size else "?",
                ids[-1].decode(errors="replace") if ids else "-")
    return keys

def answer(s, cmd, keys):
    tagged, lines, _ = s.command(cmd)
    word = cmd.split()[0]
    data = [l for l in lines if l.startswith(b"* " + word.encode())]
    if b" OK" not in tagged or len(data) != 1:
        return f"{tagged!r}"
    text = data[0].decode()[len(word) + 2:]
    return re.sub(r"\d+", lambda m: keys.get(int(m.group(0)), "?"), text)

def units(cmd, text):
    """What a difference is counted in: positions of a SORT, threads of
    a THREAD (its top-level lists), messages of a SEARCH (either side)."""
    if cmd.startswith("THREAD"):
        out, depth, start = [], 0, 0
        for i, ch in enumerate(text):
            if ch == "(":
                if depth == 0:
                    start = i
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    out.append(text[start:i + 1])
        return "threads", out
    return ("messages" if cmd.startswith("SEARCH") else "positions",
            text.split())

SHOW = int(os.environ.get("SORTCMP_SHOW", "3"))

def count_differ(cmd, a, b):
    what, ua = units(cmd, a)
    _, ub = units(cmd, b)
    if cmd.startswith("SORT"):
        n = sum(1 for x, y in zip(ua, ub) if x != y) + abs(len(ua) - len(ub))
        return f"{n} of {max(len(ua), len(ub))} {what} differ"
    # threads and messages only one side has
    sa, sb = set(ua), set(ub)
    only_m = [u for u in ua if u not in sb]
    only_d = [u for u in ub if u not in sa]
    text = f"{len(only_m) + len(only_d)} of {max(len(ua), len(ub))} {what} differ"
    for side, items in (("moat only", only_m), ("dovecot only", only_d)):
        for u in items[:SHOW]:
            text += f"\n    {side}: {u[:300]}"
    return text

m, d = session(mport), session(dport)
mk, dk = message_keys(m), message_keys(d)
agree = 0
for cmd in COMMANDS:
    a, b = answer(m, cmd, mk), answer(d, cmd, dk)
    shown = cmd.replace("\r\n", " ")
    if a == b:
        agree += 1
        print(f"same       {shown} ({len(units(cmd, a)[1])})")
        continue
    i = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
             min(len(a), len(b)))
    print(f"DIFFERENT  {shown}: {count_differ(cmd, a, b)}\n"
          f"  moat:    ...{a[max(0, i - 60):i + 100]}\n"
          f"  dovecot: ...{b[max(0, i - 60):i + 100]}")
print(f"{agree}/{len(COMMANDS)} answers agree")
PYEOF
