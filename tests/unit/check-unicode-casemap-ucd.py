"""Compares lib/unicode-casemap.c (through test-unicode-casemap --dump)
with i;unicode-casemap (RFC 5051) computed here from Python's own Unicode
database: the simple titlecase mapping, then NFKD. An implementation
independent of lib/unicode-gen.c's, so a mistake in one shows.

Only code points assigned in both databases are compared (Python's may
be an older Unicode version than the tables'). Python's NFKD reorders
combining marks and RFC 5051 does not ask for that; a single code
point's decomposition is already in canonical order, so the two agree.

Usage: check-unicode-casemap-ucd.py PATH-TO-test-unicode-casemap"""

import subprocess
import sys
import unicodedata


def simple_title(ch):
    """Python's str.title() applies the full (SpecialCasing) mapping;
    where that is one code point it is also the simple mapping, and
    where it is several the simple mapping is empty (true for every
    SpecialCasing entry)."""
    t = ch.title()
    return t if len(t) == 1 else ch


def expected(cp):
    return unicodedata.normalize("NFKD", simple_title(chr(cp)))


def main():
    out = subprocess.run([sys.argv[1], "--dump"], check=True,
                         capture_output=True).stdout.decode("ascii")
    moat = {}
    for line in out.splitlines():
        cp, _, hexed = line.partition(": ")
        moat[int(cp, 16)] = bytes.fromhex(hexed).decode("utf-8")
    compared = differ = 0
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if unicodedata.category(chr(cp)) == "Cn":
            continue   # not assigned in Python's database
        want = expected(cp)
        got = moat.get(cp, chr(cp))
        compared += 1
        if got != want:
            differ += 1
            if differ <= 20:
                print("U+%04X %s: moat %s, expected %s" % (
                    cp, unicodedata.name(chr(cp), "?"),
                    " ".join("%04X" % ord(c) for c in got),
                    " ".join("%04X" % ord(c) for c in want)))
    print("compared %d code points (Python's Unicode %s), %d differ"
          % (compared, unicodedata.unidata_version, differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
