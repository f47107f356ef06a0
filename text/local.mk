# text: the tokenizer (a Hugging Face tokenizer.json), included by the top-level Makefile.am.
libndgraph_internal_la_SOURCES += text/tokenizer.h text/load.c text/encode.c text/bpe.c text/decode.c \
	text/stream.c text/map.c text/map.h text/utf8.c text/utf8.h
