# bench/servers.sh: private moat and Dovecot servers for the benchmarks.
# Sourced by compare.sh and smoke.sh; not run directly. Everything lives
# under $BENCH_WORK (a mktemp directory), listens on 127.0.0.1 only, and
# is stopped by pid (bench_cleanup). No system instance is ever touched.

BENCH_PIDS=()

bench_say() { printf '%s: %s\n' "${BENCH_NAME:-bench}" "$*" >&2; }
bench_die() { bench_say "error: $*"; bench_cleanup; exit 1; }

bench_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

bench_is_root() { [ "$(id -u)" -eq 0 ]; }

# bench_write_users FILE NAME...: passwd-file, every password "pass".
bench_write_users() {
	local file=$1 hash name
	shift
	hash=$(openssl passwd -6 pass)
	: >"$file"
	for name in "$@"; do
		printf '%s:{SHA512-CRYPT}%s::::::\n' "$name" "$hash" >>"$file"
	done
	chmod 0644 "$file"
}

# The mail owner: moat-vmail when root (both servers use it), else us.
bench_mail_owner() {
	if bench_is_root; then
		echo moat-vmail
	else
		id -un
	fi
}

# bench_make_home DIR: an empty Maildir owned by the mail owner.
bench_make_home() {
	local home=$1
	rm -rf "$home"
	mkdir -p "$home/Maildir/cur" "$home/Maildir/new" "$home/Maildir/tmp"
	if bench_is_root; then
		chown -R moat-vmail:moat-vmail "$home"
	fi
	chmod 0700 "$home"
}

# bench_wait_greeting PORT PID: waits up to 10 s for "* OK" on PORT.
bench_wait_greeting() {
	local port=$1 pid=$2 i
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || return 1
		if python3 - "$port" <<'EOF' 2>/dev/null
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
sys.exit(0 if s.recv(100).startswith(b"* OK") else 1)
EOF
		then
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# bench_start_moat PREFIX DIR PORT: config in DIR, homes in DIR/mail.
# Settings as tests/protocol/moatserver.py writes them, defaults otherwise
# (fsync "optimized" = what an OK promises is on disk).
# BENCH_MOAT_SETTINGS: extra moat.conf lines (e.g. "auth_cache_size = 0").
# BENCH_LMTP_PORT set: the servers also take LMTP there (recipients are
# "user@domain" for the users of the passwd-file).
bench_start_moat() {
	local prefix=$1 dir=$2 port=$3 first_uid=0 extra=""
	mkdir -p "$dir/run" "$dir/mail"
	chmod 0755 "$dir" "$dir/run" "$dir/mail"
	if bench_is_root; then
		first_uid=100
		extra="default_login_user = moat-login
default_internal_user = moat-auth
"
		chown root:moat-auth "$dir/users"
		chmod 0640 "$dir/users"
	else
		extra="mail_uid = $(id -u)
mail_gid = $(id -g)
"
	fi
	if [ -n "${BENCH_LMTP_PORT:-}" ]; then
		extra+="protocols = imap lmtp
lmtp_username_format = %Ln
service lmtp {
  vsz_limit = 0
  unix_listener lmtp {
  }
  inet_listener lmtp {
    address = 127.0.0.1
    port = $BENCH_LMTP_PORT
  }
}
"
	fi
	cat >"$dir/moat.conf" <<EOF
# written by bench/servers.sh
base_dir = $dir/run
log_path = $dir/moat.log
mail_location = maildir:~/Maildir
first_valid_uid = $first_uid
disable_plaintext_auth = no
auth_failure_delay = 0
${BENCH_MOAT_SETTINGS:+$BENCH_MOAT_SETTINGS
}${extra}service imap-login {
  vsz_limit = 0
  inet_listener imap {
    address = 127.0.0.1
    port = $port
  }
  inet_listener imaps {
    port = 0
  }
}
service auth {
  vsz_limit = 0
}
service imap {
  vsz_limit = 0
}
passdb {
  driver = passwd-file
  args = $dir/users
}
userdb {
  driver = passwd-file
  args = $dir/users
  default_fields = uid=$(bench_mail_owner) gid=$(bench_mail_owner) home=$dir/mail/%u
}
EOF
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
		setsid "$prefix/sbin/moat" -F -c "$dir/moat.conf" \
		</dev/null >"$dir/master.stderr" 2>&1 &
	MOAT_PID=$!
	BENCH_PIDS+=("$MOAT_PID")
	bench_wait_greeting "$port" "$MOAT_PID" ||
		bench_die "moat did not start; see $dir/moat.log $dir/master.stderr"
}

bench_dovecot_binary() {
	command -v dovecot 2>/dev/null || echo /usr/sbin/dovecot
}

# Installs Debian's dovecot-imapd when missing; the packaged service is
# stopped and disabled right away so that only our private one runs.
bench_install_dovecot() {
	[ -x "$(bench_dovecot_binary)" ] && [ -e /usr/lib/dovecot/imap ] && return 0
	bench_is_root || bench_die "dovecot-imapd is missing; run as root to install it"
	bench_say "installing dovecot-imapd"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends dovecot-imapd >/dev/null ||
		{ apt-get update -q >/dev/null &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends dovecot-imapd >/dev/null; } ||
		bench_die "apt-get install dovecot-imapd failed"
	if command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now dovecot >/dev/null 2>&1 || true
	fi
}

# bench_start_dovecot DIR PORT MODE: MODE "stock" (Dovecot's defaults) or
# "hp" (the documented high-performance login mode: service_count = 0,
# process_min_avail = cores, vsz_limit = 1G).
bench_start_dovecot() {
	local dir=$1 port=$2 mode=$3 login_extra="" first_uid=0 owner
	owner=$(bench_mail_owner)
	bench_is_root && first_uid=100
	mkdir -p "$dir/run" "$dir/state" "$dir/mail"
	chmod 0755 "$dir" "$dir/mail"
	if [ "$mode" = hp ]; then
		login_extra="  service_count = 0
  process_min_avail = $(nproc)
  vsz_limit = 1G
"
	fi
	local users_line="default_login_user = dovenull
default_internal_user = dovecot" protocols=imap lmtp_conf=""
	if [ -n "${BENCH_LMTP_PORT:-}" ]; then
		protocols="imap lmtp"
		lmtp_conf="auth_username_format = %Ln
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = $BENCH_LMTP_PORT
  }
}
"
	fi
	bench_is_root || users_line="default_login_user = $(id -un)
