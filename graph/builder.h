/* Internal to graph/: appending to the IR, and the cost model of a task. */
#ifndef ND_GRAPH_BUILDER_H
#define ND_GRAPH_BUILDER_H

#include "graph/ir.h"

/* Return the new index, or -1 when out of memory. */
int32_t nd__graph_add_tensor(nd_graph *g, const nd_tensor *t);
int32_t nd__graph_add_task(nd_graph *g, const nd_task *t, const nd_access *acc, int n);

/* FLOPs of a task from its kind and sizes (one convention for the whole project). */
int64_t nd__task_flops(const nd_task *t);

#endif
