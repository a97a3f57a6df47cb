# index/index.mk: index, transaction log and cache files (being written)
