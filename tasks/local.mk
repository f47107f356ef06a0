# tasks: IR -> StarPU codelets and data handles, submission. One file per task kind.
libndgraph_la_SOURCES += tasks/codelets.h tasks/codelets.c tasks/exec.h tasks/exec.c tasks/runtime.c \
	tasks/matmul.c tasks/layernorm.c tasks/attention.c tasks/activation.c tasks/residual.c \
	tasks/embedding.c tasks/crossentropy.c tasks/collective.c tasks/optimizer.c tasks/load_batch.c
