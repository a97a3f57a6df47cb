# lib/: protocol-agnostic code shared by every process (no service policy).
noinst_LIBRARIES += lib/libmoat.a
lib_libmoat_a_SOURCES = \
	lib/lib.c lib/lib.h \
	lib/mempool.c lib/mempool.h \
	lib/buffer.c lib/buffer.h \
	lib/strfuncs.c lib/strfuncs.h \
	lib/sha256.c lib/sha256.h \
	lib/crc32c.c lib/crc32c.h \
	lib/hash.h \
	lib/log.c lib/log.h \
	lib/ioloop.c lib/ioloop.h \
	lib/fsync-thread.c lib/fsync-thread.h \
	lib/prefetch-thread.c lib/prefetch-thread.h \
	lib/iostream.c lib/iostream.h \
	lib/latency-histogram.c lib/latency-histogram.h \
	lib/ktls.c lib/ktls.h \
	lib/ipc.c lib/ipc.h \
	lib/restrict.c lib/restrict.h \
	lib/seccomp-filter.h lib/seccomp-private.h \
	lib/seccomp-install.c lib/seccomp-table.c \
	lib/landlock.c lib/landlock.h \
	lib/sock-linger.c lib/sock-linger.h \
	lib/auth-client-protocol.c lib/auth-client-protocol.h \
	lib/safe-open.c lib/safe-open.h \
	lib/imap-parser.c lib/imap-parser.h lib/imap-arg.c \
	lib/imap-seqset-parse.c lib/imap-seqset-parse.h \
	lib/config-parser.c lib/config-parser.h \
	lib/settings-def.c lib/settings-def.h \
	lib/moat-settings.c lib/moat-settings.h \
	lib/master-service.c lib/master-service.h \
	lib/haproxy-header.c lib/haproxy-header.h \
	lib/unicode-casemap.c lib/unicode-casemap.h \
	lib/utf8.c lib/utf8.h

# i;unicode-casemap's tables, generated from UnicodeData.txt (configure
# finds it: --with-unicode-data) by a build-time tool that links nothing.
noinst_PROGRAMS += lib/unicode-gen
lib_unicode_gen_SOURCES = lib/unicode-gen.c
nodist_lib_libmoat_a_SOURCES = lib/unicode-casemap-data.h
BUILT_SOURCES += lib/unicode-casemap-data.h
CLEANFILES += lib/unicode-casemap-data.h
lib/unicode-casemap-data.h: lib/unicode-gen$(EXEEXT) $(UNICODE_DATA_DIR)/UnicodeData.txt
	$(AM_V_GEN)lib/unicode-gen$(EXEEXT) $(UNICODE_DATA_DIR)/UnicodeData.txt >$@.tmp && \
		mv -f $@.tmp $@

LIBMOAT = lib/libmoat.a $(CAP_LIBS) $(SECCOMP_LIBS)
