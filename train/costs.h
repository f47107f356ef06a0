/* Plugin costs: a pass over a built graph, applied by whoever owns the
 * kernel table (the trainer, `plan`), so that graph/ needs no kernels. */
#ifndef ND_TRAIN_COSTS_H
#define ND_TRAIN_COSTS_H

#include "graph/ir.h"

/* Gives every task whose kernel comes with a cost model (a plugin's) that
 * model's FLOPs and bytes in place of the graph's estimate. */
void nd__apply_plugin_costs(nd_graph *g);

#endif
