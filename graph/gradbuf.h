/* parallelism.data_parallel_shard gradients and parameters: each rank keeps
 * only its range of every summed gradient. The micro-batches accumulate a
 * whole gradient in a buffer; once the last one is done, a reduce-scatter
 * sums the replicas' buffers into the owners' ranges, and a block's buffer
 * goes back to a small pool that the next blocks reuse. */
#ifndef ND_GRAPH_GRADBUF_H
#define ND_GRAPH_GRADBUF_H

#include "graph/state.h"

/* Are summed gradients kept as ranges? */
int nd__grad_ranges(const nd_graph *g);
/* The whole buffer rank r's tasks accumulate parameter `spec`'s gradient in:
 * for a block, slot l % depth of a pool (depth 2 with one micro-batch a step,
 * else one slot a block: the first micro-batch's backward of every block comes
 * before the last one's of any, so no slot is free before the step's end);
 * its own buffer for the others. */
int32_t nd__grad_buffer(nd__builder *b, nd_rank r, const nd__param_spec *spec);
/* Parameter p's buffers of stage st, tensor rank t, summed over the
 * data-parallel group (in rank order) into their ranges or, with whole
 * gradients, in place; mb is the micro-batch after whose writes it comes. */
void nd__reduce_grad(nd__builder *b, int st, int t, int p, int mb);
/* Are stage st, tensor rank t's whole gradients summed across processes,
 * in buckets (graph/dpchunk.h)? */
int nd__dp_buckets(const nd_graph *g, int st, int t);
/* Then: its gradients summed over the data-parallel group, one bucket per
 * layer (the embeddings' and final norm's one more), in parameter order. */
void nd__reduce_buckets(nd__builder *b, int st, int t);
/* Once micro-batch mb is the step's last: block l's gradients of stage st
 * reduced, so that the pool's next block may write their buffers. */
void nd__reduce_block(nd__builder *b, int st, int mb, int l);

#endif
