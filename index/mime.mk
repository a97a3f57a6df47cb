# index/mime.mk: MIME parser (being written)
