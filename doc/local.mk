# doc/: man pages (installed) and the Markdown documentation (dist only).
dist_man_MANS += doc/moat.8 doc/moat.conf.5 doc/moat-pw.1 doc/moat-lda.1 doc/moatadm.8
EXTRA_DIST += doc/architecture.md doc/configuration.md doc/security.md doc/fuzzing.md doc/mail-storage.md doc/index-format.md doc/mime-differences.md doc/performance.md doc/imap4rev2.md doc/fail2ban.md doc/durability.md doc/extensions.md doc/migration.md doc/packaging.md
