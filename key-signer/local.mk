# key-signer/: holds the TLS private key and signs handshakes for
# imap-login (ssl_key_isolation = yes). keyd-protocol.c is linked into
# imap-login too: both sides compute the key id the same way.
pkglibexec_PROGRAMS += key-signer/key-signer
key_signer_key_signer_SOURCES = \
	key-signer/main.c key-signer/key-signer-common.h \
	key-signer/keyd-conn.c \
	key-signer/keyd-sign.c key-signer/keyd-sign.h \
	key-signer/keyd-protocol.c key-signer/keyd-protocol.h
key_signer_key_signer_CFLAGS = $(AM_CFLAGS) $(SSL_CFLAGS)
key_signer_key_signer_LDADD = $(LIBMOAT) $(SSL_LIBS)

# Unit test: the signatures verify with the public key for every
# algorithm and digest, and what does not fit is refused.
check_PROGRAMS += key-signer/test-keyd-sign
TESTS += key-signer/test-keyd-sign
key_signer_test_keyd_sign_SOURCES = \
	key-signer/test-keyd-sign.c \
	key-signer/keyd-sign.c key-signer/keyd-protocol.c
key_signer_test_keyd_sign_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
key_signer_test_keyd_sign_CFLAGS = $(AM_CFLAGS) $(SSL_CFLAGS)
key_signer_test_keyd_sign_LDADD = tests/unit/libtest.a $(LIBMOAT) $(SSL_LIBS)
