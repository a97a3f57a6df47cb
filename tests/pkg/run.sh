#!/usr/bin/env bash
# tests/pkg/run.sh: the Debian package and the systemd unit, end to end.
#
#   tests/pkg/run.sh [WORKDIR]     (root; default WORKDIR build/pkg)
#
# Builds the package from a copy of the tree (dpkg-buildpackage -us -uc -b,
# without its make check: dev.sh has run that), runs lintian (no error, no
# warning), then installs, runs and purges it inside a throwaway root: a
# private mount namespace where /etc, /usr and /var are overlays whose
# upper layers live on a tmpfs, with its own network (loopback only) and
# pid namespace. Everything the package does to the system vanishes with
# the namespace; the script checks afterwards that the machine still has
# no moat package and no /etc/moat. See doc/packaging.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
say() { printf 'tests/pkg: %s\n' "$*" >&2; }
die() { say "FAIL: $*"; exit 1; }

# ---- inside the namespace ---------------------------------------------------

# The throwaway root: overlays over the directories dpkg and the
# maintainer scripts write, a fresh /run (also for this script's own
# files), loopback up. /tmp stays the host's: the tree and the package may
# live there (a clone in /tmp), and nothing of the install writes to it.
inner_setup() {
	local ov=$1 d
	mount -t tmpfs -o mode=0700 moat-pkg-test "$ov"
	for d in etc usr var; do
		mkdir -p "$ov/$d.upper" "$ov/$d.work"
		mount -t overlay overlay \
			-o "lowerdir=/$d,upperdir=$ov/$d.upper,workdir=$ov/$d.work" "/$d"
	done
	mount -t tmpfs -o mode=0755 moat-pkg-run /run
	ip link set lo up
	# Nothing may start a service here (deb-systemd-invoke finds no
	# systemd anyway; this covers invoke-rc.d).
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 0755 /usr/sbin/policy-rc.d
}

check() {
	local what=$1
	shift
	"$@" || die "$what"
	say "ok: $what"
}

# Mode, owner and group of a file, as "0640 root moat-auth".
stat_of() { stat -c '%#a %U %G' "$1"; }

inner_installed_checks() {
	check "users created" getent passwd moat-login moat-auth moat-lmtp moat-vmail >/dev/null
	check "moat.conf is a conffile" \
		sh -c "dpkg-query -W -f='\${Conffiles}\n' moat | grep -q '^ /etc/moat/moat.conf '"
	check "logrotate snippet is a conffile" \
		sh -c "dpkg-query -W -f='\${Conffiles}\n' moat | grep -q '^ /etc/logrotate.d/moat '"
	check "sysusers.d file" test -s /usr/lib/sysusers.d/moat.conf
	check "self-signed certificate" \
		sh -c 'openssl x509 -in /etc/moat/ssl/cert.pem -noout -checkend 86400 >/dev/null'
	check "key readable by root only" test "$(stat_of /etc/moat/ssl/key.pem)" = "0600 root root"
	check "users file for auth" test "$(stat_of /etc/moat/users)" = "0640 root moat-auth"
	check "mail root" test "$(stat_of /var/lib/moat/mail)" = "0750 moat-vmail moat-vmail"
	check "service enabled" \
		test -L /etc/systemd/system/multi-user.target.wants/moat.service
	local out
	out=$(/usr/sbin/moat -c /etc/moat/moat.conf -n 2>&1) ||
		die "moat -n failed: $out"
	case $out in *error*|*warning*) die "moat -n complained: $out" ;; esac
	say "ok: moat -c /etc/moat/moat.conf -n runs clean"
	out=$(systemd-analyze verify /lib/systemd/system/moat.service 2>&1) ||
		die "systemd-analyze verify: $out"
	[ -z "$out" ] || die "systemd-analyze verify complained: $out"
	say "ok: systemd-analyze verify moat.service"
	out=$(systemd-analyze verify /lib/systemd/system/moat.socket 2>&1) ||
		die "systemd-analyze verify moat.socket: $out"
	[ -z "$out" ] || die "systemd-analyze verify moat.socket complained: $out"
	check "moat.socket installed but not enabled" \
		test ! -e /etc/systemd/system/sockets.target.wants/moat.socket
	say "ok: systemd-analyze verify moat.socket"
	if command -v logrotate >/dev/null; then
		check "logrotate accepts the snippet" \
			logrotate -d /etc/logrotate.d/moat >/dev/null 2>&1
	fi
}

