#!/bin/sh
# make check: lib/unicode-casemap.c against Python's Unicode database
# (tests/unit/check-unicode-casemap-ucd.py). Debian's python3 first (the
# one CI has); skipped when there is none.
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || { echo "SKIP: python3 is missing"; exit 77; }
exec "$py" "${srcdir:-.}/tests/unit/check-unicode-casemap-ucd.py" \
	./tests/unit/test-unicode-casemap
