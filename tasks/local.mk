# tasks: IR -> StarPU codelets and data handles, submission (one file per task kind),
# and where the scheduler meets the executor (schedule.c, placement_report.c).
libndgraph_internal_la_SOURCES += tasks/codelets.h tasks/codelets.c tasks/exec.h tasks/exec.c tasks/runtime.c \
	tasks/matmul.c tasks/layernorm.c tasks/attention.c tasks/activation.c tasks/residual.c \
	tasks/embedding.c tasks/crossentropy.c tasks/collective.c tasks/optimizer.c tasks/load_batch.c \
	tasks/schedule.c tasks/schedule.h tasks/placement_report.c tasks/build_info.c