# Runs the installed server as the unit would (moat -F, $NOTIFY_SOCKET),
# waits for READY=1, logs in over TLS on 993 and reads the mailbox that
# holds the test message, then stops it (STOPPING=1, exit 0).
inner_run_server() {
	local user=pkgtest home=/var/lib/moat/mail/pkgtest
	printf '%s:{SHA512-CRYPT}%s::::::\n' "$user" "$(openssl passwd -6 pkgpass)" \
		>>/etc/moat/users
	mkdir -p "$home/Maildir/cur" "$home/Maildir/new" "$home/Maildir/tmp"
	printf 'From: a@example.org\r\nTo: %s@example.org\r\nSubject: kept\r\n\r\nmail that purge must keep\r\n' \
		"$user" >"$home/Maildir/new/1700000000.M1P1.pkgtest"
	chown -R moat-vmail:moat-vmail "$home"
	chmod -R go-rwx "$home"
	# What systemd makes for the unit: RuntimeDirectory, StateDirectory.
	mkdir -p /run/moat /var/lib/moat
	/usr/bin/python3 "$ROOT/tests/pkg/run-server.py" /usr/sbin/moat \
		/etc/moat/moat.conf "$user" pkgpass ||
		die "the installed server did not serve the test user"
	say "ok: installed moat ran (READY=1), served 993, stopped (STOPPING=1)"
	# The message (moved to cur/ by SELECT) and moat's index beside it:
	# purge must leave every byte of it.
	grep -rqs 'mail that purge must keep' "$home/Maildir/cur" ||
		die "the test message is not in $home/Maildir/cur"
	find /var/lib/moat/mail -type f -print0 | sort -z | xargs -0 sha256sum >/run/mail.sha256
}

inner_purge_checks() {
	dpkg --purge moat >/run/purge.out 2>&1 || { cat /run/purge.out >&2; die "dpkg --purge"; }
	check "package gone" sh -c '! dpkg-query -W -f="\${db:Status-Status}" moat 2>/dev/null | grep -q installed'
	check "configuration removed" test ! -e /etc/moat
	check "logrotate snippet removed" test ! -e /etc/logrotate.d/moat
	check "unit removed" test ! -e /lib/systemd/system/moat.service
	check "service no longer enabled" \
		test ! -e /etc/systemd/system/multi-user.target.wants/moat.service
	check "mail kept by purge" sha256sum --quiet -c /run/mail.sha256
	check "users kept (they may own mail)" getent passwd moat-vmail >/dev/null
}

inner() {
	local work=$1 deb=$2
	inner_setup "$work/ov"
	# The build machine has the users already (dev.sh): remove them in
	# the overlay so that the package is seen creating them.
	local u
	for u in moat-login moat-auth moat-lmtp moat-vmail; do
		if getent passwd "$u" >/dev/null; then userdel "$u"; fi
		if getent group "$u" >/dev/null; then groupdel "$u"; fi
	done
	rm -rf /etc/moat /var/lib/moat
	dpkg -i "$deb" >/run/install.out 2>&1 || { cat /run/install.out >&2; die "dpkg -i"; }
	say "ok: dpkg -i"
	inner_installed_checks
	inner_run_server
	inner_purge_checks
}

if [ "${1:-}" = --inner ]; then
	shift
	inner "$@"
	exit 0
fi

# ---- outside: build, lintian, then the namespace ----------------------------

[ "$(id -u)" -eq 0 ] || { say "skipped: needs root (dpkg in a mount namespace)"; exit 0; }
WORK=${1:-$ROOT/build/pkg}
case $WORK in /*) ;; *) WORK=$PWD/$WORK ;; esac
start=$(date +%s)

host_state() {
	printf 'moat package: %s\n' \
		"$(dpkg-query -W -f='${db:Status-Status}' moat 2>/dev/null || echo none)"
	ls -d /etc/moat /etc/logrotate.d/moat /lib/systemd/system/moat.service \
		/usr/sbin/moat /var/lib/moat /usr/lib/sysusers.d/moat.conf 2>/dev/null || true
	getent passwd moat-login moat-auth moat-lmtp moat-vmail || true
}
before=$(host_state)

rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/ov"
# The tree as it is (uncommitted changes too), without build products.
(cd "$ROOT" && git ls-files -co --exclude-standard -z |
	tar --null -T - -cf -) | tar -xf - -C "$WORK/src"
say "dpkg-buildpackage -us -uc -b (log: $WORK/build.log)"
(cd "$WORK/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
	dpkg-buildpackage -us -uc -b >"$WORK/build.log" 2>&1) ||
	{ tail -50 "$WORK/build.log" >&2; die "dpkg-buildpackage failed"; }
deb=$(ls "$WORK"/moat_*_*.deb)
changes=$(ls "$WORK"/moat_*_*.changes)
say "built $(basename "$deb") in $(( $(date +%s) - start )) s"

lintian_rc=0
lintian_out=$(lintian --fail-on error,warning "$changes" 2>&1) || lintian_rc=$?
lintian_out=$(printf '%s\n' "$lintian_out" | grep -v '^running with root privileges' || true)
[ "$lintian_rc" -eq 0 ] || die "lintian: $lintian_out"
[ -z "$lintian_out" ] || say "lintian (not errors or warnings): $lintian_out"
say "ok: lintian, no errors and no warnings"

unshare --mount --propagation private --net --pid --fork --mount-proc \
	"$0" --inner "$WORK" "$deb" || die "install/run/purge in the throwaway root"

after=$(host_state)
[ "$before" = "$after" ] || die "the machine changed: before
$before
after
$after"
say "ok: the machine is as before"
say "passed in $(( $(date +%s) - start )) s"
