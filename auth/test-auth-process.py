#!/usr/bin/env python3
"""End-to-end test of the auth process without master: this script plays
master (fd 3 + the config memfd on fd 4) and an imap-login (a socketpair
handed over with LOGIN-CONN) and checks the records of doc/architecture.md
(moat-auth-master, moat-auth-client). No root and no network needed.

usage: test-auth-process.py [path/to/auth/auth]"""
import base64
import hashlib
import hmac
import os, socket, subprocess, sys, tempfile, time, pwd, grp

AUTH = sys.argv[1] if len(sys.argv) > 1 else "auth/auth"
SHA512_SECRET = ("$6$saltsaltsalt$PMWE8DTlam1JU37Piyk43bHcMxTJq6sgu5DKB0"
                 "/tGPjanN35jcY68QkpDfPFUGPWX5uCxIQkSPzMmqEiVNgts.")
failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1


def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def esc(field):
    return (field.replace("\\", "\\\\").replace("\t", "\\t")
            .replace("\n", "\\n").replace("\r", "\\r").replace("\x01", "\\1"))


def send(sock, *fields, fd=None):
    data = ("\t".join(esc(f) for f in fields) + "\n").encode()
    if fd is None:
        sock.send(data)
    else:
        socket.send_fds(sock, [data], [fd])


def recv(sock, timeout=5.0):
    sock.settimeout(timeout)
    try:
        data = sock.recv(70000)
    except socket.timeout:
        return None
    if data == b"":
        return "EOF"
    return data.decode().rstrip("\n").split("\t")


# AUTH-STATS records auth sent on the master channel (auth/auth-stats.h):
# batched every 5 s, so they may come between any two answers.
auth_stats = []
# PENALTY records: auth writes penalised addresses through to master at
# any time (auth/auth-penalty-sync.h).
penalties = []


def recv_master(sock, timeout=5.0):
    """The next master-channel record that is not AUTH-STATS or PENALTY."""
    deadline = time.monotonic() + timeout
    while True:
        r = recv(sock, max(0.01, deadline - time.monotonic()))
        if isinstance(r, list) and r and r[0] == "AUTH-STATS":
            auth_stats.append(r)
            continue
        if isinstance(r, list) and r and r[0] == "PENALTY":
            penalties.append(r)
            continue
        return r


def auth_stats_sum(mech):
    """[ok, failed, count of the last bucket] summed over the records."""
    rows = [r for r in auth_stats if r[1] == mech]
    return [sum(int(r[i]) for r in rows) for i in (2, 3, len(rows[0]) - 1)] \
        if rows else [0, 0, 0]


