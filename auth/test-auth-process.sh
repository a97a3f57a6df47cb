#!/bin/sh
# make check wrapper for the end-to-end test of the auth process.
command -v python3 >/dev/null 2>&1 || exit 77
exec python3 "${srcdir:-.}/auth/test-auth-process.py" auth/auth
