#!/usr/bin/env bash
# dev.sh: set up, build and run moat, or build and test it, on Debian 12.
#
#   ./dev.sh run [--users N]   build into ./local, configure, run in the foreground
#   ./dev.sh test              sanitizer build in build/test, make check, protocol tests
#   ./dev.sh build             only install the dependencies and build build/run
#
# Run as root: it installs missing packages with apt-get and creates the system
# users moat-login, moat-auth and moat-vmail. Running it again is harmless.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")" && pwd)
PREFIX=$ROOT/local
RUN_BUILD=$ROOT/build/run
TEST_BUILD=$ROOT/build/test
TEST_PREFIX=$TEST_BUILD/local
DEMO_PORT=1143
DEMO_TLS_PORT=1993
DEMO_LMTP_PORT=1024

PACKAGES=(build-essential autoconf automake pkg-config libssl-dev libcap-dev
	libseccomp-dev  # lib/seccomp-*.c: the per-process syscall allowlists
	libpam0g-dev zlib1g-dev libcrypt-dev libargon2-dev openssl python3-pytest
	clang libclang-rt-14-dev socat
	unicode-data  # UnicodeData.txt: lib/unicode-gen builds i;unicode-casemap's tables
	argon2 whois  # argon2, mkpasswd: hash vectors in auth/ tests
	isync offlineimap3 neomutt  # real clients in tests/protocol/test_clients.py
	postfix  # a private instance delivers to moat in tests/protocol/test_postfix.py
	dovecot-imapd  # reference for tests/protocol/test_mime_dovecot.py (private instance only)
	haproxy  # a private instance sends PROXY headers in tests/protocol/test_haproxy.py
	strace  # tests/protocol/test_store_pipelined.py: the order of the imap process's syncs and writes
	debhelper lintian iproute2)  # tests/pkg/run.sh: builds, checks and installs the Debian package
# node and npm for imapflow (tests/protocol/test_imapflow.py), from Debian
# only where no node is installed: a node that bundles its own npm (such
# as NodeSource's) conflicts with Debian's npm package.
NODE_PACKAGES=(nodejs npm)
SYSTEM_USERS=(moat-login moat-auth moat-lmtp moat-vmail)
# The client library tests/protocol/test_imapflow.py drives (from npm,
# into $TEST_BUILD/node; a pinned version, so runs compare).
IMAPFLOW_VERSION=2.10.2

