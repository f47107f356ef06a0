# tasks: IR -> StarPU codelets (one generic codelet per kind) and data handles, submission.
libndgraph_la_SOURCES += tasks/codelets.h tasks/codelets.c tasks/exec.h tasks/exec.c tasks/runtime.c
