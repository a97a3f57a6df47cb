#!/usr/bin/env bash
# Black-box crash test through the real server (tests/crash/crash_imap.py):
# SIGKILL of the user's imap process at random moments of APPEND, STORE,
# EXPUNGE, COPY and MOVE loops, then a check of every folder. ./dev.sh test
# runs the default (100 kills, well under 90 s with sanitizers).
# Usage: tests/crash/run-imap.sh PREFIX [ROUNDS] [SEED]
#   PREFIX: where moat is installed (make install), e.g. build/test/local
#   longer run: tests/crash/run-imap.sh build/test/local 1000
#   repeat a failure: tests/crash/run-imap.sh PREFIX ROUNDS <seed it printed>
# Extra options go to crash_imap.py through MOAT_CRASH_IMAP_ARGS
# (e.g. "--clients 1", "--no-deliver", "-v").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(cd "${1:?usage: run-imap.sh PREFIX [ROUNDS] [SEED]}" && pwd)
rounds=${2:-100}
seed_args=()
[ $# -ge 3 ] && seed_args=(--seed "$3")
# As dev.sh sets them: leak checks are unreliable in the setuid/chrooted
# processes; any UBSan report is fatal (and fails the check of the log).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export PYTHONDONTWRITEBYTECODE=1
# shellcheck disable=SC2086 # MOAT_CRASH_IMAP_ARGS is a list of options
exec /usr/bin/python3 "$here/crash_imap.py" --prefix "$prefix" \
	--rounds "$rounds" "${seed_args[@]}" ${MOAT_CRASH_IMAP_ARGS:-}
