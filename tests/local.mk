# tests/unit: one C test program per lib/ and index/ module (make check).
noinst_LIBRARIES += tests/unit/libtest.a
tests_unit_libtest_a_SOURCES = tests/unit/test-common.c tests/unit/test-common.h

UNIT_LDADD = tests/unit/libtest.a $(LIBMOAT)
UNIT_TESTS = \
	tests/unit/test-lib \
	tests/unit/test-mempool \
	tests/unit/test-buffer \
	tests/unit/test-strfuncs \
	tests/unit/test-sha256 \
	tests/unit/test-crc32c \
	tests/unit/test-hash \
	tests/unit/test-utf8 \
	tests/unit/test-ioloop \
	tests/unit/test-fsync-thread \
	tests/unit/test-prefetch-thread \
	tests/unit/test-iostream \
	tests/unit/test-ipc \
	tests/unit/test-ktls \
	tests/unit/test-safe-open \
	tests/unit/test-imap-parser \
	tests/unit/test-imap-seqset-parse \
	tests/unit/test-config \
	tests/unit/test-log \
	tests/unit/test-unicode-casemap \
	tests/unit/test-seccomp \
	tests/unit/test-landlock \
	tests/unit/test-haproxy-header \
	tests/unit/test-auth-client-protocol \
	tests/unit/test-sock-linger
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)

tests_unit_test_lib_LDADD = $(UNIT_LDADD)
tests_unit_test_mempool_LDADD = $(UNIT_LDADD)
tests_unit_test_buffer_LDADD = $(UNIT_LDADD)
tests_unit_test_strfuncs_LDADD = $(UNIT_LDADD)
# OpenSSL only as the reference the test compares with
tests_unit_test_crc32c_LDADD = $(UNIT_LDADD)
tests_unit_test_hash_LDADD = $(UNIT_LDADD)
tests_unit_test_sha256_LDADD = $(UNIT_LDADD) $(SSL_LIBS)
tests_unit_test_sha256_CFLAGS = $(AM_CFLAGS) $(SSL_CFLAGS)
tests_unit_test_utf8_LDADD = $(UNIT_LDADD)
tests_unit_test_ioloop_LDADD = $(UNIT_LDADD)
tests_unit_test_fsync_thread_LDADD = $(UNIT_LDADD)
tests_unit_test_prefetch_thread_LDADD = $(UNIT_LDADD)
tests_unit_test_iostream_LDADD = $(UNIT_LDADD)
tests_unit_test_ipc_LDADD = $(UNIT_LDADD)
tests_unit_test_ktls_LDADD = $(UNIT_LDADD)
tests_unit_test_safe_open_LDADD = $(UNIT_LDADD)
tests_unit_test_imap_parser_LDADD = $(UNIT_LDADD)
tests_unit_test_imap_seqset_parse_LDADD = $(UNIT_LDADD)
tests_unit_test_config_LDADD = $(UNIT_LDADD)
tests_unit_test_log_LDADD = $(UNIT_LDADD)
tests_unit_test_unicode_casemap_LDADD = $(UNIT_LDADD)
tests_unit_test_seccomp_LDADD = $(UNIT_LDADD)
tests_unit_test_landlock_LDADD = $(UNIT_LDADD)
tests_unit_test_haproxy_header_LDADD = $(UNIT_LDADD)
tests_unit_test_auth_client_protocol_LDADD = $(UNIT_LDADD)
tests_unit_test_sock_linger_LDADD = $(UNIT_LDADD)
# the whole table against Python's unicodedata (needs test-unicode-casemap)
TESTS += tests/unit/check-unicode-casemap-ucd.sh
EXTRA_DIST += tests/unit/check-unicode-casemap-ucd.sh \
	tests/unit/check-unicode-casemap-ucd.py

EXTRA_DIST += tests/protocol tests/fuzz tests/compare tests/crash/run-imap.sh tests/crash/crash_imap.py tests/crash/run-lmtp.sh tests/crash/crash_lmtp.py
EXTRA_DIST += tests/pkg/run.sh tests/pkg/run-server.py
