# systemd/: moat.service, with the configured sbindir substituted.
EXTRA_DIST += systemd/moat.service.in
if HAVE_SYSTEMD_UNIT
systemdsystemunit_DATA = systemd/moat.service
endif
CLEANFILES += systemd/moat.service
systemd/moat.service: $(srcdir)/systemd/moat.service.in Makefile
	$(AM_V_GEN)mkdir -p systemd && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' $(srcdir)/systemd/moat.service.in >$@.tmp && \
	mv -f $@.tmp $@
