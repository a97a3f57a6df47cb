#!/usr/bin/env bash
# Builds every libFuzzer target in tests/fuzz/ with clang and runs each for
# a short time (./dev.sh test uses this; longer runs: see doc/fuzzing.md).
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
secs=${2:-15}
out="$build/fuzz"
mkdir -p "$out"
cd "$top"

# Sources each target needs besides its own file.
LIB="lib/mempool.c lib/buffer.c lib/lib.c lib/log.c lib/strfuncs.c"
declare -A deps=(
	[fuzz-imap-parser]="lib/imap-parser.c lib/imap-arg.c $LIB"
	[fuzz-sasl]="-I auth auth/sasl-mech.c auth/sasl-plain.c auth/sasl-login.c auth/sasl-scram.c auth/sasl-cram-md5.c auth/sasl-oauth.c auth/password-scheme.c auth/password-scheme-hash.c auth/password-crypto.c auth/password-scram.c $LIB -lcrypto -lcrypt -largon2"
	[fuzz-index-files]="index/mail-index.c index/mail-index-map.c index/mail-index-view.c index/mail-index-transaction.c index/mail-transaction-log.c index/mail-cache.c $LIB -lz"
	[fuzz-message-parser]="$(ls index/message-*.c index/rfc2047.c index/rfc2231.c index/imap-envelope.c index/imap-bodystructure.c 2>/dev/null | tr '\n' ' ') lib/imap-parser.c lib/imap-arg.c $LIB"
)
fail=0
for src in tests/fuzz/fuzz-*.c; do
	name=$(basename "$src" .c)
	[ -n "${deps[$name]:-}" ] || { echo "fuzz: no dependency list for $name" >&2; exit 1; }
	# shellcheck disable=SC2086
	clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -I "$build" -I lib -I index \
		"$src" ${deps[$name]} -o "$out/$name"
	mkdir -p "$out/$name.corpus"
	echo "fuzz: running $name for ${secs}s"
	if ! (cd "$out" && "./$name" -max_total_time="$secs" -rss_limit_mb=1024 \
		-print_final_stats=1 "$name.corpus" >"$name.log" 2>&1); then
		echo "fuzz: $name FAILED, see $out/$name.log" >&2
		tail -40 "$out/$name.log" >&2
		fail=1
	else
		grep -E '^stat::number_of_executed_units' "$out/$name.log" | sed "s/^/fuzz: $name: /"
	fi
done
exit $fail
