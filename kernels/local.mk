# kernels: files of this folder, included by the top-level Makefile.am.
libndgraph_la_SOURCES += kernels/cpu/kernels.h \
	kernels/cpu/matmul.c kernels/cpu/layernorm.c kernels/cpu/attention.c \
	kernels/cpu/gelu.c kernels/cpu/residual.c kernels/cpu/embedding.c \
	kernels/cpu/crossentropy.c kernels/cpu/adamw.c kernels/cpu/reduce.c
