# graph: the task-graph IR of one training step (no StarPU here).
libndgraph_internal_la_SOURCES += graph/ir.c graph/ir.h graph/builder.h graph/cost.c graph/kinds.c graph/kinds.h graph/state.c graph/state.h graph/emit.c graph/emit.h \
	graph/optim.c graph/optim.h graph/gather.c graph/gather.h graph/gradbuf.c graph/gradbuf.h graph/dpchunk.c graph/dpchunk.h graph/model.h graph/build.c graph/stage.c graph/ring.c graph/gpt.c graph/llama.c graph/generate.c \
	graph/plan.c graph/plan.h graph/shard.c graph/shard.h graph/split.c graph/split.h \
	graph/priority.c graph/priority.h graph/bound.c graph/bound.h
