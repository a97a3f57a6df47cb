#!/usr/bin/env bash
# Runs the crash tests (SIGKILL of a writer at random moments, then
# reopen and verify). ./dev.sh test calls this; keep it under ~60 s.
# Usage: tests/crash/run.sh BUILD_DIR [ROUNDS]
# Longer runs: tests/crash/run.sh build/x 5000; repeat a failure with
# MOAT_CRASH_SEED=<seed printed by the failing run>.
set -euo pipefail
build=$(cd "${1:?usage: run.sh BUILD_DIR [ROUNDS]}" && pwd)
rounds=${2:-200}
bin="$build/tests/crash/crash-index"
if [ ! -x "$bin" ]; then
	make -C "$build" tests/crash/crash-index >/dev/null
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Torn-tail recoveries are logged as errors on purpose; show them only
# when the run fails.
if "$bin" "$rounds" >"$log" 2>&1; then
	grep '^crash-index:' "$log"
	echo "crash: $(grep -c 'corrupted' "$log" || true) recoveries logged"
else
	grep -v 'torn record at' "$log" | tail -40 >&2
	echo "crash: crash-index FAILED" >&2
	exit 1
fi
