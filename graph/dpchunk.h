/* Data-parallel sums across processes, in chunks. StarPU-MPI moves whole
 * handles, so a sum run as one task gathers whole gradients on one process
 * and sends the sum back to each. Where a data-parallel group spans
 * processes, each replica's gradients of a bucket (a layer's, on one rank)
 * are instead copied into chunks, tensors of their own (contiguous ranges of
 * graph/shard.h, on the replica's rank);
 * chunk c is summed in replica order, as the whole sum is, by one task on
 * member c's process; then every replica copies the summed chunks back into
 * its gradient. Each member then sends about 2 (P - 1) / P of its gradient,
 * a ring all-reduce's figure, with the bits of one process. Sharded
 * gradients sum each chunk straight into the ranges that keep it, and a
 * sharded update sends each range of the parameters, not whole copies. */
#ifndef ND_GRAPH_DPCHUNK_H
#define ND_GRAPH_DPCHUNK_H

#include "graph/state.h"

/* Where nd_dp_spans(g, st, t, g->procs): */
/* the all-reduce of a bucket, m whole gradients of each of n replicas
 * (grads[d * m + i]), in chunks, one per replica: every gradient ends as
 * the sum, in replica order. A bucket of several is copied into one flat
 * tensor per replica first, and back after, so that its chunks are summed by
 * n tasks, not n per gradient. */
void nd__dp_chunked_allreduce(nd__builder *b, const int32_t *grads, int n, int m, int layer);
/* nd__reduce_scatter's sum in chunks: shard c of `shards` of the n parts
 * (the replicas' gradient buffers) is summed by member c's process into
 * the ranges outs[p] with p % shards == c. mb: as nd__reduce_scatter's. */
void nd__dp_chunked_reduce_scatter(nd__builder *b, const int32_t *parts, const int32_t *outs, int n, int shards, int mb,
                                   int layer);
/* The all-gather of a parameter after a sharded update: copy k of the n
 * copies of a shard group updated range k of n; each range goes into a
 * chunk, and every copy is written whole from the chunks, in order. */
void nd__dp_chunked_shard_gather(nd__builder *b, const int32_t *copies, int n);

#endif
