/* What a step becomes: counts, FLOPs, communication, critical path and memory
 * per rank, computed from the IR alone. */
#ifndef ND_GRAPH_PLAN_H
#define ND_GRAPH_PLAN_H

#include <stdio.h>

#include "graph/ir.h"

typedef struct nd_rank_memory {
  nd_rank rank;
  int64_t bytes[ND_TENSOR_KIND_COUNT]; /* by tensor kind; activations are all slots together */
} nd_rank_memory;

typedef struct nd_plan {
  int64_t n_tasks, n_tensors, n_edges;
  int64_t per_kind[ND_TASK_KIND_COUNT];
  int64_t per_phase[ND_PHASE_COUNT];
  int64_t flops;          /* every task's work, repeated work included */
  int64_t model_flops;    /* the model's arithmetic: no repeated work, no pure communication */
  int64_t comm_bytes;     /* bytes crossing between ranks */
  int64_t critical_flops; /* FLOPs along the longest dependency path */
  int64_t critical_tasks; /* tasks on it */
  int n_ranks;
  nd_rank_memory *memory; /* [n_ranks] */
} nd_plan;

/* The part of task t's flops that is the model's own arithmetic (model_flops):
 * none for repeated work and pure communication. */
int64_t nd_plan_model_flops(const nd_task *t);

int nd_plan_compute(const nd_graph *g, nd_plan *out);
void nd_plan_free(nd_plan *p);

void nd_plan_print(FILE *f, const nd_graph *g, const nd_plan *p);
/* The same summary as one JSON object (the caller adds to it, prints it and
 * frees it with cJSON_Delete). */
struct cJSON *nd_plan_json(const nd_graph *g, const nd_plan *p);
/* The graph for Graphviz: one node per task coloured by phase, one edge per dependency. */
int nd_graph_write_dot(const nd_graph *g, const char *path, nd_error *err);

#endif
