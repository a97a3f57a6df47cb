# imap-login: pre-auth IMAP, chrooted and unprivileged; hands logged-in
# clients to master. No post-auth code is linked here.
pkglibexec_PROGRAMS += imap-login/imap-login
imap_login_imap_login_SOURCES = \
	imap-login/main.c \
	imap-login/imap-login-common.h \
	imap-login/login-process.c \
	imap-login/login-listen.c imap-login/login-listen.h \
	imap-login/login-client.c imap-login/login-client.h \
	imap-login/login-client-auth.c \
	imap-login/login-client-park.c \
	imap-login/login-client-tls.c \
	imap-login/login-client-haproxy.c \
	imap-login/login-ssl.c imap-login/login-ssl.h \
	imap-login/login-keyless.c imap-login/login-keyless.h \
	imap-login/login-keyd.c imap-login/login-keyd.h \
	key-signer/keyd-protocol.c key-signer/keyd-protocol.h \
	imap-login/login-proxy.c imap-login/login-proxy.h \
	imap-login/login-cmds.c \
	imap-login/login-id.c imap-login/login-id.h \
	imap-login/login-auth.c imap-login/login-auth.h \
	imap-login/login-master.c imap-login/login-master.h \
	imap-login/login-stats.c imap-login/login-stats.h \
	imap-login/login-capability.c imap-login/login-capability.h \
	imap-login/login-util.c imap-login/login-util.h
imap_login_imap_login_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/key-signer
imap_login_imap_login_CFLAGS = $(AM_CFLAGS) $(SSL_CFLAGS)
imap_login_imap_login_LDADD = $(LIBMOAT) $(SSL_LIBS)

# Unit test of the pure parts (capabilities, mechanisms, addresses,
# base64 and ID checks).
check_PROGRAMS += imap-login/test-imap-login
TESTS += imap-login/test-imap-login
imap_login_test_imap_login_SOURCES = \
	imap-login/test-imap-login.c \
	imap-login/login-capability.c \
	imap-login/login-util.c \
	imap-login/login-id.c \
	imap-login/login-stats.c
imap_login_test_imap_login_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
imap_login_test_imap_login_LDADD = tests/unit/libtest.a $(LIBMOAT)
