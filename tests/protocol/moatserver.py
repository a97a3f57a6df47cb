"""The server under test for moat's protocol tests.

Every test gets its own server: a temporary directory (config, users file,
mail homes, base_dir, log) and a `moat -F` master started from
$MOAT_PREFIX (default: build/test/local of this tree). At teardown the
master gets SIGTERM and must exit within 10 s; the log is then searched for
sanitizer reports, which fail the test.

Run as root, users get their own uids (60001, 60002, ...) and the server
drops privileges as in production (moat-login, moat-auth from dev.sh).
Run as anyone else, every process runs as the invoking user.

Per-test settings: @pytest.mark.moat_settings(login_timeout=2, ...).
extra_dbs="passdb {...}" (not a moat setting) is config text appended
after the passwd-file passdb/userdb blocks (e.g. shadow/pam/passwd).
tls=True (not a moat setting) generates a self-signed certificate (key
mode 0600) for ssl_cert/ssl_key and adds an implicit-TLS listener on
server.tls_port.
"""

import base64
import grp
import os
import pathlib
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from moatimap import ImapClient, read_greeting

REPO = pathlib.Path(__file__).resolve().parents[2]
MOAT_PREFIX = pathlib.Path(os.environ.get("MOAT_PREFIX") or REPO / "build/test/local")
IS_ROOT = os.geteuid() == 0

# Test users: name -> password. Root runs give them uids from USER_UID_BASE.
USERS = {"testuser1": "pass", "testuser2": "secret2"}
USER_UID_BASE = 60001
USER_GID = 60001

# Bounds for a machine busy with other work (CI, a sanitizer build); a
# healthy server starts and stops in well under a second.
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer",
                     "UndefinedBehaviorSanitizer", "runtime error:")

root_only = pytest.mark.skipif(not IS_ROOT, reason="needs root (privilege separation)")

_hash_cache = {}


def hash_password(password):
    """{SHA512-CRYPT} hash for the passwd-file: crypt(3), else openssl."""
    if password in _hash_cache:
        return _hash_cache[password]
    hashed = None
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt
        hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_SHA512))
    except (ImportError, AttributeError):
        pass
    if not hashed or not hashed.startswith("$6$"):
        hashed = subprocess.run(["openssl", "passwd", "-6", password],
                                check=True, capture_output=True,
                                text=True).stdout.strip()
    _hash_cache[password] = hashed
    return hashed


def free_port():
    """A port that was free a moment ago on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- /proc helpers ---------------------------------------------------------

def proc_status(pid):
    """/proc/PID/status as a dict of strings, or None if the process is gone."""
    try:
        text = pathlib.Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def proc_comm(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None


def proc_starttime(pid):
    """Start time in clock ticks (field 22), to tell a pid from its reuse."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def proc_alive(pid, starttime=None):
    st = proc_starttime(pid)
    if st is None:
        return False
    if starttime is not None and st != starttime:
        return False
    status = proc_status(pid)
    return status is not None and not status.get("State", "").startswith("Z")


def children_of(ppid):
    """[(pid, comm)] of the live processes whose parent is ppid."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        status = proc_status(entry)
        if status is None or status.get("PPid") != str(ppid):
            continue
        if status.get("State", "").startswith("Z"):
            continue
        found.append((int(entry), proc_comm(entry)))
    return sorted(found)


def status_uid(status):
    """Real uid from a status dict (the first of the four Uid fields)."""
    return int(status["Uid"].split()[0])


def status_uids(status):
    return [int(x) for x in status["Uid"].split()]


def wait_for(predicate, timeout, interval=0.05):
    """Polls predicate() until it returns something true; returns that or None."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


# ---- the server under test -------------------------------------------------

