# admin/: moatadm, the admin tool (sbin; doc/moatadm.8).
sbin_PROGRAMS += admin/moatadm
admin_moatadm_SOURCES = \
	admin/admin-common.h \
	admin/main.c \
	admin/admin-conn.c admin/admin-conn.h \
	admin/admin-output.c admin/admin-output.h \
	admin/admin-cmd-server.c \
	admin/admin-cmd-pw.c \
	admin/admin-imap.c admin/admin-imap.h \
	admin/admin-query.c admin/admin-query.h \
	admin/admin-cmd-mail.c
admin_moatadm_CPPFLAGS = $(AM_CPPFLAGS) -DMOAT_SBINDIR=\"$(sbindir)\"
admin_moatadm_LDADD = $(LIBINDEX) $(LIBMOAT)