def scram_final(first_bare, sfirst, gs2_cbind, password):
    """client-final-message for SCRAM-SHA-256 (RFC 5802 section 3)."""
    attrs = dict(a.split("=", 1) for a in sfirst.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(),
                                 base64.b64decode(attrs["s"]), int(attrs["i"]))
    ckey = hmac.new(salted, b"Client Key", "sha256").digest()
    stored = hashlib.sha256(ckey).digest()
    wo = "c=%s,r=%s" % (base64.b64encode(gs2_cbind).decode(), attrs["r"])
    am = "%s,%s,%s" % (first_bare, sfirst, wo)
    sig = hmac.new(stored, am.encode(), "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(ckey, sig))
    return "%s,p=%s" % (wo, base64.b64encode(proof).decode())


def scram_plus_checks(login, new_login):
    """SCRAM-SHA-256-PLUS with the cbind= field of AUTH (RFC 9266)."""
    cb = os.urandom(32)
    cbind = "cbind=" + base64.b64encode(cb).decode()
    gs2 = b"p=tls-exporter,,"
    bare = "n=alice,r=clientnonce123"

    def run(rid, client_cb):
        send(login, "AUTH", rid, "SCRAM-SHA-256-PLUS", "192.0.2.20",
             "127.0.0.1", "1", b64(gs2.decode() + bare), cbind)
        r = recv(login)
        if r is None or r[0] != "CONT":
            return r
        sfirst = base64.b64decode(r[2]).decode()
        send(login, "CONT", rid,
             b64(scram_final(bare, sfirst, gs2 + client_cb, "secret")))
        r = recv(login)
        if r is not None and r[0] == "CONT":
            send(login, "CONT", rid, "")
            r = recv(login)
        return r

    r = run("p1", cb)
    check(r is not None and r[:3] == ["OK", "p1", "alice"],
          "SCRAM-SHA-256-PLUS with the right tls-exporter binding")
    r = run("p2", bytes(32))
    check(r is not None and r[:3] == ["FAIL", "p2", "authfailed"],
          "SCRAM-SHA-256-PLUS with another binding refused")
    send(login, "AUTH", "p3", "SCRAM-SHA-256-PLUS", "192.0.2.21",
         "127.0.0.1", "1", b64(gs2.decode() + bare))
    r = recv(login)
    check(r is not None and r[:3] == ["FAIL", "p3", "authfailed"],
          "SCRAM-SHA-256-PLUS without cbind= refused")
    send(login, "AUTH", "p4", "SCRAM-SHA-256", "192.0.2.22", "127.0.0.1",
         "1", b64("y,," + bare), cbind)
    r = recv(login)
    check(r is not None and r[:3] == ["FAIL", "p4", "authfailed"],
          "SCRAM 'y' flag on a TLS connection offering -PLUS refused")
    send(login, "AUTH", "p5", "SCRAM-SHA-256", "192.0.2.23", "127.0.0.1",
         "0", b64("n,," + bare))
    r = recv(login)
    check(r is not None and r[:2] == ["CONT", "p5"],
          "SCRAM allowed without TLS (not a plaintext mechanism)")
    send(login, "CONT", "p5", "*")
    recv(login)
    bad = new_login(4250)
    send(bad, "AUTH", "1", "SCRAM-SHA-256-PLUS", "192.0.2.1", "127.0.0.1",
         "1", "", "cbind=!!")
    check(recv(bad) == "EOF", "a malformed cbind= closes the connection")


def main():
    tmp = tempfile.mkdtemp(prefix="moat-auth-test-")
    # uid/gid of the default_fields user; any existing user with uid >= 1
    vmail = pwd.getpwnam("nobody")
    users = os.path.join(tmp, "users")
    with open(users, "w") as f:
        f.write("# test users\n"
                "alice:{PLAIN}secret\n"
                "bob:{SHA512-CRYPT}%s\n"
                "carol:{PLAIN}secret::::::nologin reason=Moved\n"
                "lowuid:{PLAIN}secret:100:100\n"
                "dave:{PLAIN}secret::::::mail=mdbox:~/mdbox quota_storage=2M "
                "quota_messages=100\n" % SHA512_SECRET)
    conf = ("base_dir = %s\n"
            "first_valid_uid = 1000\n"
            "auth_failure_delay = 1 secs\n"
            "disable_plaintext_auth = yes\n"
            "auth_mechanisms = plain login scram-sha-256 "
            "scram-sha-256-plus\n"
            "passdb {\n  driver = passwd-file\n  args = %s\n}\n"
            "userdb {\n  driver = passwd-file\n  args = %s\n"
            "  default_fields = uid=nobody gid=%u home=/srv/mail/%%u\n}\n"
            % (tmp, users, users, vmail.pw_gid))
    memfd = os.memfd_create("moat-config")
    os.write(memfd, conf.encode())
    os.lseek(memfd, 0, 0)

    master, child_master = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = dict(os.environ, MOAT_SERVICE="auth", MOAT_UID="", MOAT_GID="")
    if os.geteuid() == 0:
        # as root, really drop to nobody: the file must stay readable
        env.update(MOAT_UID=str(vmail.pw_uid), MOAT_GID=str(vmail.pw_gid))
        os.chmod(tmp, 0o755)
        os.chmod(users, 0o644)

    def setup_fds():
        # via fresh copies: the originals may sit on 3 or 4 themselves
        a, b = os.dup(child_master.fileno()), os.dup(memfd)
        os.dup2(a, 3)
        os.dup2(b, 4)

    # stderr goes to a file we grep for the log lines
    logpath = os.path.join(tmp, "auth.log")
    log = open(logpath, "w")
    proc = subprocess.Popen([AUTH], env=env, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log, preexec_fn=setup_fds,
                            pass_fds=(3, 4, child_master.fileno(), memfd))
    child_master.close()
    os.close(memfd)

    check(recv_master(master) == ["VERSION", "moat-auth-master", "1", "0"],
          "auth sends VERSION on the master channel")
    if os.geteuid() == 0:
        with open("/proc/%d/status" % proc.pid) as f:
            status = dict(l.split(":", 1) for l in f.read().splitlines())
        check(status["Uid"].split() == [str(vmail.pw_uid)] * 4 and
              int(status["CapEff"], 16) == 0 and
              int(status["CapBnd"], 16) == 0 and
              status["NoNewPrivs"].strip() == "1",
              "privileges dropped: uid %s, no capabilities, no_new_privs"
              % vmail.pw_uid)
    send(master, "VERSION", "moat-auth-master", "1", "0")

    def new_login(pid):
        login, auth_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        send(master, "LOGIN-CONN", str(pid), fd=auth_end.fileno())
        auth_end.close()
        check(recv(login) == ["VERSION", "moat-auth-client", "1", "0"],
              "auth sends VERSION to login pid %d" % pid)
        send(login, "VERSION", "moat-auth-client", "1", "0")
        return login

    login = new_login(4242)

    # PLAIN success, then redeem by master
    send(login, "AUTH", "1", "PLAIN", "192.0.2.1", "127.0.0.1", "1",
         b64("\0Alice\0secret"))
    r = recv(login)
    check(r is not None and r[:3] == ["OK", "1", "alice"] and len(r) == 4 and
          len(r[3]) == 64, "PLAIN ok with canonical user name: %s" % r[:3])
    token = r[3] if r and len(r) == 4 else "x"
    send(master, "REDEEM", "7", token, "9999")
    check(recv_master(master) == ["NOTFOUND", "7"], "token from another pid refused")
    # the wrong-pid attempt consumed it: log in again for a fresh one
    send(login, "AUTH", "1", "PLAIN", "192.0.2.1", "127.0.0.1", "1",
         b64("\0alice\0secret"))
    token = recv(login)[3]
    send(master, "REDEEM", "8", token, "4242")
    check(recv_master(master) == ["USER", "8", "alice", str(vmail.pw_uid),
                           str(vmail.pw_gid), "/srv/mail/alice",
                           "maildir:~/Maildir", "", ""], "REDEEM gives USER")
    send(master, "REDEEM", "9", token, "4242")
    check(recv_master(master) == ["NOTFOUND", "9"], "token is single-use")
    send(master, "REDEEM", "10", "zz", "4242")
    check(recv_master(master) == ["NOTFOUND", "10"], "malformed token NOTFOUND")
    # A token with another issuer id (bytes 2..7: the auth before a
    # restart issued it) is FOREIGN, so master lets the login retry.
    other = token[:4] + "".join("%x" % ((int(c, 16) + 1) % 16)
                                for c in token[4:16]) + token[16:]
    send(master, "REDEEM", "10", other, "4242")
    check(recv_master(master) == ["FOREIGN", "10"],
          "another auth's token FOREIGN")

    # wrong password: delayed FAIL; a good login meanwhile is not blocked
    t0 = time.monotonic()
    send(login, "AUTH", "2", "PLAIN", "198.51.100.7", "127.0.0.1", "1",
         b64("\0alice\0wrong"))
    send(login, "AUTH", "3", "PLAIN", "192.0.2.1", "127.0.0.1", "1",
         b64("\0bob\0secret"))
    r1 = recv(login)
    r2 = recv(login)
    t1 = time.monotonic() - t0
    check(r1 is not None and r1[:3] == ["OK", "3", "bob"],
          "sha512-crypt login answered while another waits: %s" % r1[:2])
    check(r2 == ["FAIL", "2", "authfailed", "Authentication failed."] and
          0.9 <= t1 < 3, "wrong password FAIL after ~1 s (%.2f s)" % t1)
    # second attempt from the same IP: it waits 1 s for its turn, then
    # its failure is answered after the doubled delay, 2 s
    t0 = time.monotonic()
    send(login, "AUTH", "4", "PLAIN", "198.51.100.7", "127.0.0.1", "1",
         b64("\0nosuchuser\0wrong"))
    r = recv(login, timeout=10)
    t1 = time.monotonic() - t0
    check(r == ["FAIL", "4", "authfailed", "Authentication failed."] and
          2.9 <= t1 < 8, "unknown user: same answer, waited and doubled "
          "delay (%.2f s)" % t1)
    # a right password from there waits too (2 s), and is accepted
    t0 = time.monotonic()
    send(login, "AUTH", "4b", "PLAIN", "198.51.100.7", "127.0.0.1", "1",
         b64("\0alice\0secret"))
    r = recv(login, timeout=10)
    t1 = time.monotonic() - t0
    check(r is not None and r[:3] == ["OK", "4b", "alice"] and t1 >= 1.9,
          "right password after failures waits for the penalty (%.2f s)" % t1)

    # LOGIN mechanism, step by step
    send(login, "AUTH", "5", "LOGIN", "192.0.2.2", "127.0.0.1", "1", "")
    check(recv(login) == ["CONT", "5", b64("Username:")], "LOGIN asks Username:")
    send(login, "CONT", "5", b64("bob"))
    check(recv(login) == ["CONT", "5", b64("Password:")], "LOGIN asks Password:")
    send(login, "CONT", "5", b64("secret"))
    r = recv(login)
    check(r is not None and r[:3] == ["OK", "5", "bob"], "LOGIN ok")

    # cancel
    send(login, "AUTH", "6", "LOGIN", "192.0.2.2", "127.0.0.1", "1", "")
    recv(login)
    send(login, "CONT", "6", "*")
    check(recv(login) == ["FAIL", "6", "aborted", "Authentication aborted."],
          "CONT * cancels")

    # PLAIN without initial response
    send(login, "AUTH", "7", "PLAIN", "192.0.2.2", "127.0.0.1", "1", "")
    check(recv(login) == ["CONT", "7", ""], "PLAIN without IR gets empty CONT")
    send(login, "CONT", "7", b64("\0dave\0secret"))
    r = recv(login)
    check(r is not None and r[:3] == ["OK", "7", "dave"], "PLAIN after CONT ok")
    send(master, "REDEEM", "11", r[3], "4242")
    r = recv_master(master)
    check(r is not None and r[6:] == ["mdbox:~/mdbox", str(2 << 20), "100"],
          "userdb mail= and quota fields")
    # a mail recipient's lookup (LMTP): userdb only, no password
    send(master, "USERDB", "12", "dave")
    r = recv_master(master)
    check(r is not None and r[:3] == ["USERDB-USER", "12", "dave"] and
          r[6:] == ["mdbox:~/mdbox", str(2 << 20), "100"], "USERDB of a user")
    send(master, "USERDB", "13", "nosuchuser")
    check(recv_master(master) == ["USERDB-NOTFOUND", "13"], "USERDB of nobody")
    # the failures above were written through to master
    check(any(p[1:3] == ["198.51.100.7", "2"] for p in penalties),
          "failures written through to master: %s" % penalties)
    check(all(p[1] == "198.51.100.7" for p in penalties),
          "only the penalised address written through")
    # a table from master: its address waits, a malformed one is dropped
    send(master, "PENALTY-LOAD", "198.51.100.200", "3", "0", "2000")
    check(recv_master(master) == ["PENALTY-ACK"], "PENALTY-LOAD answered")
    send(master, "PENALTY-LOAD", "198.51.100.201", "0", "0", "2000")
    check(recv_master(master) == ["PENALTY-ACK"],
          "malformed PENALTY-LOAD answered too")
    t0 = time.monotonic()
    send(login, "AUTH", "7b", "PLAIN", "198.51.100.200", "127.0.0.1", "1",
         b64("\0alice\0secret"))
    r = recv(login, timeout=10)
    t1 = time.monotonic() - t0
    check(r is not None and r[:3] == ["OK", "7b", "alice"] and t1 >= 1.9,
          "an address from master's table waits (%.2f s)" % t1)

    # nologin, uid out of range, unknown mechanism, plaintext on insecure
    send(login, "AUTH", "8", "PLAIN", "192.0.2.3", "127.0.0.1", "1",
         b64("\0carol\0secret"))
    check(recv(login) == ["FAIL", "8", "nologin", "Moved"], "nologin reason")
    send(login, "AUTH", "9", "PLAIN", "192.0.2.3", "127.0.0.1", "1",
         b64("\0lowuid\0secret"))
    check(recv(login) == ["FAIL", "9", "authfailed", "Authentication failed."],
          "uid below first_valid_uid refused")
    send(login, "AUTH", "10", "CRAM-MD5", "192.0.2.3", "127.0.0.1", "1", "")
    r = recv(login)
    check(r is not None and r[:3] == ["FAIL", "10", "authfailed"],
          "unknown mechanism refused")
    send(login, "AUTH", "11", "PLAIN", "192.0.2.3", "192.0.2.250", "0",
         b64("\0alice\0secret"))
    r = recv(login)
    check(r is not None and r[:3] == ["FAIL", "11", "authfailed"],
          "plaintext refused on an insecure non-loopback connection")
    send(login, "AUTH", "12", "PLAIN", "127.0.0.1", "127.0.0.1", "0",
         b64("\0alice\0secret"))
    r = recv(login)
    check(r is not None and r[:2] == ["OK", "12"], "loopback counts as secured")

    scram_plus_checks(login, new_login)

    # bad base64 and oversized responses are the client's failures
    send(login, "AUTH", "13", "PLAIN", "203.0.113.9", "127.0.0.1", "1", "!!!")
    r = recv(login)
    check(r is not None and r[:3] == ["FAIL", "13", "authfailed"],
          "invalid base64 fails")
    send(login, "AUTH", "14", "PLAIN", "203.0.113.10", "127.0.0.1", "1",
         b64("\0alice\0" + "x" * 9000))
    r = recv(login)
    check(r is not None and r[:3] == ["FAIL", "14", "authfailed"],
          "response over 8 KiB fails")

    # request cap per login connection (from as many addresses: one
    # address alone would hit its penalty queue's bounds first)
    for i in range(101):
        send(login, "AUTH", "c%d" % i, "LOGIN", "198.18.0.%d" % i,
             "127.0.0.1", "1", "")
    answers = [recv(login) for _ in range(101)]
    conts = sum(1 for a in answers if a and a[0] == "CONT")
    tempfails = [a for a in answers if a and a[0] == "FAIL"]
    check(conts == 100 and len(tempfails) == 1 and
          tempfails[0][1:3] == ["c100", "tempfail"],
          "at most 100 requests in progress (%d CONT, %s)" % (conts, tempfails))

    # protocol errors close only that login connection
    send(login, "AUTH", "c0", "LOGIN", "192.0.2.4", "127.0.0.1", "1", "")
    check(recv(login) == "EOF", "AUTH with an id in progress closes the connection")
    login2 = new_login(4243)
    send(login2, "CONT", "nosuch", b64("x"))
    check(recv(login2) == "EOF", "CONT for an unknown id closes the connection")
    login3 = new_login(4244)
    send(login3, "HELLO")
    check(recv(login3) == "EOF", "unknown record closes the connection")
    login4 = new_login(4245)
    login4.send(b"AUTH\t1\tPLAIN\tx\\q\n")
    check(recv(login4) == "EOF", "bad escape closes the connection")
    login5 = new_login(4246)
    send(login5, "AUTH", "1", "PLAIN", "192.0.2.1", "127.0.0.1", "1",
         b64("\0alice\0secret"))
    r = recv(login5)
    check(r is not None and r[:2] == ["OK", "1"], "other connections still served")

    # the counters arrive batched (every 5 s): PLAIN had successes and
    # failures, every request is in the +Inf bucket's count (the last
    # bound, 30 s, is not reached here)
    deadline = time.monotonic() + 15
    while min(auth_stats_sum("PLAIN")[:2]) < 1 and time.monotonic() < deadline:
        r = recv(master, 1.0)
        if isinstance(r, list) and r and r[0] == "AUTH-STATS":
            auth_stats.append(r)
    ok, failed, le30 = auth_stats_sum("PLAIN")
    check(ok >= 1 and failed >= 1 and le30 == ok + failed and
          all(len(r) == 14 for r in auth_stats),
          "AUTH-STATS: PLAIN ok=%d failed=%d (%d records)" %
          (ok, failed, len(auth_stats)))

    # master goes away: auth exits
    master.close()
    try:
        rc = proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "timeout"
    check(rc == 0, "auth exits when master closes (rc=%s)" % rc)
    log.close()
    text = open(logpath).read()
    check("auth failed: user=alice, method=PLAIN, rip=198.51.100.7, "
          "reason=password mismatch" in text, "log: password mismatch line")
    check("auth failed: user=nosuchuser, method=PLAIN, rip=198.51.100.7, "
          "reason=unknown user" in text, "log: unknown user line")
    check("reason=nologin" in text and "reason=uid out of range" in text,
          "log: nologin and uid lines")
    check("secret" not in text and "wrong" not in text, "no password in the log")
    if failures:
        print(text)
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
