# bench/local.mk: load generator (being written)
