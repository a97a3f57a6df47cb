#!/bin/sh
# make check wrapper: password schemes against hashes from Debian tools.
command -v python3 >/dev/null 2>&1 || exit 77
command -v openssl >/dev/null 2>&1 || exit 77
exec python3 "${srcdir:-.}/auth/test-password-vectors.py" auth/moat-pw
