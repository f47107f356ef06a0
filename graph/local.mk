# graph: the task-graph IR of one training step (no StarPU here).
libndgraph_internal_la_SOURCES += graph/ir.c graph/ir.h graph/builder.h graph/cost.c graph/kinds.c graph/kinds.h graph/gpt.c \
	graph/plan.c graph/plan.h graph/shard.c graph/shard.h graph/split.c graph/split.h \
	graph/priority.c graph/priority.h
