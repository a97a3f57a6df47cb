# index/: mail storage (Maildir++ with moat.uidlist; index, log and cache
# files come next). Used by imap/ and later lmtp/ and the admin tool.
noinst_LIBRARIES += index/libindex.a
index_libindex_a_SOURCES = \
	index/mail-flags.h \
	index/maildir-filename.c index/maildir-filename.h \
	index/maildir-uidlist.c index/maildir-uidlist.h \
	index/maildir-sync.c \
	index/maildir-sync-renames.c index/maildir-sync-renames.h \
	index/maildir-uidlist-find.c index/maildir-uidlist-find.h \
	index/maildir-name-sort.c index/maildir-name-sort.h \
	index/maildir-save.c \
	index/maildir-save-multi.c index/mailbox-append-multi.h \
	index/maildir-keywords.c index/maildir-keywords.h \
	index/maildir-copy.c \
	index/mailbox-keywords.c \
	index/mail-crlf.c index/mail-crlf.h \
	index/mailbox.c index/mailbox.h index/mailbox-private.h \
	index/mailbox-read-ahead.c index/mailbox-read-ahead.h \
	index/mailbox-modseq.c \
	index/mailbox-uidset.c index/mailbox-uidset.h \
	index/maildir-uidlist-lookup.c index/maildir-uidlist-lookup.h \
	index/mailbox-name.c index/mailbox-name.h \
	index/mailbox-list.c index/mailbox-list.h index/mailbox-list-private.h \
	index/mailbox-list-ops.c index/mailbox-subscriptions.c \
	index/maildir-watch.c index/maildir-watch.h \
	index/maildir-ghost.c index/maildir-ghost.h \
	index/maildir-staged.c \
	index/maildir-import.c index/maildir-import.h \
	index/maildir-import-dovecot.c index/maildir-import-courier.c \
	index/mailbox-import.c \
	index/mailbox-delivery.c \
	index/mailbox-quota.c index/mailbox-quota.h \
	index/mailbox-quota-account.c index/mailbox-quota-warning.c \
	index/mailbox-check.c index/mailbox-check.h \
	index/mailbox-objectid.c index/mailbox-objectid.h
LIBINDEX = index/libindex.a

INDEX_TEST_LDADD = $(LIBINDEX) $(LIBMAILINDEX) tests/unit/libtest.a $(LIBMOAT) \
	$(ZLIB_LIBS)
INDEX_TESTS = \
	index/test-maildir-filename \
	index/test-maildir-name-sort \
	index/test-maildir-uidlist \
	index/test-mailbox \
	index/test-maildir-keywords \
	index/test-mailbox-copy \
	index/test-mailbox-append-multi \
	index/test-maildir-watch \
	index/test-mailbox-quota \
	index/test-mailbox-delivery
check_PROGRAMS += $(INDEX_TESTS)
TESTS += $(INDEX_TESTS)
index_test_maildir_filename_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_name_sort_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_name_sort_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_maildir_uidlist_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_filename_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_maildir_uidlist_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_mailbox_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_maildir_keywords_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_copy_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_keywords_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_mailbox_copy_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_mailbox_append_multi_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_append_multi_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_maildir_watch_LDADD = $(INDEX_TEST_LDADD)
# taking over Dovecot's and Courier's files (maildir-import.h)
check_PROGRAMS += index/test-maildir-import
TESTS += index/test-maildir-import
index_test_maildir_import_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_import_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_maildir_watch_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_mailbox_quota_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_quota_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_mailbox_delivery_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_delivery_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit

# mailbox names and the mailbox list (LIST, CREATE, DELETE, RENAME)
INDEX_TESTS_LIST = index/test-mailbox-name index/test-mailbox-list
check_PROGRAMS += $(INDEX_TESTS_LIST)
TESTS += $(INDEX_TESTS_LIST)
index_test_mailbox_name_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_list_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_name_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
index_test_mailbox_list_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit

# SEARCH programs (mail-search.h): parsing and evaluation; the header and
# MIME parts come from libmime, so users of these files link $(LIBMIME).
index_libindex_a_SOURCES += \
	index/mail-search.c index/mail-search.h index/mail-search-private.h \
	index/mail-search-parse.c index/mail-search-text.c \
	index/mail-search-fold.c index/mail-search-address.c
