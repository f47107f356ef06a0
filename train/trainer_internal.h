/* Internal access to a trainer's executor and step graph, for tools inside
 * the library (tracing) that observe the step without changing it. */
#ifndef ND_TRAIN_TRAINER_INTERNAL_H
#define ND_TRAIN_TRAINER_INTERNAL_H

#include "graph/ir.h"
#include "ndgraph/ndgraph.h"
#include "tasks/exec.h"

nd_exec *nd__trainer_exec(nd_trainer *tr);
const nd_graph *nd__trainer_graph(const nd_trainer *tr);
const nd_config *nd__trainer_config(const nd_trainer *tr);
/* The trainer's kernel table (kernels/registry.h). */
struct nd_kernels *nd__trainer_kernels(const nd_trainer *tr);

/* parallelism.stage_layers: auto (train/balance.c). On the trainer's current
 * (even) split, finds the device kind each stage lands on; when they differ,
 * runs two calibration steps with every rank held to its devices, measures
 * each stage's per-layer time and its other work from the second, and
 * chooses the split that minimizes the slowest stage. Prints the split.
 * The steps change the parameters: the caller rebuilds the trainer. */
int nd__balance_stages(nd_trainer *tr, int64_t *split, nd_error *err);

#endif
