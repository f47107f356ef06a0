/* Internal to graph/'s model builders: the end of a training step. */
#ifndef ND_GRAPH_OPTIM_H
#define ND_GRAPH_OPTIM_H

#include "graph/state.h"

/* After the last backward: the tied embedding's two copies summed (parameter
 * `tied` on the first and last stages; -1: none), every gradient all-reduced
 * over the data-parallel replicas, the global gradient norm, then AdamW on
 * every parameter. */
void nd__optimizer_tail(nd__builder *b, int tied);

#endif
