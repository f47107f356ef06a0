# checkpoint: files of this folder, included by the top-level Makefile.am.
libndgraph_internal_la_SOURCES += checkpoint/safetensors.c checkpoint/safetensors.h \
	checkpoint/checkpoint.c checkpoint/checkpoint.h \
	checkpoint/model.c checkpoint/model.h checkpoint/hf_config.c checkpoint/hf_config.h checkpoint/hygiene.c \
	checkpoint/lock.c
