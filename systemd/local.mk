# systemd/: moat.service, with the configured sbindir substituted, and the
# optional moat.socket.
EXTRA_DIST += systemd/moat.service.in systemd/moat.socket
if HAVE_SYSTEMD_UNIT
systemdsystemunit_DATA = systemd/moat.service systemd/moat.socket
endif
CLEANFILES += systemd/moat.service
systemd/moat.service: $(srcdir)/systemd/moat.service.in Makefile
	$(AM_V_GEN)mkdir -p systemd && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' $(srcdir)/systemd/moat.service.in >$@.tmp && \
	mv -f $@.tmp $@
