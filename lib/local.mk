# lib/: protocol-agnostic code shared by every process (no service policy).
noinst_LIBRARIES += lib/libmoat.a
lib_libmoat_a_SOURCES = \
	lib/lib.c lib/lib.h \
	lib/mempool.c lib/mempool.h \
	lib/buffer.c lib/buffer.h \
	lib/strfuncs.c lib/strfuncs.h \
	lib/log.c lib/log.h \
	lib/ioloop.c lib/ioloop.h \
	lib/iostream.c lib/iostream.h \
	lib/ktls.c lib/ktls.h \
	lib/ipc.c lib/ipc.h \
	lib/restrict.c lib/restrict.h \
	lib/imap-parser.c lib/imap-parser.h lib/imap-arg.c \
	lib/imap-seqset-parse.c lib/imap-seqset-parse.h \
	lib/config-parser.c lib/config-parser.h \
	lib/settings-def.c lib/settings-def.h \
	lib/moat-settings.c lib/moat-settings.h \
	lib/master-service.c lib/master-service.h
LIBMOAT = lib/libmoat.a $(CAP_LIBS)
