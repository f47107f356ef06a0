/* Internal access to a trainer's executor and step graph, for tools inside
 * the library (tracing) that observe the step without changing it. */
#ifndef ND_TRAIN_TRAINER_INTERNAL_H
#define ND_TRAIN_TRAINER_INTERNAL_H

#include "graph/ir.h"
#include "ndgraph/ndgraph.h"
#include "tasks/exec.h"

nd_exec *nd__trainer_exec(nd_trainer *tr);
const nd_graph *nd__trainer_graph(const nd_trainer *tr);

#endif
