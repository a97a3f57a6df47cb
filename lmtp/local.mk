# lmtp/: the LMTP service (libexec/moat/lmtp). The protocol syntax and the
# message writer form a library so unit tests and the fuzz target link
# exactly the code the daemon runs.
noinst_LIBRARIES += lmtp/liblmtp.a
lmtp_liblmtp_a_SOURCES = \
	lmtp/lmtp-proto.c lmtp/lmtp-proto.h \
	lmtp/lmtp-data.c lmtp/lmtp-data.h

pkglibexec_PROGRAMS += lmtp/lmtp
lmtp_lmtp_SOURCES = \
	lmtp/main.c lmtp/lmtp-common.h \
	lmtp/lmtp-client.c lmtp/lmtp-client.h \
	lmtp/lmtp-delivery.c lmtp/lmtp-delivery.h \
	lmtp/lmtp-master.c lmtp/lmtp-master.h
lmtp_lmtp_LDADD = lmtp/liblmtp.a $(LIBMOAT)

LMTP_UNIT_TESTS = tests/unit/test-lmtp-proto tests/unit/test-lmtp-data
check_PROGRAMS += $(LMTP_UNIT_TESTS)
TESTS += $(LMTP_UNIT_TESTS)
tests_unit_test_lmtp_proto_LDADD = tests/unit/libtest.a lmtp/liblmtp.a $(LIBMOAT)
tests_unit_test_lmtp_proto_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lmtp
tests_unit_test_lmtp_data_LDADD = tests/unit/libtest.a lmtp/liblmtp.a $(LIBMOAT)
tests_unit_test_lmtp_data_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/lmtp
