# lda/: moat-lda, the delivery agent for mailbox_command (bin).
bin_PROGRAMS += lda/moat-lda
lda_moat_lda_SOURCES = lda/main.c
lda_moat_lda_LDADD = index/libindex.a $(LIBMAILINDEX) $(LIBMOAT) $(ZLIB_LIBS)
