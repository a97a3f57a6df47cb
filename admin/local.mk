# admin/: moatadm, the admin tool (sbin; doc/moatadm.8).
# libadmin.a: the parts unit tests reach (query words, IMAP values, mbox,
# backup manifests).
noinst_LIBRARIES += admin/libadmin.a
admin_libadmin_a_SOURCES = \
	admin/admin-common.h \
	admin/admin-imap.c admin/admin-imap.h \
	admin/admin-mbox.c admin/admin-mbox.h \
	admin/admin-query.c admin/admin-query.h \
	admin/admin-backup-manifest.c admin/admin-backup.h

sbin_PROGRAMS += admin/moatadm
admin_moatadm_SOURCES = \
	admin/main.c \
	admin/admin-conn.c admin/admin-conn.h \
	admin/admin-output.c admin/admin-output.h \
	admin/admin-cmd-server.c \
	admin/admin-cmd-pw.c \
	admin/admin-cmd-dovecot.c \
	admin/admin-mail.c admin/admin-mail.h \
	admin/admin-users.c \
	admin/admin-progress.c admin/admin-progress.h \
	admin/admin-cmd-mailbox.c \
	admin/admin-cmd-mail.c \
	admin/admin-cmd-mbox.c \
	admin/admin-cmd-maildir.c admin/admin-maildir.h \
	admin/admin-cmd-backup.c
admin_moatadm_CPPFLAGS = $(AM_CPPFLAGS) $(SSL_CFLAGS) -DMOAT_SBINDIR=\"$(sbindir)\"
admin_moatadm_LDADD = admin/libadmin.a $(LIBINDEX) $(LIBMAILINDEX) $(LIBMIME) \
	$(LIBMOAT) $(ZLIB_LIBS) $(SSL_LIBS)

ADMIN_UNIT_TESTS = tests/unit/test-admin-query tests/unit/test-admin-mbox \
	tests/unit/test-admin-backup
check_PROGRAMS += $(ADMIN_UNIT_TESTS)
TESTS += $(ADMIN_UNIT_TESTS)
tests_unit_test_admin_query_LDADD = tests/unit/libtest.a admin/libadmin.a \
	$(LIBINDEX) $(LIBMOAT)
tests_unit_test_admin_query_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/admin
tests_unit_test_admin_mbox_LDADD = tests/unit/libtest.a admin/libadmin.a \
	$(LIBINDEX) $(LIBMOAT)
tests_unit_test_admin_mbox_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/admin
tests_unit_test_admin_backup_LDADD = tests/unit/libtest.a admin/libadmin.a \
	$(LIBINDEX) $(LIBMOAT) $(SSL_LIBS)
tests_unit_test_admin_backup_CPPFLAGS = $(AM_CPPFLAGS) $(SSL_CFLAGS) \
	-I$(top_srcdir)/admin
