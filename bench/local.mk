# bench/local.mk: imapload, the IMAP load generator (standalone C: it does
# not link lib/, so the benchmark does not change when the server's library
# does). bench/compare.sh and bench/smoke.sh drive it.
noinst_PROGRAMS += bench/imapload
bench_imapload_SOURCES = \
	bench/imapload.c \
	bench/imapload.h \
	bench/bench-client.c \
	bench/bench-client.h \
	bench/bench-workload.c \
	bench/bench-stats.c \
	bench/bench-source.c \
	bench/stress.h \
	bench/stress-parse.c \
	bench/stress-model.c \
	bench/stress-session.c \
	bench/stress-send.c \
	bench/stress-reply.c \
	bench/stress-run.c
EXTRA_DIST += bench/compare.sh bench/smoke.sh bench/servers.sh bench/mkmaildir.py \
	bench/stress.sh bench/tls-handshakes.py bench/first-select.sh \
	bench/big-mailbox-client.py
