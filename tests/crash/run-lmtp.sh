#!/usr/bin/env bash
# Crash test of delivery through the real server (tests/crash/crash_lmtp.py):
# SIGKILL of lmtp and of the recipients' imap processes while MTA threads
# deliver and retry; every message must end up in each recipient's INBOX
# exactly once. ./dev.sh test runs the default (60 kills).
# Usage: tests/crash/run-lmtp.sh PREFIX [KILLS] [SEED]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(cd "${1:?usage: run-lmtp.sh PREFIX [KILLS] [SEED]}" && pwd)
kills=${2:-60}
seed_args=()
[ $# -ge 3 ] && seed_args=(--seed "$3")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export PYTHONDONTWRITEBYTECODE=1
exec /usr/bin/python3 "$here/crash_lmtp.py" --prefix "$prefix" \
	--kills "$kills" "${seed_args[@]}"
