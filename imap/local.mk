# imap/: the post-login IMAP process, one per user (serves all of that
# user's connections). One file per command, dispatched from
# imap-commands.c.
pkglibexec_PROGRAMS += imap/imap
imap_imap_SOURCES = \
	imap/main.c \
	imap/imap-common.h \
	imap/imap-client.c imap/imap-client.h \
	imap/imap-commands.c imap/imap-commands.h \
	imap/imap-stats.c imap/imap-stats.h \
	imap/imap-sync.c imap/imap-sync.h \
	imap/imap-condstore.c imap/imap-condstore.h \
	imap/imap-seqset.c imap/imap-seqset.h \
	imap/imap-date.c imap/imap-date.h \
	imap/imap-fetch.c imap/imap-fetch.h \
	imap/imap-flags.c imap/imap-flags.h \
	imap/imap-notify.c imap/imap-notify.h \
	imap/imap-deliver.c imap/imap-deliver.h \
	imap/imap-commit.c imap/imap-commit.h \
	imap/imap-flag-sync.c imap/imap-flag-sync.h \
	imap/imap-mailbox.c imap/imap-mailbox.h \
	imap/imap-list.c imap/imap-list.h \
	imap/imap-status.c imap/imap-status.h \
	imap/imap-admin.c imap/imap-admin.h \
	imap/cmd-create.c \
	imap/cmd-delete.c \
	imap/cmd-list.c \
	imap/cmd-lsub.c \
	imap/cmd-namespace.c \
	imap/cmd-rename.c \
	imap/cmd-status.c \
	imap/cmd-subscribe.c \
	imap/cmd-append.c \
	imap/cmd-capability.c \
	imap/cmd-close.c \
	imap/cmd-copy.c \
	imap/cmd-enable.c \
	imap/cmd-expunge.c \
	imap/cmd-idle.c \
	imap/cmd-store.c \
	imap/cmd-fetch.c \
	imap/cmd-id.c \
	imap/cmd-logout.c \
	imap/cmd-noop.c \
	imap/cmd-select.c \
	imap/cmd-getquota.c imap/cmd-getquotaroot.c imap/cmd-setquota.c \
	imap/imap-quota.c imap/imap-quota.h
# COMPRESS=DEFLATE (RFC 4978): the deflate transport under the streams
imap_imap_SOURCES += imap/cmd-compress.c imap/imap-compress.c \
	imap/imap-compress.h
# NOTIFY (RFC 5465): events of the selected and other mailboxes
imap_imap_SOURCES += imap/cmd-notify.c imap/imap-notify-set.c \
	imap/imap-notify-set.h imap/imap-notify-send.c \
	imap/imap-notify-private.h imap/imap-notify-folders.c \
	imap/imap-fetch-now.c imap/imap-fetch-now.h
# UIDONLY (RFC 9586): UIDFETCH responses
imap_imap_SOURCES += imap/imap-uidonly.c imap/imap-uidonly.h
check_PROGRAMS += tests/unit/test-imap-compress
TESTS += tests/unit/test-imap-compress
tests_unit_test_imap_compress_SOURCES = tests/unit/test-imap-compress.c \
	imap/imap-compress.c
tests_unit_test_imap_compress_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/imap
tests_unit_test_imap_compress_LDADD = tests/unit/libtest.a index/libindex.a \
	$(LIBMAILINDEX) $(LIBMOAT) $(ZLIB_LIBS)
imap_imap_LDADD = index/libindex.a $(LIBMAILINDEX) $(LIBMOAT) $(ZLIB_LIBS)
# SEARCH (cmd-search.c, imap-search.c: ESEARCH, SEARCHRES "$")
imap_imap_SOURCES += imap/cmd-search.c imap/imap-search.c imap/imap-search.h
# CONTEXT=SEARCH (RFC 5267 4.3): RETURN (UPDATE), CANCELUPDATE
imap_imap_SOURCES += imap/imap-context.c imap/imap-context.h \
	imap/cmd-cancelupdate.c
imap_imap_LDADD += $(LIBMIME) $(LIBMOAT)
# FETCH sections, BINARY, ENVELOPE/BODYSTRUCTURE (needs $(LIBMIME), above)
imap_imap_SOURCES += imap/imap-fetch-body.c imap/imap-fetch-body.h \
	imap/imap-body-stream.c
