/* parallelism.data_parallel_shard: parameters (ZeRO 3): each rank keeps only
 * its range of every block's weights; the step's tasks read them from a
 * small pool of whole buffers per rank, gathered just before a block's
 * forward and again before its backward. */
#ifndef ND_GRAPH_GATHER_H
#define ND_GRAPH_GATHER_H

#include "graph/state.h"

/* Buffers of gathered blocks per rank: block l uses buffer l % ND__GATHER_DEPTH,
 * so that block l + 1's gather can run while block l computes. */
#define ND__GATHER_DEPTH 2

/* Are block weights kept as ranges and gathered before use? */
int nd__gathers(const nd_graph *g);
/* Slot `slot` of pool `pool` (tensors of `kind`) for block weight `spec` on
 * rank r: a whole buffer of the weight's shape that every block of the slot
 * uses in turn, created on first use. */
int32_t nd__pool_tensor(nd__builder *b, nd_rank r, const nd__param_spec *spec, enum nd_tensor_kind kind,
                        const char *pool, int slot);
/* The whole buffer rank r's tasks read parameter `spec` (of a block) from,
 * created on first use; -1 where the weights are not gathered. */
int32_t nd__gathered_slot(nd__builder *b, nd_rank r, const nd__param_spec *spec);
/* On every context and tensor rank of replica d on stage st: block l's weights gathered from the shard
 * group's ranges into their buffers (nothing where weights are whole). */
void nd__gather_block(nd__builder *b, int d, int st, int mb, int l);

#endif
