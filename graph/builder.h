/* Internal to graph/: appending to the IR, and the cost model of a task. */
#ifndef ND_GRAPH_BUILDER_H
#define ND_GRAPH_BUILDER_H

#include "graph/ir.h"

/* Return the new index, or -1 when out of memory. */
int32_t nd__graph_add_tensor(nd_graph *g, const nd_tensor *t);
int32_t nd__graph_add_task(nd_graph *g, const nd_task *t, const nd_access *acc, int n);

/* FLOPs of a task from its kind and sizes (one convention for the whole
 * project): the cost function of its row in graph/kinds.c. */
int64_t nd__task_flops(const nd_task *t);

/* The cost functions of graph/cost.c, named by the rows of graph/kinds.c. */
int64_t nd__flops_none(const nd_task *t);
int64_t nd__flops_matmul(const nd_task *t);
int64_t nd__flops_attention(const nd_task *t);
int64_t nd__repeated_attention(const nd_task *t);
int64_t nd__flops_kv_attention(const nd_task *t);
int64_t nd__flops_layernorm(const nd_task *t);
int64_t nd__flops_elementwise(const nd_task *t);
int64_t nd__flops_embedding(const nd_task *t);
int64_t nd__flops_crossentropy(const nd_task *t);
int64_t nd__flops_allreduce(const nd_task *t);
int64_t nd__flops_adamw(const nd_task *t);
int64_t nd__flops_sumsq(const nd_task *t);

#endif