# ENVELOPE/BODY/BODYSTRUCTURE (stored deflated) and HEADER.FIELDS through
# the mail cache
imap_imap_SOURCES += imap/imap-fetch-cache.c imap/imap-fetch-cache.h \
	imap/imap-fetch-hdr.c imap/imap-fetch-hdr.h \
	imap/imap-cache-text.c imap/imap-cache-text.h \
	imap/imap-text-memo.c imap/imap-text-memo.h
# FETCH PREVIEW (RFC 8970), through the mail cache too
imap_imap_SOURCES += imap/imap-preview.c imap/imap-preview.h \
	imap/imap-preview-lazy.c imap/imap-preview-lazy.h
check_PROGRAMS += tests/unit/test-imap-preview
TESTS += tests/unit/test-imap-preview
tests_unit_test_imap_preview_SOURCES = tests/unit/test-imap-preview.c \
	imap/imap-preview.c imap/imap-fetch-body.c imap/imap-body-stream.c \
	imap/imap-fetch-cache.c imap/imap-cache-text.c \
	imap/imap-text-memo.c
tests_unit_test_imap_preview_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/imap
tests_unit_test_imap_preview_LDADD = tests/unit/libtest.a index/libindex.a \
	$(LIBMAILINDEX) $(LIBMIME) $(LIBMOAT) $(ZLIB_LIBS)
check_PROGRAMS += tests/unit/test-imap-cache-text
TESTS += tests/unit/test-imap-cache-text
tests_unit_test_imap_cache_text_SOURCES = tests/unit/test-imap-cache-text.c \
	imap/imap-cache-text.c
tests_unit_test_imap_cache_text_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/imap
tests_unit_test_imap_cache_text_LDADD = tests/unit/libtest.a $(LIBMOAT) \
	$(ZLIB_LIBS)
check_PROGRAMS += tests/unit/test-imap-date
TESTS += tests/unit/test-imap-date
tests_unit_test_imap_date_SOURCES = tests/unit/test-imap-date.c \
	imap/imap-date.c
tests_unit_test_imap_date_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/imap
tests_unit_test_imap_date_LDADD = tests/unit/libtest.a index/libindex.a \
	$(LIBMAILINDEX) $(LIBMIME) $(LIBMOAT) $(ZLIB_LIBS)
check_PROGRAMS += tests/unit/test-imap-text-memo
TESTS += tests/unit/test-imap-text-memo
tests_unit_test_imap_text_memo_SOURCES = tests/unit/test-imap-text-memo.c \
	imap/imap-text-memo.c
tests_unit_test_imap_text_memo_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/imap
tests_unit_test_imap_text_memo_LDADD = tests/unit/libtest.a $(LIBMOAT)
check_PROGRAMS += tests/unit/test-imap-fetch-body
TESTS += tests/unit/test-imap-fetch-body
tests_unit_test_imap_fetch_body_SOURCES = tests/unit/test-imap-fetch-body.c \
	imap/imap-fetch-body.c imap/imap-body-stream.c \
	imap/imap-fetch-cache.c imap/imap-cache-text.c \
	imap/imap-text-memo.c
tests_unit_test_imap_fetch_body_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/imap
tests_unit_test_imap_fetch_body_LDADD = tests/unit/libtest.a index/libindex.a \
	$(LIBMAILINDEX) $(LIBMIME) $(LIBMOAT) $(ZLIB_LIBS)
# SORT and THREAD (RFC 5256, 5957, ESORT of 5267); keys from the cache
# through index/mail-sort-keys.c
imap_imap_SOURCES += imap/cmd-sort.c imap/cmd-thread.c \
	imap/imap-sort.c imap/imap-sort.h imap/imap-thread.c imap/imap-thread.h \
	imap/imap-thread-cache.c imap/imap-thread-cache.h
check_PROGRAMS += tests/unit/test-imap-thread
TESTS += tests/unit/test-imap-thread
tests_unit_test_imap_thread_SOURCES = tests/unit/test-imap-thread.c \
	imap/imap-thread.c
tests_unit_test_imap_thread_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/imap
tests_unit_test_imap_thread_LDADD = tests/unit/libtest.a $(LIBMOAT)
# the group commit of APPENDs (imap-commit.c)
check_PROGRAMS += tests/unit/test-imap-commit
TESTS += tests/unit/test-imap-commit
tests_unit_test_imap_commit_SOURCES = tests/unit/test-imap-commit.c \
	imap/imap-commit.c imap/imap-quota.c
tests_unit_test_imap_commit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/imap
tests_unit_test_imap_commit_LDADD = tests/unit/libtest.a index/libindex.a \
	$(LIBMAILINDEX) $(LIBMOAT) $(ZLIB_LIBS)
