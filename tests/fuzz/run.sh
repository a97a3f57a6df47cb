#!/usr/bin/env bash
# Builds every libFuzzer target in tests/fuzz/ with clang and runs each for
# a short time (./dev.sh test uses this; longer runs: see doc/fuzzing.md).
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET [TARGET...]]
# With TARGET names (e.g. fuzz-imap-session) only those are built and run.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
secs=${2:-15}
shift $(($# < 2 ? $# : 2))
out="$build/fuzz"
obj="$out/obj"
mkdir -p "$obj"
cd "$top"

# Every .c of a directory but programs' main files and unit tests.
srcs() {
	local dir=$1; shift
	ls "$dir"/*.c | grep -v -e '/test-[^/]*$' -e '/main\.c$' "$@" | tr '\n' ' '
}

# Sources and flags each target needs besides its own file. The sources are
# compiled once into BUILD/fuzz/obj/ (in parallel, rebuilt when they or a
# header they include change) and shared by the targets.
LIB="lib/mempool.c lib/buffer.c lib/lib.c lib/log.c lib/strfuncs.c lib/utf8.c"
# lib/ without master-service.c: the session targets stand in for master;
# and without unicode-gen.c (a build tool, lib/local.mk).
LIB_ALL=$(srcs lib -e '/master-service\.c$' -e '/unicode-gen\.c$')
INDEX_ALL=$(srcs index -e '/bench-' -e '/mailbox-writer\.c$')
MIME_ALL=$(srcs mime -e '/mime-dump\.c$')
SESSION="tests/fuzz/session-feed.c"
SCRATCH="tests/fuzz/scratch-dir.c"
declare -A deps=(
	[fuzz-imap-parser]="lib/imap-parser.c lib/imap-arg.c $LIB"
	[fuzz-unicode-casemap]="lib/unicode-casemap.c $LIB"
	[fuzz-sasl]="-I auth $(ls auth/sasl-*.c auth/password-scheme*.c auth/password-crypto.c auth/password-scram.c | tr '\n' ' ') $LIB -lcrypto -lcrypt -largon2"
	[fuzz-index-files]="index/mail-index.c index/mail-index-map.c index/mail-index-modseq.c index/mail-index-view.c index/mail-index-transaction.c index/mail-transaction-log.c index/mail-cache.c lib/crc32c.c $SCRATCH $LIB -lz"
	[fuzz-message-parser]="$MIME_ALL lib/imap-parser.c lib/imap-arg.c $LIB"
	[fuzz-login-session]="-I imap-login -I key-signer $(srcs imap-login) key-signer/keyd-protocol.c $SESSION $LIB_ALL -lssl -lcrypto -lcap -lseccomp"
	[fuzz-config]="lib/config-parser.c lib/moat-settings.c lib/settings-def.c $LIB"
	[fuzz-ipc]="-I auth auth/auth-worker-protocol.c lib/ipc.c lib/ioloop.c $LIB"
	[fuzz-auth-client]="lib/auth-client-protocol.c lib/ipc.c lib/ioloop.c $LIB"
	[fuzz-lmtp]="-I lmtp lmtp/lmtp-proto.c lmtp/lmtp-data.c $LIB"
	[fuzz-haproxy-header]="lib/haproxy-header.c $LIB"
	[fuzz-cache-text]="-I imap imap/imap-cache-text.c $LIB -lz"
	[fuzz-imap-session]="-I imap $(srcs imap) $INDEX_ALL $MIME_ALL $SESSION $SCRATCH $LIB_ALL -lz -lcap -lseccomp -lcrypto"
)
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-std=gnu11 -g -O1 $SAN -I $build -I lib -I index -I mime"
# Makefile.am's path defines (defaults only; no target uses the paths).
# The quotes are for the shell make runs the compiler with.
DEFS=""
for d in SYSCONFDIR PKGLIBEXECDIR RUNDIR STATEDIR; do
	DEFS+=" -DMOAT_$d='\"/nonexistent/moat\"'"
done
jobs=$(nproc 2>/dev/null || echo 2)

# Compile the sources (arguments ending in .c) of one target to objects
# with make, so unchanged ones are not compiled again.
compile_objs() {
	local includes=$1; shift
	[ $# -gt 0 ] || return 0
	local objs=() src
	for src in "$@"; do
		objs+=("$obj/${src%.c}.o")
	done
	# shellcheck disable=SC2086
	make -s -j"$jobs" -f - all OBJ="$obj" OBJS="${objs[*]}" \
		CFLAGS="$CFLAGS -fsanitize=fuzzer-no-link $DEFS $includes" <<'EOF'
all: $(OBJS)
$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	clang $(CFLAGS) -MMD -MP -c $< -o $@
-include $(OBJS:.o=.d)
EOF
}

build_target() {
	local name=$1 src=$2 word includes="" libs="" srcs=() objs=()
	for word in ${deps[$name]}; do
		case $word in
		*.c) srcs+=("$word"); objs+=("$obj/${word%.c}.o") ;;
		-I) includes+=" -I" ;;
		-l*) libs+=" $word" ;;
		*) includes+=" $word" ;;
		esac
	done
	compile_objs "$includes" "${srcs[@]}"
	# shellcheck disable=SC2086
	clang $CFLAGS -fsanitize=fuzzer $includes -I tests/fuzz "$src" \
		"${objs[@]}" $libs -o "$out/$name"
}

fail=0
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(ls tests/fuzz/fuzz-*.c | xargs -n1 basename | sed 's/\.c$//'))
for name in "${targets[@]}"; do
	src=tests/fuzz/$name.c
	[ -f "$src" ] || { echo "fuzz: no such target $name" >&2; exit 1; }
	[ -n "${deps[$name]:-}" ] || { echo "fuzz: no dependency list for $name" >&2; exit 1; }
	build_target "$name" "$src"
	mkdir -p "$out/$name.corpus"
	# Seeds kept in the source tree (tests/fuzz/seeds/NAME/) start the corpus.
	if [ -d "tests/fuzz/seeds/$name" ]; then
		cp -n "tests/fuzz/seeds/$name"/* "$out/$name.corpus/" 2>/dev/null || true
	fi
	# A target's dictionary (tests/fuzz/NAME.dict: its protocol's words).
	dict=()
	[ ! -f "tests/fuzz/$name.dict" ] || dict=(-dict="$top/tests/fuzz/$name.dict")
	echo "fuzz: running $name for ${secs}s"
	if ! (cd "$out" && "./$name" -max_total_time="$secs" -rss_limit_mb=1024 \
		-timeout=30 -print_final_stats=1 "${dict[@]}" "$name.corpus" \
		>"$name.log" 2>&1); then
		echo "fuzz: $name FAILED, see $out/$name.log" >&2
		tail -40 "$out/$name.log" >&2
		fail=1
	else
		grep -E '^stat::number_of_executed_units' "$out/$name.log" | sed "s/^/fuzz: $name: /"
	fi
done
exit $fail
