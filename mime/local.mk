# mime/local.mk: the MIME parser and IMAP structure generators
# (ENVELOPE, BODY, BODYSTRUCTURE), their unit tests and mime-dump.
noinst_LIBRARIES += mime/libmime.a
mime_libmime_a_SOURCES = \
	mime/message-header.c mime/message-header.h \
	mime/message-parser.c mime/message-parser.h \
	mime/message-address.c mime/message-address.h \
	mime/message-date.c mime/message-date.h \
	mime/rfc2047.c mime/rfc2047.h \
	mime/rfc2231.c mime/rfc2231.h \
	mime/imap-envelope.c mime/imap-envelope.h \
	mime/imap-bodystructure.c mime/imap-bodystructure.h
LIBMIME = mime/libmime.a

noinst_PROGRAMS += mime/mime-dump
mime_mime_dump_SOURCES = mime/mime-dump.c
mime_mime_dump_LDADD = $(LIBMIME) $(LIBMOAT)

MIME_UNIT_TESTS = \
	tests/unit/test-message-parser \
	tests/unit/test-imap-envelope \
	tests/unit/test-imap-bodystructure \
	tests/unit/test-rfc2047 \
	tests/unit/test-message-address \
	tests/unit/test-mime-sections
check_PROGRAMS += $(MIME_UNIT_TESTS)
TESTS += $(MIME_UNIT_TESTS)
MIME_UNIT_LDADD = tests/unit/libtest.a $(LIBMIME) $(LIBMOAT)
tests_unit_test_message_parser_LDADD = $(MIME_UNIT_LDADD)
tests_unit_test_imap_envelope_LDADD = $(MIME_UNIT_LDADD)
tests_unit_test_imap_bodystructure_LDADD = $(MIME_UNIT_LDADD)
tests_unit_test_rfc2047_LDADD = $(MIME_UNIT_LDADD)
tests_unit_test_message_address_LDADD = $(MIME_UNIT_LDADD)
tests_unit_test_mime_sections_LDADD = $(MIME_UNIT_LDADD)

# libFuzzer target: built by hand (needs clang), see the file's header.
EXTRA_DIST += tests/fuzz/fuzz-message-parser.c \
	tests/compare/compare-dovecot-mime.sh tests/compare/compare_mime.py \
	tests/compare/mime_diff.py tests/compare/mime_gen.py \
	tests/compare/mime_known.py
