/* Plugin costs, applied to a graph after it is built. */
#include "train/costs.h"

#include "kernels/registry.h"

void nd__apply_plugin_costs(nd_graph *g) {
  for (int32_t i = 0; i < g->n_tasks; i++) nd__kernel_cost(&g->tasks[i]);
}
