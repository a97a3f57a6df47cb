# index/: mail storage (Maildir++ with moat.uidlist; index, log and cache
# files come next). Used by imap/ and later lmtp/ and the admin tool.
noinst_LIBRARIES += index/libindex.a
index_libindex_a_SOURCES = \
	index/mail-flags.h \
	index/maildir-filename.c index/maildir-filename.h \
	index/maildir-uidlist.c index/maildir-uidlist.h \
	index/maildir-sync.c \
	index/maildir-save.c \
	index/mail-crlf.c index/mail-crlf.h \
	index/mailbox.c index/mailbox.h index/mailbox-private.h
LIBINDEX = index/libindex.a

INDEX_TEST_LDADD = $(LIBINDEX) tests/unit/libtest.a $(LIBMOAT)
INDEX_TESTS = \
	index/test-maildir-filename \
	index/test-maildir-uidlist \
	index/test-mailbox
check_PROGRAMS += $(INDEX_TESTS)
TESTS += $(INDEX_TESTS)
index_test_maildir_filename_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_uidlist_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_filename_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_maildir_uidlist_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_mailbox_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