say() { printf 'dev.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

usage() {
	cat >&2 <<EOF
usage: $0 run [--users N]   build, set up $PREFIX and run moat in the foreground
       $0 test              sanitizer build, make check and the protocol tests
       $0 build             install dependencies and build into build/run only
EOF
	exit 2
}

is_root() { [ "$(id -u)" -eq 0 ]; }

# Installs only the packages that are missing; apt-get update once, first.
install_deps() {
	local missing=() pkg status wanted=("${PACKAGES[@]}")
	command -v npm >/dev/null 2>&1 || wanted+=("${NODE_PACKAGES[@]}")
	for pkg in "${wanted[@]}"; do
		status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
		[ "$status" = installed ] || missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	is_root || die "missing packages (${missing[*]}); run as root to install them"
	say "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Postfix without a system configuration: the tests run private
	# instances, the machine's mail setup stays as it was
	echo "postfix postfix/main_mailer_type select No configuration" |
		debconf-set-selections
	apt-get update -q
	# Dovecot must never run as the system service (the tests start a
	# private one): while installing, a policy-rc.d keeps packages from
	# starting services, unless the system already has one.
	local policy=/usr/sbin/policy-rc.d own_policy=no
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
		own_policy=yes
	fi
	local rc=0
	apt-get install -y -q --no-install-recommends "${missing[@]}" || rc=$?
	[ "$own_policy" = yes ] && rm -f "$policy"
	return "$rc"
}

create_system_users() {
	local u
	if ! is_root; then
		say "not root: skipping creation of ${SYSTEM_USERS[*]}"
		return 0
	fi
	for u in "${SYSTEM_USERS[@]}"; do
		getent passwd "$u" >/dev/null && continue
		say "creating system user $u"
		useradd --system --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin --user-group "$u"
	done
}

# ./configure is regenerated when it is missing or older than its inputs.
need_autogen() {
	local f
	[ -x "$ROOT/configure" ] || return 0
	for f in "$ROOT/configure.ac" "$ROOT/Makefile.am" "$ROOT"/*/local.mk \
		 "$ROOT"/*/*/local.mk "$ROOT"/m4/*.m4; do
		[ -e "$f" ] || continue
		[ "$f" -nt "$ROOT/configure" ] && return 0
	done
	return 1
}

autogen() {
	if need_autogen; then
		say "running autogen.sh"
		(cd "$ROOT" && ./autogen.sh)
	fi
	[ ! -e "$ROOT/config.status" ] ||
		die "the source tree is configured in place; run 'make distclean' in $ROOT (use ./dev.sh only)"
}

# build_tree DIR JOBS CONFIGURE-ARGS...: VPATH build and install.
build_tree() {
	local dir=$1 jobs=$2
	shift 2
	mkdir -p "$dir"
	local stamp=$dir/.dev-configure-args
	local args="$*"
	if [ ! -e "$dir/config.status" ] || [ "$ROOT/configure" -nt "$dir/config.status" ] ||
	   [ "$(cat "$stamp" 2>/dev/null)" != "$args" ]; then
		say "configuring $dir"
		(cd "$dir" && "$ROOT/configure" "$@") >"$dir/configure.out" 2>&1 || {
			cat "$dir/configure.out" >&2
			die "configure failed in $dir"
		}
		printf '%s' "$args" >"$stamp"
	fi
	say "building in $dir"
	make -C "$dir" -s -j"$jobs"
	make -C "$dir" -s install >/dev/null
}

# The password hash of the passwd-file entries.
hash_password() {
	openssl passwd -6 "$1"
}

# Writes $PREFIX/etc/moat/users: demo/demo, plus testuser1..N/pass.
write_users() {
	local n=$1 users=$PREFIX/etc/moat/users tmp i
	mkdir -p "$PREFIX/etc/moat"
	tmp=$(mktemp "$users.XXXXXX")
	if [ -e "$users" ]; then
		grep -Ev '^testuser[0-9]+:' "$users" >"$tmp" || true
	fi
	grep -q '^demo:' "$tmp" ||
		printf 'demo:{SHA512-CRYPT}%s::::::\n' "$(hash_password demo)" >>"$tmp"
	for ((i = 1; i <= n; i++)); do
		printf 'testuser%d:{SHA512-CRYPT}%s::::::\n' "$i" "$(hash_password pass)" >>"$tmp"
	done
	if is_root; then
		chown root:moat-auth "$tmp"
		chmod 0640 "$tmp"
	else
		chmod 0600 "$tmp"
	fi
	mv -f "$tmp" "$users"
}

# A self-signed certificate for 127.0.0.1/localhost; the key is root-only
# (master reads it; imap-login gets it from master, doc/security.md).
make_cert() {
	local dir=$PREFIX/etc/moat
	[ -e "$dir/key.pem" ] && [ -e "$dir/cert.pem" ] && return 0
	mkdir -p "$dir"
	say "generating a self-signed certificate in $dir"
	(umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 825 \
		-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost \
		>/dev/null 2>&1) || die "openssl req failed"
	chmod 0600 "$dir/key.pem"
	chmod 0644 "$dir/cert.pem"
}

write_config() {
	local conf=$PREFIX/etc/moat/moat.conf first_uid
	[ -e "$conf" ] && return 0
	if is_root; then
		first_uid=$(id -u moat-vmail)
	else
		first_uid=0
	fi
	mkdir -p "$PREFIX/etc/moat"
	say "writing $conf"
	cat >"$conf" <<EOF
# moat.conf written by dev.sh for local development (see doc/configuration.md).
base_dir = $PREFIX/var/run/moat
protocols = imap lmtp
# Empty: log to the terminal (moat runs in the foreground).
log_path = ""
default_login_user = moat-login
default_internal_user = moat-auth

mail_location = maildir:~/Maildir
mail_uid = moat-vmail
mail_gid = moat-vmail
first_valid_uid = $first_uid

# '<': master reads the files (the key stays readable by root only).
ssl_cert = <$PREFIX/etc/moat/cert.pem
ssl_key = <$PREFIX/etc/moat/key.pem

# Mail delivery (doc/configuration.md shows the Postfix side). The
# passwd-file names users without a domain: demo@localhost is "demo".
lmtp_username_format = %Ln
service lmtp {
  unix_listener lmtp {
    mode = 0666
  }
  inet_listener lmtp {
    address = 127.0.0.1
    port = $DEMO_LMTP_PORT
  }
}

service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = $DEMO_PORT
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = $DEMO_TLS_PORT
    ssl = yes
  }
}

passdb {
  driver = passwd-file
  args = $PREFIX/etc/moat/users
}
userdb {
  driver = passwd-file
  args = $PREFIX/etc/moat/users
  default_fields = uid=moat-vmail gid=moat-vmail home=$PREFIX/var/mail/%u
}
EOF
}

# Mail homes with an empty Maildir for every user in the users file.
make_homes() {
	local user
	mkdir -p "$PREFIX/var/mail" "$PREFIX/var/run/moat"
	chmod 0755 "$PREFIX/var" "$PREFIX/var/run" "$PREFIX/var/run/moat"
	while IFS=: read -r user _; do
		[ -n "$user" ] || continue
		case $user in \#*) continue ;; esac
		mkdir -p "$PREFIX/var/mail/$user/Maildir/"{cur,new,tmp}
		chmod 0700 "$PREFIX/var/mail/$user"
	done <"$PREFIX/etc/moat/users"
	if is_root; then
		chown moat-vmail:moat-vmail "$PREFIX/var/mail"
		chown -R moat-vmail:moat-vmail "$PREFIX/var/mail"/*
	fi
}

# Every directory above the mail homes must be traversable by moat-vmail.
check_traversal() {
	local d=$PREFIX
	while [ "$d" != / ]; do
		if [ "$(( 0$(stat -c %a "$d") & 1 ))" -eq 0 ] 2>/dev/null; then
			say "warning: $d is not world-searchable; moat-vmail cannot reach the mail homes"
		fi
		d=$(dirname "$d")
	done
}

cmd_build() {
	install_deps
	create_system_users
	autogen
	build_tree "$RUN_BUILD" "$(nproc)" --prefix="$PREFIX" --enable-werror
}

cmd_run() {
	local users=0
	while [ $# -gt 0 ]; do
		case $1 in
		--users) [ $# -ge 2 ] || usage; users=$2; shift 2 ;;
		--users=*) users=${1#--users=}; shift ;;
		*) usage ;;
		esac
	done
	[[ $users =~ ^[0-9]+$ ]] || die "--users needs a number"
	cmd_build
	make_cert
	write_config
	write_users "$users"
	make_homes
	check_traversal
	cat >&2 <<EOF

moat is starting in the foreground (Ctrl-C stops it).
  config: $PREFIX/etc/moat/moat.conf
  users:  $PREFIX/etc/moat/users (demo/demo$( [ "$users" -gt 0 ] && printf ', testuser1..%s/pass' "$users"))
  mail:   $PREFIX/var/mail/<user>/Maildir
Connect from another terminal:
  socat - TCP:127.0.0.1:$DEMO_PORT,crlf     (or: nc -C / telnet 127.0.0.1 $DEMO_PORT)
  openssl s_client -quiet -crlf -connect 127.0.0.1:$DEMO_TLS_PORT        (implicit TLS)
  openssl s_client -quiet -crlf -starttls imap -connect 127.0.0.1:$DEMO_PORT
  a LOGIN demo demo
  b SELECT INBOX
  c LOGOUT
Deliver mail by LMTP (e.g. Postfix: mailbox_transport = lmtp:unix:$PREFIX/var/run/moat/lmtp):
  LMTP on 127.0.0.1:$DEMO_LMTP_PORT and on $PREFIX/var/run/moat/lmtp
  (with swaks: swaks --to demo@localhost --server 127.0.0.1:$DEMO_LMTP_PORT --protocol LMTP)

EOF
	exec "$PREFIX/sbin/moat" -F -c "$PREFIX/etc/moat/moat.conf"
}

# imapflow for the protocol tests, into the build (never globally).
install_node_clients() {
	local dir=$TEST_BUILD/node
	if grep -qs "\"version\": \"$IMAPFLOW_VERSION\"" \
		"$dir/node_modules/imapflow/package.json"; then
		return 0
	fi
	say "installing imapflow $IMAPFLOW_VERSION (npm) into $dir"
	mkdir -p "$dir"
	npm install --no-audit --no-fund --no-save --prefix "$dir" \
		"imapflow@$IMAPFLOW_VERSION" >"$dir/npm.out" 2>&1 || {
		cat "$dir/npm.out" >&2
		die "npm install imapflow failed"
	}
}

cmd_test() {
	install_deps
	create_system_users
	autogen
	build_tree "$TEST_BUILD" 2 --prefix="$TEST_PREFIX" --enable-werror --enable-sanitizers
	install_node_clients
	say "make check"
	if ! make -C "$TEST_BUILD" -s -j2 check >"$TEST_BUILD/check.out" 2>&1; then
		cat "$TEST_BUILD/check.out" >&2
		[ -e "$TEST_BUILD/test-suite.log" ] && cat "$TEST_BUILD/test-suite.log" >&2
		die "make check failed"
	fi
	grep -E '^# (TOTAL|PASS|FAIL|ERROR)' "$TEST_BUILD/check.out" >&2 || true
	say "fuzz targets (short runs; see doc/fuzzing.md for long ones)"
	"$ROOT/tests/fuzz/run.sh" "$TEST_BUILD" "${MOAT_FUZZ_SECONDS:-10}" >&2 ||
		die "a fuzz target failed"
	say "crash tests (SIGKILL of index writers)"
	"$ROOT/tests/crash/run.sh" "$TEST_BUILD" >&2 || die "a crash test failed"
	say "crash test through the server (SIGKILL of the user's imap process)"
	"$ROOT/tests/crash/run-imap.sh" "$TEST_PREFIX" >&2 || die "the imap crash test failed"
	say "the same with four sessions (kills inside group commits of APPENDs)"
	MOAT_CRASH_IMAP_ARGS="--clients 4" "$ROOT/tests/crash/run-imap.sh" \
		"$TEST_PREFIX" 40 >&2 || die "the imap crash test (4 sessions) failed"
	say "crash test of delivery (SIGKILL of lmtp and imap while an MTA retries)"
	"$ROOT/tests/crash/run-lmtp.sh" "$TEST_PREFIX" >&2 || die "the delivery crash test failed"
	say "benchmark smoke run (correctness of bench/, never speed)"
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$ROOT/bench/smoke.sh" "$TEST_PREFIX" "$TEST_BUILD/bench/imapload" >&2 ||
		die "the benchmark smoke run failed"
	# A different seed each run (printed): the checker's model holds for
	# any timing, so a failure is a bug, and the seed repeats the choices.
	local seed=${MOAT_STRESS_SEED:-$((RANDOM * 32768 + RANDOM))}
	say "stress run (checked random workload, seed $seed; bench/stress.sh)"
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$ROOT/bench/stress.sh" "$TEST_PREFIX" "$TEST_BUILD/bench/imapload" -- \
		-c 10 --users 2 -t "${MOAT_STRESS_SECONDS:-20}" -r "$seed" >&2 ||
		die "the stress run failed (repeat: MOAT_STRESS_SEED=$seed)"
	say "Debian package and systemd unit (tests/pkg/run.sh)"
	"$ROOT/tests/pkg/run.sh" "$TEST_BUILD/pkg" >&2 || die "the package test failed"
	say "protocol tests"
	# Leak checking is off for the servers: chroot and setuid processes make
	# LeakSanitizer unreliable. Any sanitizer report fails the test that saw it.
	local rc=0
	cd "$ROOT"
	ASAN_OPTIONS=detect_leaks=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	MOAT_PREFIX=$TEST_PREFIX PYTHONDONTWRITEBYTECODE=1 \
		/usr/bin/python3 -m pytest -q tests/protocol || rc=$?
	# pytest's summary is the last line printed; 5 = no tests ran, a failure too.
	[ "$rc" -eq 5 ] && exit 1
	exit "$rc"
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
run) cmd_run "$@" ;;
test) [ $# -eq 0 ] || usage; cmd_test ;;
build) [ $# -eq 0 ] || usage; cmd_build ;;
*) usage ;;
esac
