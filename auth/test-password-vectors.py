#!/usr/bin/env python3
"""Every password scheme against hashes made by other tools at test time
(argon2, openssl passwd, mkpasswd, doveadm pw, python hashlib/hmac), checked with
moat-pw -t; and moat-pw's own hashes checked by python where python can.
usage: test-password-vectors.py path/to/moat-pw"""
import base64
import hashlib
import hmac
import os
import shutil
import subprocess
import sys

MOAT_PW = sys.argv[1]
PASSWORD = "pencil \u00e9t\u00e9"   # a space and UTF-8 on purpose
failed = 0


def check(name, ok):
    global failed
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        failed += 1


def verify(stored, password):
    r = subprocess.run([MOAT_PW, "-p", password, "-t", stored],
                       capture_output=True, text=True)
    return r.returncode


def vector(name, stored):
    check(name + " right password", verify(stored, PASSWORD) == 0)
    check(name + " wrong password", verify(stored, PASSWORD + "x") == 1)


def tool(*args, stdin=None):
    return subprocess.run(args, input=stdin, capture_output=True, text=True,
                          check=True).stdout.strip()


def ssha(algo, salt):
    h = hashlib.new(algo, PASSWORD.encode() + salt).digest()
    return base64.b64encode(h + salt).decode()


def pbkdf2(salt, rounds):
    key = hashlib.pbkdf2_hmac("sha1", PASSWORD.encode(), salt.encode(),
                              rounds, 20)
    return "$1$%s$%d$%s" % (salt, rounds, key.hex())


def scram(algo, salt, iters):
    salted = hashlib.pbkdf2_hmac(algo, PASSWORD.encode(), salt, iters)
    ckey = hmac.new(salted, b"Client Key", algo).digest()
    stored = hashlib.new(algo, ckey).digest()
    skey = hmac.new(salted, b"Server Key", algo).digest()
    b64 = lambda b: base64.b64encode(b).decode()
    return "%d,%s,%s,%s" % (iters, b64(salt), b64(stored), b64(skey))


def main():
    salt = os.urandom(16)
    vector("{PLAIN}", "{PLAIN}" + PASSWORD)
    vector("{SSHA256} hashlib", "{SSHA256}" + ssha("sha256", salt))
    vector("{SSHA512} hashlib", "{SSHA512}" + ssha("sha512", salt[:8]))
    vector("{PBKDF2} hashlib", "{PBKDF2}" + pbkdf2("Zx8.abcdEFGH1234", 1000))
    vector("{SCRAM-SHA-256} hashlib",
           "{SCRAM-SHA-256}" + scram("sha256", salt, 4096))
    vector("{SCRAM-SHA-1} hashlib", "{SCRAM-SHA-1}" + scram("sha1", salt, 4096))
    for flag, scheme in (("-6", "SHA512-CRYPT"), ("-5", "SHA256-CRYPT"),
                         ("-1", "MD5-CRYPT")):
        h = tool("openssl", "passwd", flag, "-stdin", stdin=PASSWORD + "\n")
        vector("{%s} openssl passwd" % scheme, "{%s}%s" % (scheme, h))
        vector("{CRYPT} openssl passwd %s" % flag, "{CRYPT}" + h)
    if shutil.which("argon2"):
        asalt = base64.b64encode(salt).decode()[:16]
        for flag, scheme in (("-id", "ARGON2ID"), ("-i", "ARGON2I")):
            h = tool("argon2", asalt, flag, "-t", "2", "-m", "12", "-p", "2",
                     "-e", stdin=PASSWORD)
            vector("{%s} argon2 CLI" % scheme, "{%s}%s" % (scheme, h))
        # the other variant's prefix is refused, not silently accepted
        check("{ARGON2I} refuses $argon2id$",
              verify("{ARGON2I}" + h.replace("$argon2i$", "$argon2id$"),
                     PASSWORD) != 0)
    else:
        print("skip argon2 CLI not installed (Debian: argon2)")
    if shutil.which("mkpasswd"):
        for m, scheme in (("bcrypt", "BLF-CRYPT"), ("yescrypt", "CRYPT"),
                          ("sha512crypt", "SHA512-CRYPT")):
            h = tool("mkpasswd", "-m", m, "--stdin", stdin=PASSWORD)
            vector("{%s} mkpasswd -m %s" % (scheme, m), "{%s}%s" % (scheme, h))
    else:
        print("skip mkpasswd not installed (Debian: whois)")
    # Dovecot's own hashes (where Debian's dovecot-core is installed, as
    # bench/compare.sh and tests/compare do): the formats must be its.
    if shutil.which("doveadm"):
        for scheme in ("PBKDF2", "SSHA512", "SSHA256", "SCRAM-SHA-256",
                       "SCRAM-SHA-1", "ARGON2ID", "ARGON2I", "BLF-CRYPT",
                       "SHA512-CRYPT", "SHA256-CRYPT", "CRYPT", "PLAIN"):
            h = tool("doveadm", "pw", "-s", scheme, "-p", PASSWORD)
            vector("{%s} doveadm pw" % scheme, h)
    else:
        print("skip doveadm not installed (Debian: dovecot-core)")
    # a scheme whose prefix does not match is an error, not a match
    h = tool("openssl", "passwd", "-1", "-stdin", stdin=PASSWORD + "\n")
    check("{SHA512-CRYPT} refuses $1$", verify("{SHA512-CRYPT}" + h,
                                               PASSWORD) not in (0, 1))

    # moat-pw's own output, checked by moat-pw and (where it can) python
    for scheme in ("SHA512-CRYPT", "SHA256-CRYPT", "BLF-CRYPT", "ARGON2ID",
                   "ARGON2I", "PBKDF2", "SSHA512", "SSHA256", "SCRAM-SHA-256",
                   "SCRAM-SHA-1", "PLAIN", "MD5-CRYPT", "CRYPT"):
        rounds = ["-r", "4"] if scheme == "BLF-CRYPT" else []
        h = tool(MOAT_PW, "-s", scheme, "-p", PASSWORD, *rounds)
        check("moat-pw -s %s prefix" % scheme,
              h.startswith("{%s}" % scheme))
        vector("moat-pw -s " + scheme, h)
        data = h.split("}", 1)[1]
        if scheme.startswith("SSHA"):
            algo = "sha" + scheme[4:]
            raw = base64.b64decode(data)
            n = hashlib.new(algo).digest_size
            check("python checks " + scheme,
                  hashlib.new(algo, PASSWORD.encode() + raw[n:]).digest()
                  == raw[:n])
        elif scheme == "PBKDF2":
            _, _, s, r, _ = data.split("$")
            check("python checks PBKDF2", pbkdf2(s, int(r)) == data)
        elif scheme.startswith("SCRAM"):
            it, s, _, _ = data.split(",")
            algo = "sha256" if scheme.endswith("256") else "sha1"
            check("python checks " + scheme,
                  scram(algo, base64.b64decode(s), int(it)) == data)
    r = subprocess.run([MOAT_PW, "-s", "NOPE", "-p", "x"], capture_output=True)
    check("moat-pw refuses an unknown scheme", r.returncode != 0)
    print("%d failed" % failed)
    return 1 if failed else 0


sys.exit(main())
