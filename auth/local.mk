# auth/: the SASL engine, passdb/userdb and the login token table.
# The pure modules form a convenience library so the unit tests link
# exactly the code the daemon runs.
noinst_LIBRARIES += auth/libauthcore.a
auth_libauthcore_a_SOURCES = \
	auth/auth-cache.c auth/auth-cache.h \
	auth/auth-db.c auth/auth-db.h \
	auth/auth-fields.c auth/auth-fields.h \
	auth/auth-oauth2-file.c auth/auth-oauth2-file.h \
	auth/auth-penalty.c auth/auth-penalty.h \
	auth/auth-token.c auth/auth-token.h \
	auth/auth-worker-protocol.c auth/auth-worker-protocol.h \
	auth/passwd-file.c auth/passwd-file.h \
	auth/password-scheme.c auth/password-scheme.h \
	auth/password-scheme-private.h auth/password-scheme-hash.c \
	auth/password-crypto.c auth/password-crypto.h \
	auth/password-scram.c auth/password-scram.h \
	auth/password-generate.c auth/password-generate.h \
	auth/sasl-mech.c auth/sasl-mech.h \
	auth/sasl-plain.c auth/sasl-login.c auth/sasl-scram.c \
	auth/sasl-cram-md5.c auth/sasl-oauth.c auth/sasl-external.c

pkglibexec_PROGRAMS += auth/auth
auth_auth_SOURCES = \
	auth/main.c auth/auth-common.h \
	auth/auth-client.c auth/auth-client.h \
	auth/auth-request.c auth/auth-request.h \
	auth/auth-stats.c auth/auth-stats.h \
	auth/auth-master.c auth/auth-master.h \
	auth/auth-penalty-sync.c auth/auth-penalty-sync.h \
	auth/auth-userdb.c auth/auth-userdb.h \
	auth/auth-worker-client.c auth/auth-worker-client.h
# No $(SSL_LIBS): auth/password-crypto.c opens libcrypto when a scheme
# needs it (the headers come from $(SSL_CFLAGS)).
AUTH_CORE_LIBS = auth/libauthcore.a $(LIBMOAT) $(CRYPT_LIBS) $(ARGON2_LIBS) \
	$(DL_LIBS)
auth_auth_LDADD = $(AUTH_CORE_LIBS)
auth_libauthcore_a_CPPFLAGS = $(AM_CPPFLAGS) $(ARGON2_CFLAGS) $(SSL_CFLAGS)

# Root helpers for the blocking lookups: PAM, shadow, passwd.
pkglibexec_PROGRAMS += auth/auth-worker
auth_auth_worker_SOURCES = \
	auth/auth-worker-main.c \
	auth/auth-worker-db.c auth/auth-worker-db.h
auth_auth_worker_LDADD = auth/libauthcore.a $(LIBMOAT) $(PAM_LIBS) \
	$(CRYPT_LIBS)

# The admin's password hashing tool (doc/moat-pw.1).
sbin_PROGRAMS += auth/moat-pw
auth_moat_pw_SOURCES = auth/moat-pw.c
auth_moat_pw_LDADD = $(AUTH_CORE_LIBS)

AUTH_UNIT_LDADD = tests/unit/libtest.a $(AUTH_CORE_LIBS)
AUTH_UNIT_TESTS = \
	auth/test-password-scheme \
	auth/test-passwd-file \
	auth/test-sasl \
	auth/test-sasl-scram \
	auth/test-auth-token \
	auth/test-auth-penalty \
	auth/test-auth-cache \
	auth/test-auth-worker-protocol
check_PROGRAMS += $(AUTH_UNIT_TESTS)
TESTS += $(AUTH_UNIT_TESTS)
auth_test_password_scheme_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
auth_test_password_scheme_LDADD = $(AUTH_UNIT_LDADD)
auth_test_passwd_file_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
auth_test_passwd_file_LDADD = $(AUTH_UNIT_LDADD)
auth_test_sasl_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
auth_test_sasl_LDADD = $(AUTH_UNIT_LDADD)
auth_test_sasl_scram_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
auth_test_sasl_scram_LDADD = $(AUTH_UNIT_LDADD)
auth_test_auth_token_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
auth_test_auth_token_LDADD = $(AUTH_UNIT_LDADD)
auth_test_auth_penalty_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
auth_test_auth_penalty_LDADD = $(AUTH_UNIT_LDADD)
auth_test_auth_cache_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
auth_test_auth_cache_LDADD = $(AUTH_UNIT_LDADD)

# End-to-end: runs auth/auth with this script playing master and an
# imap-login (socketpairs, config memfd); no root or network needed.
TESTS += auth/test-auth-process.sh
EXTRA_DIST += auth/test-auth-process.sh auth/test-auth-process.py

# Every scheme against hashes made by argon2, openssl, mkpasswd and python
# at test time, through moat-pw -t.
TESTS += auth/test-password-vectors.sh
EXTRA_DIST += auth/test-password-vectors.sh auth/test-password-vectors.py
auth_test_auth_worker_protocol_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
auth_test_auth_worker_protocol_LDADD = $(AUTH_UNIT_LDADD)