check_PROGRAMS += index/test-mail-search
TESTS += index/test-mail-search
index_test_mail_search_LDADD = $(LIBINDEX) $(LIBMAILINDEX) $(LIBMIME) \
	tests/unit/libtest.a $(LIBMOAT) $(ZLIB_LIBS)
index_test_mail_search_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit

# the mailbox layer on moat.index: reopen without file access, external
# changes, rebuild of a lost index, cache wrappers; and a benchmark
check_PROGRAMS += index/test-mailbox-index
TESTS += index/test-mailbox-index
index_test_mailbox_index_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_index_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
# a session's view over the index: pending expunges, hidden appends,
# \Recent across sessions, the uid sets and the sparse uidlist lookup
check_PROGRAMS += index/test-mailbox-view
TESTS += index/test-mailbox-view
index_test_mailbox_view_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_view_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
# the first index of a Maildir written straight into moat.index, and a
# crash at each step of that build
check_PROGRAMS += index/test-mailbox-first-build
TESTS += index/test-mailbox-first-build
index_test_mailbox_first_build_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_first_build_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
# expunged messages kept readable for the other session views (ghosts)
check_PROGRAMS += index/test-maildir-ghost
TESTS += index/test-maildir-ghost
index_test_maildir_ghost_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_ghost_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
# a directory scan racing another process's STORE or EXPUNGE between its
# readdir and its lock (two processes, the race order forced)
check_PROGRAMS += index/test-maildir-sync-race
TESTS += index/test-maildir-sync-race
index_test_maildir_sync_race_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_sync_race_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
noinst_PROGRAMS += index/bench-mailbox
index_bench_mailbox_SOURCES = index/bench-mailbox.c
index_bench_mailbox_LDADD = $(LIBINDEX) $(LIBMAILINDEX) $(LIBMOAT) $(ZLIB_LIBS)

# STATUS from the index alone (mailbox-status.c) and the cached folder list
# of LIST (mailbox-list-cache.c)
index_libindex_a_SOURCES += index/mailbox-status.c index/mailbox-list-cache.c
check_PROGRAMS += index/test-mailbox-status
TESTS += index/test-mailbox-status
index_test_mailbox_status_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_status_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit

# reading message files ahead (mailbox-read-ahead.c, on lib/prefetch-thread.c)
check_PROGRAMS += index/test-mailbox-read-ahead
TESTS += index/test-mailbox-read-ahead
index_test_mailbox_read_ahead_LDADD = $(INDEX_TEST_LDADD)
index_test_mailbox_read_ahead_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit

# RFC 8474 object ids (mailbox-objectid.c, mailbox-threadid.c)
check_PROGRAMS += index/test-mailbox-objectid
TESTS += index/test-mailbox-objectid
index_test_mailbox_objectid_LDADD = $(LIBINDEX) $(LIBMAILINDEX) $(LIBMIME) \
	tests/unit/libtest.a $(LIBMOAT) $(ZLIB_LIBS)
index_test_mailbox_objectid_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit

# SORT/THREAD keys in the cache (mail-sort-keys.c) and the RFC 5256 base
# subject (imap-base-subject.c); they use libmime's header parsers
index_libindex_a_SOURCES += \
	index/imap-base-subject.c index/imap-base-subject.h \
	index/mail-sort-keys.c index/mail-sort-keys.h index/mail-sort-msgid.c \
	index/mailbox-threadid.c
check_PROGRAMS += tests/unit/test-imap-base-subject
TESTS += tests/unit/test-imap-base-subject
tests_unit_test_imap_base_subject_LDADD = $(LIBINDEX) $(LIBMAILINDEX) \
	$(LIBMIME) tests/unit/libtest.a $(LIBMOAT) $(ZLIB_LIBS)
# another tool's renames in cur/ applied from the watch, without a readdir
check_PROGRAMS += index/test-maildir-sync-renames
TESTS += index/test-maildir-sync-renames
index_test_maildir_sync_renames_LDADD = $(INDEX_TEST_LDADD)
index_test_maildir_sync_renames_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/unit
