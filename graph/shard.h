/* Where a parameter shard's elements sit in the whole Hugging Face tensor. */
#ifndef ND_GRAPH_SHARD_H
#define ND_GRAPH_SHARD_H

#include "graph/ir.h"

/* Copies shard -> full (to_full) or full -> shard for tensor i of g (a
 * parameter, gradient or optimizer state). full has the tensor's full_shape;
 * a data-parallel shard, or a gradient after its reduce-scatter, copies only
 * its range. 0 or ND_ENOMEM. */
int nd_shard_copy(const nd_graph *g, int32_t i, float *full, float *shard, int to_full);
/* Elements of the whole tensor. */
int64_t nd_shard_full_numel(const nd_tensor *t);

/* Data-parallel shards (parallelism.data_parallel_shard): shard c of s holds
 * elements [begin, begin + n) of a tensor of `numel`, contiguous ranges of
 * nd_dp_chunk elements, the last shorter or empty. A contiguous range keeps
 * every elementwise update (AdamW) and sum in rank order what it is on the
 * whole tensor, whatever the tensor's shape; a multiple of 8 elements starts
 * every range on a vector. */
int64_t nd_dp_chunk(int64_t numel, int s);
const char *nd_dp_shard_name(enum nd_dp_shard s); /* "none", "optimizer", ... as the configuration writes it */
void nd_dp_range(int64_t numel, int s, int c, int64_t *begin, int64_t *n);

#endif
