# index/index.mk: moat's per-mailbox index files (moat.index, moat.index.log,
# moat.index.cache), their unit/model tests, the crash test and a benchmark.
# Formats: doc/index-format.md.
noinst_LIBRARIES += index/libmailindex.a
index_libmailindex_a_SOURCES = \
	index/mail-index.c index/mail-index.h index/mail-index-private.h \
	index/mail-index-map.c \
	index/mail-index-modseq.c \
	index/mail-index-view.c \
	index/mail-index-transaction.c \
	index/mail-transaction-log.c index/mail-transaction-log.h \
	index/mail-cache.c index/mail-cache.h
LIBMAILINDEX = index/libmailindex.a

MAILINDEX_TEST_LDADD = $(LIBMAILINDEX) tests/unit/libtest.a $(LIBMOAT) $(ZLIB_LIBS)
MAILINDEX_TESTS = \
	tests/unit/test-mail-index \
	tests/unit/test-mail-transaction-log \
	tests/unit/test-mail-cache \
	tests/unit/test-mail-index-model \
	tests/unit/test-mail-index-ckpt \
	tests/unit/test-mail-index-modseq
check_PROGRAMS += $(MAILINDEX_TESTS) tests/crash/crash-index
TESTS += $(MAILINDEX_TESTS)
tests_unit_test_mail_index_LDADD = $(MAILINDEX_TEST_LDADD)
tests_unit_test_mail_transaction_log_LDADD = $(MAILINDEX_TEST_LDADD)
tests_unit_test_mail_cache_LDADD = $(MAILINDEX_TEST_LDADD)
tests_unit_test_mail_index_model_LDADD = $(MAILINDEX_TEST_LDADD)
tests_unit_test_mail_index_ckpt_LDADD = $(MAILINDEX_TEST_LDADD)
tests_unit_test_mail_index_modseq_LDADD = $(MAILINDEX_TEST_LDADD)
tests_unit_test_mail_index_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
tests_unit_test_mail_transaction_log_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
tests_unit_test_mail_cache_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
tests_unit_test_mail_index_model_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
tests_unit_test_mail_index_ckpt_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
tests_unit_test_mail_index_modseq_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit

# Crash test: SIGKILLs a committing child many times (tests/crash/run.sh).
tests_crash_crash_index_SOURCES = tests/crash/crash-index.c
tests_crash_crash_index_LDADD = $(LIBMAILINDEX) $(LIBMOAT) $(ZLIB_LIBS)
EXTRA_DIST += tests/crash/run.sh tests/fuzz/fuzz-index-files.c

noinst_PROGRAMS += index/bench-mail-index
index_bench_mail_index_SOURCES = index/bench-mail-index.c
index_bench_mail_index_LDADD = $(LIBMAILINDEX) $(LIBMOAT) $(ZLIB_LIBS)

# A second writer process for tests/protocol/test_concurrent_writers.py
# (appends, \Flagged toggles and expunges through the mailbox API).
check_PROGRAMS += index/mailbox-writer
index_mailbox_writer_SOURCES = index/mailbox-writer.c
index_mailbox_writer_LDADD = $(LIBINDEX) $(LIBMAILINDEX) $(LIBMOAT) $(ZLIB_LIBS)
