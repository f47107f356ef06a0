# configs: files of this folder, included by the top-level Makefile.am.
libndgraph_internal_la_SOURCES += \
	configs/config.h configs/config.c \
	configs/keys.h configs/keys.c configs/policies.h configs/policies.c \
	configs/value.c configs/format.c \
	configs/text.h configs/text.c \
	configs/reader.h configs/reader.c \
	configs/load.c configs/set.c configs/validate.c
EXTRA_DIST += configs/quickstart.yaml configs/llama-tiny.yaml