class MoatServer:
    """One moat master with its own directory, config, users and port."""

    def __init__(self, settings):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="moat-test-", dir="/tmp"))
        os.chmod(self.tmp, 0o755)  # other uids must traverse it
        self.base_dir = self.tmp / "run"
        self.mail_dir = self.tmp / "mail"
        self.conf_path = self.tmp / "moat.conf"
        self.users_path = self.tmp / "users"
        self.log_path = self.tmp / "moat.log"
        self.stderr_path = self.tmp / "master.stderr"
        self.host = "127.0.0.1"
        self.port = free_port()
        self.settings = dict(settings)
        self.tls = bool(self.settings.pop("tls", False))
        self.extra_dbs = str(self.settings.pop("extra_dbs", ""))
        self.tls_port = free_port() if self.tls else 0
        # tls_key_type="rsa": an RSA-2048 key instead of P-256
        self.tls_key_type = str(self.settings.pop("tls_key_type", "ec"))
        # lmtp=True: protocols = imap lmtp, listening on lmtp_socket and
        # on 127.0.0.1:lmtp_port
        self.lmtp = bool(self.settings.pop("lmtp", False))
        self.lmtp_port = free_port() if self.lmtp else 0
        self.lmtp_socket = self.base_dir / "lmtp"
        # socket_activation=[extra addresses]: started by
        # systemd-socket-activate, which binds the IMAP port (and LMTP's
        # port and socket) plus these, and passes them as LISTEN_FDS
        activation = self.settings.pop("socket_activation", None)
        self.activation = None if activation is None else list(activation)
        # (soft, hard) RLIMIT_NOFILE master starts with, or None: inherited
        self.rlimit_nofile = None
        # haproxy=True: an inet_listener imap-lb on haproxy_port (and with
        # tls, imaps-lb on haproxy_tls_port) with haproxy = yes; the test
        # sets haproxy_trusted_networks
        self.haproxy = bool(self.settings.pop("haproxy", False))
        self.haproxy_port = free_port() if self.haproxy else 0
        self.haproxy_tls_port = free_port() if self.haproxy and self.tls else 0
        self.cert_path = self.tmp / "cert.pem"
        self.key_path = self.tmp / "key.pem"
        self.users = {}
        self.proc = None
        self.clients = []
        # extra_users={name: password}: more users in the passwd-file
        # (e.g. a UTF-8 name, test_lmtp.py)
        users = {**USERS, **self.settings.pop("extra_users", {})}
        for i, (name, password) in enumerate(users.items()):
            uid = USER_UID_BASE + i if IS_ROOT else os.getuid()
            gid = USER_GID if IS_ROOT else os.getgid()
            self.users[name] = {"password": password, "uid": uid, "gid": gid,
                                "home": self.mail_dir / name}

    # -- files

    def maildir(self, user):
        return self.users[user]["home"] / "Maildir"

    def _write_users(self):
        lines = []
        for name, u in self.users.items():
            pw = "{SHA512-CRYPT}" + hash_password(u["password"])
            if IS_ROOT:
                lines.append(f"{name}:{pw}:{u['uid']}:{u['gid']}::{u['home']}::")
            else:
                lines.append(f"{name}:{pw}::::{u['home']}::")
        self.users_path.write_text("\n".join(lines) + "\n")
        if IS_ROOT:
            os.chown(self.users_path, 0, grp.getgrnam("moat-auth").gr_gid)
            os.chmod(self.users_path, 0o640)
        else:
            os.chmod(self.users_path, 0o600)

    def _make_homes(self):
        self.mail_dir.mkdir(mode=0o755)
        for u in self.users.values():
            for sub in ("cur", "new", "tmp"):
                (u["home"] / "Maildir" / sub).mkdir(parents=True)
            self.chown_home(u)

    def chown_home(self, u):
        """Gives a user's home (after a test placed files in it) to the user."""
        if not IS_ROOT:
            return
        for dirpath, dirnames, filenames in os.walk(u["home"]):
            os.chown(dirpath, u["uid"], u["gid"])
            os.chmod(dirpath, 0o700)
            for f in filenames:
                os.chown(os.path.join(dirpath, f), u["uid"], u["gid"])

    def _config_text(self):
        top = {
            "base_dir": str(self.base_dir),
            "log_path": str(self.log_path),
            "mail_location": "maildir:~/Maildir",
            "first_valid_uid": "1000" if IS_ROOT else "0",
            "imap_process_linger": "1",
            # Failed logins answer at once; tests that want the delay set it.
            "auth_failure_delay": "0",
        }
        if self.lmtp:
            top["protocols"] = "imap lmtp"
        if self.tls:
            top["ssl_cert"] = f"<{self.cert_path}"
            top["ssl_key"] = f"<{self.key_path}"
        if IS_ROOT:
            top["default_login_user"] = "moat-login"
            top["default_internal_user"] = "moat-auth"
        else:
            # No uids in the users file: mail runs as the invoking user.
            top["mail_uid"] = str(os.getuid())
            top["mail_gid"] = str(os.getgid())
        # services={"imap-login": {"client_limit": 1}} adds to service blocks.
        services = self.settings.get("services", {})
        top.update({k: str(v) for k, v in self.settings.items() if k != "services"})

        def extra(name):
            return [f"  {k} = {v}" for k, v in services.get(name, {}).items()]
        lines = ["# moat.conf written by tests/protocol/moatserver.py"]
        lines += [f"{k} = {v}" for k, v in top.items()]
        # vsz_limit = 0: sanitizer builds reserve terabytes of address space.
        lines += [
            "service imap-login {",
            "  vsz_limit = 0",
            *extra("imap-login"),
            "  inet_listener imap {",
            f"    address = {self.host}",
            f"    port = {self.port}",
            "  }",
            "  inet_listener imaps {",
            *([f"    address = {self.host}", f"    port = {self.tls_port}",
               "    ssl = yes"] if self.tls else ["    port = 0"]),
            "  }",
            *([
                "  inet_listener imap-lb {",
                f"    address = {self.host}",
                f"    port = {self.haproxy_port}",
                "    haproxy = yes",
                "  }",
            ] if self.haproxy else []),
            *([
                "  inet_listener imaps-lb {",
                f"    address = {self.host}",
                f"    port = {self.haproxy_tls_port}",
                "    ssl = yes",
                "    haproxy = yes",
                "  }",
            ] if self.haproxy_tls_port else []),
            "}",
            "service auth {",
            "  vsz_limit = 0",
            *extra("auth"),
            "}",
            "service imap {",
            "  vsz_limit = 0",
            *extra("imap"),
            "}",
            *([
                "service lmtp {",
                "  vsz_limit = 0",
                *extra("lmtp"),
                "  unix_listener lmtp {",
                "    mode = 0666",
                "  }",
                "  inet_listener lmtp {",
                f"    address = {self.host}",
                f"    port = {self.lmtp_port}",
                "  }",
                "}",
            ] if self.lmtp else []),
            "passdb {",
            "  driver = passwd-file",
            f"  args = {self.users_path}",
            "}",
            "userdb {",
            "  driver = passwd-file",
            f"  args = {self.users_path}",
            f"  default_fields = home={self.mail_dir}/%u",
            "}",
            *self.extra_dbs.splitlines(),
        ]
        return "\n".join(lines) + "\n"

    def prepare(self):
        if IS_ROOT:
            for name in ("moat-login", "moat-auth") + (("moat-lmtp",) if self.lmtp else ()):
                try:
                    pwd.getpwnam(name)
                except KeyError:
                    pytest.skip(f"system user {name} is missing: run ./dev.sh test "
                                "(or ./dev.sh run) once as root to create it")
        binary = MOAT_PREFIX / "sbin/moat"
        if not os.access(binary, os.X_OK):
            pytest.fail(f"{binary} not found: build and install moat first "
                        "(./dev.sh test, or set MOAT_PREFIX)")
        self.base_dir.mkdir(mode=0o755)
        if self.tls:
            self._make_cert()
        self._write_users()
        self._make_homes()
        self.conf_path.write_text(self._config_text())

    def _make_cert(self, key_type=None):
        """Self-signed certificate for 127.0.0.1 with a P-256 key (or
        RSA-2048 with key_type "rsa"); key 0600. Overwrites the files."""
        key_type = key_type or self.tls_key_type
        newkey = (["-newkey", "rsa:2048"] if key_type == "rsa" else
                  ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"])
        old = os.umask(0o077)
        try:
            subprocess.run(
                ["openssl", "req", "-x509", *newkey, "-nodes",
                 "-keyout", str(self.key_path), "-out", str(self.cert_path),
                 "-days", "2", "-subj", "/CN=localhost",
                 "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                check=True, capture_output=True)
        finally:
            os.umask(old)
        os.chmod(self.key_path, 0o600)
        os.chmod(self.cert_path, 0o644)

    # -- process

    def _preexec(self):
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, self.rlimit_nofile)

    def start(self):
        binary = MOAT_PREFIX / "sbin/moat"
        env = dict(os.environ)
        # As dev.sh sets them, for runs of pytest by hand: LeakSanitizer is
        # unreliable in chrooted setuid processes; any UBSan report is fatal.
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        launcher = []
        if self.activation is not None:
            launcher = ["systemd-socket-activate",
                        "-l", f"{self.host}:{self.port}"]
            if self.lmtp:
                launcher += ["-l", f"{self.host}:{self.lmtp_port}",
                             "-l", str(self.lmtp_socket)]
            for address in self.activation:
                launcher += ["-l", address]
            # it passes on only the variables it is told to
            for name in sorted(env):
                launcher += ["-E", name]
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(
                launcher + [str(binary), "-F", "-c", str(self.conf_path)],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                cwd=str(self.tmp), env=env, start_new_session=True,
                preexec_fn=self._preexec if self.rlimit_nofile else None)
        deadline = time.monotonic() + START_TIMEOUT
        last_error = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"moat exited with {self.proc.returncode} at start-up:\n"
                            + self.logs())
            try:
                with socket.create_connection((self.host, self.port), timeout=2) as s:
                    s.settimeout(2)
                    greeting = read_greeting(s)
                if greeting.startswith(b"* OK"):
                    return
                last_error = f"greeting: {greeting!r}"
            except OSError as e:
                last_error = str(e)
            time.sleep(0.05)
        pytest.fail(f"moat did not greet on {self.port} within {START_TIMEOUT}s "
                    f"({last_error}):\n" + self.logs())

    @property
    def pid(self):
        return self.proc.pid

    def children(self, comm=None):
        """[(pid, comm)] of the master's live children, optionally one kind."""
        return [c for c in children_of(self.pid) if comm is None or c[1] == comm]

    def child_pids(self, comm):
        return [pid for pid, _ in self.children(comm)]

    def wait_children(self, comm, count, timeout=5.0):
        """Waits until exactly count children named comm exist; returns pids."""
        def check():
            pids = self.child_pids(comm)
            return (pids,) if len(pids) == count else None
        found = wait_for(check, timeout)
        assert found, (f"expected {count} {comm} process(es), have "
                       f"{self.children()}\n" + self.logs())
        return found[0]

    def descendants(self):
        """{pid: starttime} of every process below the master."""
        result = {}
        todo = [self.pid]
        while todo:
            parent = todo.pop()
            for pid, _ in children_of(parent):
                if pid not in result:
                    result[pid] = proc_starttime(pid)
                    todo.append(pid)
        return result

    def stop(self, sig=signal.SIGTERM):
        """Signals the master and waits; returns (exit code or None, leftover pids)."""
        if self.proc is None:
            return 0, []
        tree = self.descendants()
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
        try:
            rc = self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            rc = None
        left = wait_for(lambda: not [p for p, st in tree.items() if proc_alive(p, st)],
                        STOP_TIMEOUT if rc is not None else 0.1)
        leftovers = [] if left else [p for p, st in tree.items() if proc_alive(p, st)]
        return rc, leftovers

    def kill_everything(self):
        tree = self.descendants() if self.proc else {}
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid, st in tree.items():
            if proc_alive(pid, st):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    # -- logs

    def logs(self):
        parts = []
        for path in (self.log_path, self.stderr_path):
            try:
                text = path.read_text(errors="replace")
            except FileNotFoundError:
                continue
            if text:
                parts.append(f"--- {path.name} ---\n{text}")
        return "\n".join(parts) or "(no log output)"

    def sanitizer_reports(self):
        text = self.logs()
        return [m for m in SANITIZER_MARKERS if m in text]

    # -- clients

    def connect(self, greeting=True):
        """A raw ImapClient; the greeting is read unless greeting=False."""
        c = ImapClient(self.host, self.port)
        self.clients.append(c)
        if greeting:
            c.greeting = c.read_greeting()
        return c

    def login(self, user="testuser1", password=None):
        c = self.connect()
        if password is None:
            password = self.users[user]["password"]
        r = c.command(f"LOGIN {user} {password}")
        assert r.ok, f"LOGIN {user} failed: {r}\n" + self.logs()
        return c

    def login_after_reload(self, user="testuser1", client=None, timeout=30):
        """LOGIN (on client, or a new connection each try) until it is not
        a temporary failure: after a reload auth restarts with the new
        settings; imap-login parks logins until it has its socket to the
        new one (test_auth_park.py), but one past login_auth_park_limit or
        _timeout still gets NO [UNAVAILABLE]. Returns the connection."""
        password = self.users[user]["password"]

        def once():
            c = client if client is not None else self.connect()
            r = c.command(f"LOGIN {user} {password}")
            return (c, r) if r.ok or b"[UNAVAILABLE]" not in r.line else None
        found = wait_for(once, timeout, interval=0.5)
        assert found and found[1].ok, (found, self.logs())
        return found[0]

    def close_clients(self):
        for c in self.clients:
            c.close()
        self.clients = []

    def cleanup(self):
        self.close_clients()
        if os.environ.get("MOAT_KEEP_TMP"):
            return
        shutil.rmtree(self.tmp, ignore_errors=True)


def plain_ir(user, password, authzid=""):
    """The base64 SASL PLAIN initial response."""
    raw = f"{authzid}\0{user}\0{password}".encode()
    return base64.b64encode(raw).decode()
