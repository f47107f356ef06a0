/* Internal: the glue every device backend (opencl, cuda) shares, written
 * once on three primitives each gives (kernels/device.c): the rank-ordered
 * all-reduce and its copies, sendrecv, AdamW's clipping factor read back to
 * the host, which tasks a device takes, and the calling worker's device.
 * ND_DEVICE_IMPLS lists the kinds every device backend implements, for its
 * ops table: each names the backend's own static function of that name;
 * ND_DEVICE_DECLINED those every device backend declines. */
#ifndef ND_KERNELS_DEVICE_H
#define ND_KERNELS_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend.h"

/* On the calling worker's queue or stream; each returns 0 or the backend's error. */
typedef struct nd_device_prims {
  int (*accumulate)(void *out, void *x, int64_t n); /* out (n floats) += x */
  int (*copy)(void *dst, void *src, size_t bytes);  /* device to device */
  int (*read)(void *host, void *src, size_t bytes); /* device to host, waiting for it */
} nd_device_prims;

/* Parts on one device: part 0 += part 1, += part 2, ... in rank order (the
 * CPU's sum, bit for bit), then copied to the others. f32 only. */
int nd__device_allreduce(const nd_device_prims *d, const nd_kcall *c);
int nd__device_sendrecv(const nd_device_prims *d, const nd_kcall *c);
/* AdamW's factors from the host: the clipping scale (from the squared
 * gradient norm, a device double, descriptor 4) and the weight decay. */
int nd__device_adamw_factors(const nd_device_prims *d, const nd_kcall *c, float *clip_scale, float *weight_decay);
/* What a device takes: every task with an implementation but f64 all-reduces
 * and the log-sum-exp over several shards. train.precision bf16's tasks too:
 * a backend without bf16 kernels (OpenCL) refuses them in its own supports. */
int nd__device_supports(const nd_task *t);
/* The calling StarPU worker's device number. */
int nd__device_worker(void);

/* clang-format off */
#define ND_DEVICE_IMPLS                                                                                               \
  [ND_TASK_MATMUL_FWD] = matmul_fwd, [ND_TASK_MATMUL_BWD_IN] = matmul_bwd_input,                                      \
  [ND_TASK_MATMUL_BWD_W] = matmul_bwd_weight, [ND_TASK_LN_FWD] = layernorm_fwd,                                       \
  [ND_TASK_LN_BWD_IN] = layernorm_bwd_input, [ND_TASK_LN_BWD_W] = layernorm_bwd_weight,                               \
  [ND_TASK_ATTN_FWD] = attention_fwd, [ND_TASK_ATTN_BWD] = attention_bwd, [ND_TASK_ACT_FWD] = gelu_fwd,               \
  [ND_TASK_ACT_BWD] = gelu_bwd, [ND_TASK_RESIDUAL_FWD] = residual_fwd, [ND_TASK_EMBED_FWD] = embedding_fwd,           \
  [ND_TASK_EMBED_BWD] = embedding_bwd, [ND_TASK_CE_STATS] = crossentropy_stats,                                      \
  [ND_TASK_CE_LSE] = crossentropy_lse, [ND_TASK_CE_BWD] = crossentropy_bwd, [ND_TASK_ALLREDUCE] = allreduce,           \
  [ND_TASK_SENDRECV] = sendrecv, [ND_TASK_ADAMW] = adamw
/* The kinds every device backend declines, for its ops table's .declined. */
#define ND_DEVICE_DECLINED                                                                                            \
  [ND_TASK_LOAD_BATCH] = "host work: reads the dataset file",                                                        \
  [ND_TASK_CE_COMBINE] = "host work: sums in double into the loss, rows past the step's limit left out",             \
  [ND_TASK_ALLGATHER] = "copies into one buffer at offsets, between tensor ranks that share a host: on the host",    \
  [ND_TASK_SHARD_GATHER] = "host work: copies ranges between the copies of a data-parallel shard group",             \
  [ND_TASK_REDUCE_SCATTER] = "host work: sums and copies ranges of a data-parallel shard group",                     \
  [ND_TASK_GRAD_SUMSQ_RANGE] = "host work: sums in double, handed along a data-parallel shard group",                \
  [ND_TASK_PARAM_GATHER] = "host work: copies a shard group's ranges of a weight into one buffer"
/* The kinds of context parallelism, which the device backends leave to CPU workers. */
#define ND_RING_DECLINED                                                  \
  [ND_TASK_RING_ATTN_FWD] = "context parallelism runs on CPU workers",   \
  [ND_TASK_RING_ATTN_MERGE] = "context parallelism runs on CPU workers", \
  [ND_TASK_RING_ATTN_BWD] = "context parallelism runs on CPU workers",   \
  [ND_TASK_RING_KV_ADD] = "context parallelism runs on CPU workers",     \
  [ND_TASK_RING_POS_FWD] = "context parallelism runs on CPU workers",    \
  [ND_TASK_RING_POS_BWD] = "context parallelism runs on CPU workers",    \
  [ND_TASK_RING_GQA_FWD] = "context parallelism runs on CPU workers",    \
  [ND_TASK_RING_GQA_BWD] = "context parallelism runs on CPU workers",    \
  [ND_TASK_RING_GQA_KV_ADD] = "context parallelism runs on CPU workers", \
  [ND_TASK_RING_ROPE_FWD] = "context parallelism runs on CPU workers",   \
  [ND_TASK_RING_ROPE_BWD] = "context parallelism runs on CPU workers"
/* clang-format on */

#endif
