#!/bin/sh
# Compare moat's ENVELOPE/BODY/BODYSTRUCTURE/RFC822.SIZE with Dovecot's for
# every message of a corpus. Starts a private Dovecot (own base_dir, own
# Maildir, passwd-file user, random port on 127.0.0.1), never the system one,
# and stops it by pid at the end.
#
# Usage: compare-dovecot-mime.sh [--serve] [--diff] [--dovecot-port N] [options]
#   --serve           start Dovecot, print its port and pid, and exit (leave
#                     it running; stop it with kill PID, remove its dir)
#   --diff            run mime_diff.py (every section of every part against
#                     a running moat: --moat-port P, --seed N, --count N,
#                     --corpus DIR, ...) instead of compare_mime.py
#   --dovecot-port N  use an already running reference server on port N
#   every other option goes to compare_mime.py, e.g. --mime-dump PATH,
#   --moat-host H --moat-port P --moat-user U --moat-pass P (compare moat's
#   own IMAP FETCH instead of mime-dump), --limit N, --match STR, --crlf,
#   --show N.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
serve=no
tool=compare_mime.py
port=
while [ $# -gt 0 ]; do
	case "$1" in
	--serve) serve=yes; shift ;;
	--diff) tool=mime_diff.py; shift ;;
	--dovecot-port) port=$2; shift 2 ;;
	*) break ;;
	esac
done

if [ -z "$port" ]; then
	if ! command -v dovecot >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || { echo "dovecot missing; run as root to install" >&2; exit 1; }
		# policy-rc.d keeps the package from starting the system instance.
		DEBIAN_FRONTEND=noninteractive apt-get install -y dovecot-imapd >/dev/null
	fi
	dir=$(mktemp -d /tmp/moat-dovecot.XXXXXX)
	chmod 755 "$dir"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	if [ "$(id -u)" = 0 ]; then
		mailuser=dovecot
		uid=$(id -u $mailuser); gid=$(id -g $mailuser)
		rootconf="default_internal_user = dovenull
default_login_user = dovenull"
	else
		uid=$(id -u); gid=$(id -g)
		rootconf="default_internal_user = $(id -un)
default_login_user = $(id -un)"
	fi
	mkdir -p "$dir/run" "$dir/mail" "$dir/state"
	chown "$uid:$gid" "$dir/mail" 2>/dev/null || true
	echo "test:{PLAIN}test:$uid:$gid::$dir/mail/test" > "$dir/passwd"
	cat > "$dir/dovecot.conf" <<EOF
base_dir = $dir/run
state_dir = $dir/state
log_path = $dir/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
auth_mechanisms = plain
disable_plaintext_auth = no
$rootconf
first_valid_uid = 0
mail_uid = $uid
mail_gid = $gid
mail_location = maildir:$dir/mail/%u
passdb {
  driver = passwd-file
  args = $dir/passwd
}
userdb {
  driver = static
  args = uid=$uid gid=$gid home=$dir/mail/%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = $port
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
}
service imap-login {
  chroot =
}
EOF
	dovecot -F -c "$dir/dovecot.conf" >"$dir/stdout" 2>&1 &
	pid=$!
	i=0
	until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 50 ] || ! kill -0 $pid 2>/dev/null; then
			echo "dovecot did not start:" >&2
			cat "$dir/stdout" "$dir/dovecot.log" >&2 2>/dev/null || true
			kill $pid 2>/dev/null || true
			rm -rf "$dir"
			exit 1
		fi
		sleep 0.1
	done
	if [ $serve = yes ]; then
		echo "port=$port pid=$pid dir=$dir"
		exit 0
	fi
	trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
fi
[ $serve = yes ] && { echo "port=$port"; exit 0; }

rc=0
python3 "$here/$tool" --ref-port "$port" "$@" || rc=$?
exit $rc
