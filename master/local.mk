# master/: the moat binary (sbin).
sbin_PROGRAMS += master/moat
master_moat_SOURCES = \
	master/master-common.h \
	master/main.c \
	master/master-settings.c \
	master/listener.c \
	master/service.c \
	master/master-fdlimit.c \
	master/service-login.c \
	master/login-limits.c \
	master/service-auth.c \
	master/service-auth-penalty.c \
	master/service-auth-worker.c \
	master/service-imap.c \
	master/service-lmtp.c \
	master/service-keyd.c \
	master/handoff.c \
	master/master-admin.h \
	master/master-admin-private.h \
	master/master-admin.c \
	master/master-admin-cmd.c \
	master/master-admin-log.c \
	master/master-admin-auth.c \
	master/master-admin-users.c \
	master/master-metrics.c master/master-metrics.h \
	master/master-notify.h \
	master/master-notify.c \
	master/master-activation.h \
	master/master-activation.c
master_moat_LDADD = $(LIBMOAT)
