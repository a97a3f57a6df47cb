# index/mime.mk: the MIME parser and IMAP structure generators
# (ENVELOPE, BODY, BODYSTRUCTURE), their unit tests and mime-dump.
noinst_LIBRARIES += index/libmime.a
index_libmime_a_SOURCES = \
	index/message-header.c index/message-header.h \
	index/message-parser.c index/message-parser.h \
	index/message-address.c index/message-address.h \
	index/message-date.c index/message-date.h \
	index/rfc2047.c index/rfc2047.h \
	index/rfc2231.c index/rfc2231.h \
	index/imap-envelope.c index/imap-envelope.h \
	index/imap-bodystructure.c index/imap-bodystructure.h
LIBMIME = index/libmime.a

noinst_PROGRAMS += index/mime-dump
index_mime_dump_SOURCES = index/mime-dump.c
index_mime_dump_LDADD = $(LIBMIME) $(LIBMOAT)

MIME_UNIT_TESTS = \
	tests/unit/test-message-parser \
	tests/unit/test-imap-envelope \
	tests/unit/test-imap-bodystructure \
	tests/unit/test-rfc2047 \
	tests/unit/test-message-address
check_PROGRAMS += $(MIME_UNIT_TESTS)
TESTS += $(MIME_UNIT_TESTS)
MIME_UNIT_LDADD = tests/unit/libtest.a $(LIBMIME) $(LIBMOAT)
tests_unit_test_message_parser_LDADD = $(MIME_UNIT_LDADD)
tests_unit_test_imap_envelope_LDADD = $(MIME_UNIT_LDADD)
tests_unit_test_imap_bodystructure_LDADD = $(MIME_UNIT_LDADD)
tests_unit_test_rfc2047_LDADD = $(MIME_UNIT_LDADD)
tests_unit_test_message_address_LDADD = $(MIME_UNIT_LDADD)

# libFuzzer target: built by hand (needs clang), see the file's header.
EXTRA_DIST += tests/fuzz/fuzz-message-parser.c \
	tests/compare/compare-dovecot-mime.sh tests/compare/compare_mime.py