default_internal_user = $(id -un)"
	cat >"$dir/dovecot.conf" <<EOF
# written by bench/servers.sh: a private instance, defaults otherwise
# (fsync: mail_fsync = optimized, as shipped)
base_dir = $dir/run
state_dir = $dir/state
instance_name = moat-bench-$port
log_path = $dir/dovecot.log
protocols = $protocols
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
$users_line
first_valid_uid = $first_uid
mail_location = maildir:~/Maildir
passdb {
  driver = passwd-file
  args = scheme=SHA512-CRYPT $dir/users
}
userdb {
  driver = passwd-file
  args = $dir/users
  default_fields = uid=$owner gid=$owner home=$dir/mail/%u
}
service imap-login {
${login_extra}  inet_listener imap {
    address = 127.0.0.1
    port = $port
  }
  inet_listener imaps {
    port = 0
  }
}
${lmtp_conf}# 20 concurrent APPENDs by one user need more than the default 10
protocol imap {
  mail_max_userip_connections = 100
}
service pop3-login {
  inet_listener pop3 {
    port = 0
  }
  inet_listener pop3s {
    port = 0
  }
}
EOF
	setsid "$(bench_dovecot_binary)" -F -c "$dir/dovecot.conf" \
		</dev/null >"$dir/dovecot.stderr" 2>&1 &
	DOVECOT_PID=$!
	BENCH_PIDS+=("$DOVECOT_PID")
	bench_wait_greeting "$port" "$DOVECOT_PID" ||
		bench_die "dovecot did not start; see $dir/dovecot.log $dir/dovecot.stderr"
}

# bench_stop PID: SIGTERM, then SIGKILL to its process group after 10 s.
bench_stop() {
	local pid=$1 i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	# setsid made the server a group leader: its group is only its own
	kill -KILL -- "-$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

bench_cleanup() {
	local pid
	for pid in "${BENCH_PIDS[@]}"; do
		bench_stop "$pid"
	done
	BENCH_PIDS=()
	if [ -n "${BENCH_WORK:-}" ] && [ -z "${BENCH_KEEP:-}" ]; then
		rm -rf "$BENCH_WORK"
	fi
}

# bench_tree_pids PID: PID and all its descendants.
bench_tree_pids() {
	local pid=$1 child
	echo "$pid"
	for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
		bench_tree_pids "$child"
	done
}

# bench_proc_field PID FIELD: a /proc/PID/status value in kB, 0 if gone.
bench_proc_field() {
	local v
	v=$(awk -v f="$2:" '$1 == f { print $2 }' /proc/"$1"/status 2>/dev/null) || true
	echo "${v:-0}"
}

# bench_tree_rss PID: total VmRSS (kB) of the tree.
bench_tree_rss() {
	local pid total=0
	for pid in $(bench_tree_pids "$1"); do
		total=$((total + $(bench_proc_field "$pid" VmRSS)))
	done
	echo "$total"
}

# bench_tree_kinds PID: "kind peak_kB" per process (VmHWM), one a line.
bench_tree_kinds() {
	local pid comm
	for pid in $(bench_tree_pids "$1"); do
		comm=$(cat /proc/"$pid"/comm 2>/dev/null) || continue
		[ "$pid" = "$1" ] && comm="master"
		printf '%s %s\n' "$comm" "$(bench_proc_field "$pid" VmHWM)"
	done
}
