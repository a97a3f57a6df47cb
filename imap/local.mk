# imap/: the post-login IMAP process, one per user (serves all of that
# user's connections). One file per command, dispatched from
# imap-commands.c.
pkglibexec_PROGRAMS += imap/imap
imap_imap_SOURCES = \
	imap/main.c \
	imap/imap-common.h \
	imap/imap-client.c imap/imap-client.h \
	imap/imap-commands.c imap/imap-commands.h \
	imap/imap-sync.c imap/imap-sync.h \
	imap/imap-seqset.c imap/imap-seqset.h \
	imap/imap-date.c imap/imap-date.h \
	imap/imap-fetch.c imap/imap-fetch.h \
	imap/cmd-append.c \
	imap/cmd-capability.c \
	imap/cmd-close.c \
	imap/cmd-fetch.c \
	imap/cmd-id.c \
	imap/cmd-logout.c \
	imap/cmd-noop.c \
	imap/cmd-select.c
imap_imap_LDADD = index/libindex.a $(LIBMOAT)
