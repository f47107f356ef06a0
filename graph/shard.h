/* Where a parameter shard's elements sit in the whole Hugging Face tensor. */
#ifndef ND_GRAPH_SHARD_H
#define ND_GRAPH_SHARD_H

#include "graph/ir.h"

/* Copies shard -> full (to_full) or full -> shard for tensor t (a parameter,
 * gradient or optimizer state). full has t->full_shape. */
void nd_shard_copy(const nd_tensor *t, float *full, float *shard, int to_full);
/* Elements of the whole tensor. */
int64_t nd_shard_full_numel(const nd_tensor *t);

#endif
