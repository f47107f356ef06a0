/* Per-task costs on a GPU that was never measured: a roofline from the
 * cluster file's data-sheet figures and efficiency model, and collectives
 * from its links (docs/clusters.md names every assumption). */
#include <math.h>
#include <string.h>

#include "sim/cluster.h"

double nd_ring_allreduce_s(int n, double bytes, double bps, double latency_s) {
  if (n < 2) return 0;
  return 2.0 * (n - 1) / n * bytes / bps + 2.0 * (n - 1) * latency_s;
}

/* Kinds that run as matrix products on the tensor cores. */
static int tensor_core(enum nd_task_kind k) {
  switch (k) {
  case ND_TASK_MATMUL_FWD: case ND_TASK_MATMUL_BWD_IN: case ND_TASK_MATMUL_BWD_W:
  case ND_TASK_ATTN_FWD: case ND_TASK_ATTN_BWD: case ND_TASK_GQA_FWD: case ND_TASK_GQA_BWD:
  case ND_TASK_RING_ATTN_FWD: case ND_TASK_RING_ATTN_BWD: case ND_TASK_RING_GQA_FWD: case ND_TASK_RING_GQA_BWD:
    return 1;
  default:
    return 0;
  }
}

/* Kinds every rank of a tensor-parallel group repeats whole (Megatron's
 * LayerNorms, residual adds, the batch and the embedding's gather rows). */
static int replicated(enum nd_task_kind k) {
  switch (k) {
  case ND_TASK_LN_FWD: case ND_TASK_LN_BWD_IN: case ND_TASK_LN_BWD_W:
  case ND_TASK_RMSNORM_FWD: case ND_TASK_RMSNORM_BWD_IN: case ND_TASK_RMSNORM_BWD_W:
  case ND_TASK_RESIDUAL_FWD: case ND_TASK_LOAD_BATCH: case ND_TASK_EMBED_FWD:
    return 1;
  default:
    return 0;
  }
}

static int collective(enum nd_task_kind k) {
  return k == ND_TASK_ALLREDUCE || k == ND_TASK_ALLGATHER || k == ND_TASK_SHARD_GATHER ||
         k == ND_TASK_REDUCE_SCATTER || k == ND_TASK_PARAM_GATHER;
}

/* The bytes the tensor-parallel group sums after t (Megatron's f and g
 * operators): the output of a row-parallel product (N = C) and the input
 * gradient of a column-parallel one (K = C, N != C: QKV, MLP up, the LM
 * head), and the vocabulary-parallel embedding's rows; 0 for the rest. */
static double tp_sum_bytes(const nd_graph *g, const nd_task *t) {
  double elt = g->bf16 ? 2 : 4;
  const struct nd_mm_args *m = &t->a.mm;
  if (t->kind == ND_TASK_MATMUL_FWD && t->layer >= 0 && t->layer < g->L && m->N == g->C)
    return elt * m->M * m->N;
  if (t->kind == ND_TASK_MATMUL_BWD_IN && t->layer >= 0 && m->K == g->C && m->N != g->C) return elt * m->M * m->K;
  if (t->kind == ND_TASK_EMBED_FWD) return elt * t->a.emb.B * t->a.emb.T * t->a.emb.C;
  return 0;
}

/* The node of stage s's first GPU, ranks placed tensor-parallel group by group. */
static int node_of_stage(const nd_cluster *c, int s, int tp) { return s * tp / c->gpus_per_node; }

/* A stage boundary: each of the tp ranks sends its 1/tp slice on its share
 * of the node's NICs (or over NVLink inside a node), the receivers
 * all-gather the slices over NVLink (Megatron's scatter/gather). */
static double send_s(const nd_cluster *c, const nd_graph *g, const nd_task *t, int tp) {
  int from = t->rank.pp, to = t->group == ND_GROUP_PP_PREV ? from - 1 : from + 1;
  double bytes = (double)(t->comm_bytes > 0 ? t->comm_bytes : t->bytes);
  (void)g;
  if (node_of_stage(c, from, tp) == node_of_stage(c, to, tp)) return c->intra_latency_s + bytes / tp / c->intra_bps;
  double nic = c->inter_bps / c->gpus_per_node;
  double gather = tp > 1 ? c->intra_latency_s + (tp - 1.0) / tp * bytes / c->intra_bps : 0;
  return c->inter_latency_s + bytes / tp / nic + gather;
}

/* Context parallelism's ring tasks read a block of another context rank
 * (comm_bytes: its keys and values, or the key gradients going back). */
static int ring(enum nd_task_kind k) {
  return k == ND_TASK_RING_ATTN_FWD || k == ND_TASK_RING_ATTN_BWD || k == ND_TASK_RING_GQA_FWD ||
         k == ND_TASK_RING_GQA_BWD || k == ND_TASK_RING_KV_ADD || k == ND_TASK_RING_GQA_KV_ADD;
}

/* That block's transfer, before the task: over NVLink while a replica's
 * context ranks of a stage (cp x tp GPUs, placed side by side) fit in a
 * node, else on the GPU's share of the node's NICs. Not overlapped with the
 * task's own work: the task reads the block. */
static double ring_recv_s(const nd_cluster *c, const nd_task *t, int tp) {
  double bytes = (double)t->comm_bytes / tp;
  if (t->a.ring.cp * tp <= c->gpus_per_node) return c->intra_latency_s + bytes / c->intra_bps;
  return c->inter_latency_s + bytes / (c->inter_bps / c->gpus_per_node);
}

double nd_cluster_kernel_s(const nd_cluster *c, double flops, double bytes, int gemm, double gemm_peak) {
  double compute;
  if (gemm) /* at gemm_max * f / (f + half) of the peak: as if half more FLOPs ran at gemm_max */
    compute = flops > 0 ? (flops + c->gemm_half_flops) / (gemm_peak * c->gemm_max) : 0;
  else
    compute = flops / (c->peak_fp32 * c->vector);
  return c->launch_s + fmax(compute, bytes / (c->hbm_bps * c->memory));
}

double nd_cluster_unfused_attention_s(const nd_cluster *c, double n, double s, double d, double elt, int backward,
                                      double gemm_peak) {
  double e = n * s * s, gemm = 2 * n * s * s * d, io = elt * 2 * n * s * d; /* scores; one product; two of Q, K, V, O */
  double drop = c->dropout > 0 ? nd_cluster_kernel_s(c, 0, 2 * elt * e + e, 0, gemm_peak) : 0;
  if (!backward) /* Q K^T, softmax, dropout, P V */
    return nd_cluster_kernel_s(c, gemm, io + elt * e, 1, gemm_peak) +
           nd_cluster_kernel_s(c, 0, 2 * elt * e, 0, gemm_peak) + drop +
           nd_cluster_kernel_s(c, gemm, elt * e + io, 1, gemm_peak);
  /* dO V^T, P^T dO, dropout, softmax (its gradient and output in, one out), dS K, dS^T Q */
  return 4 * nd_cluster_kernel_s(c, gemm, io + elt * e, 1, gemm_peak) + drop +
         nd_cluster_kernel_s(c, 0, 3 * elt * e, 0, gemm_peak);
}

double nd_cluster_hidden_dropout_s(const nd_cluster *c, double n, double elt, int backward) {
  if (c->dropout <= 0) return 0;
  if (!backward) return n / (c->hbm_bps * c->memory); /* the mask, written by the residual add's kernel */
  return nd_cluster_kernel_s(c, 0, n * (2 * elt + 1), 0, 0);
}

double nd_cluster_task_s(const nd_cluster *c, const nd_graph *g, const nd_task *t, int tp, double gemm_peak) {
  if (t->kind == ND_TASK_SENDRECV) return send_s(c, g, t, tp);
  double share = replicated(t->kind) ? 1 : 1.0 / tp, elt = g->bf16 ? 2 : 4;
  if (collective(t->kind)) {
    /* the tied embedding's and the gradient norm's sums: across stages, so
     * across nodes on a share of the NICs */
    double bytes = (double)t->a.coll.n * nd_dtype_size(t->a.coll.dtype) * share;
    return nd_ring_allreduce_s(t->a.coll.nparts, bytes, c->inter_bps / c->gpus_per_node, c->inter_latency_s);
  }
  double s;
  const struct nd_attn_args *a = &t->a.attn;
  if ((t->kind == ND_TASK_ATTN_FWD || t->kind == ND_TASK_ATTN_BWD) && !strcmp(c->attention, "unfused"))
    s = nd_cluster_unfused_attention_s(c, (double)a->B * a->NH * share, a->T, a->hs, elt, t->kind == ND_TASK_ATTN_BWD,
                                       gemm_peak);
  else
    s = nd_cluster_kernel_s(c, (double)t->flops * share, (double)t->bytes * share, tensor_core(t->kind), gemm_peak);
  if (ring(t->kind) && t->comm_bytes > 0) s += ring_recv_s(c, t, tp);
  /* a block's two residual adds carry the dropout before them, and the two
   * LayerNorm input gradients the dropout's backward of the same gradient */
  int in_block = t->layer >= 0 && t->layer < g->L;
  if (in_block && t->kind == ND_TASK_RESIDUAL_FWD) s += nd_cluster_hidden_dropout_s(c, (double)t->a.ew.n, elt, 0);
  if (in_block && t->kind == ND_TASK_LN_BWD_IN)
    s += nd_cluster_hidden_dropout_s(c, (double)t->a.ln.N * t->a.ln.C, elt, 1);
  double sum = tp > 1 ? tp_sum_bytes(g, t) : 0;
  if (sum > 0) s += c->launch_s + nd_ring_allreduce_s(tp, sum, c->intra_bps, c->intra_latency_s);
  return s;
}

double nd_cluster_gemm_peak(const nd_cluster *c, const nd_config *cfg) {
  enum nd_precision p = nd_config_precision(cfg);
  return p == ND_PRECISION_BF16 ? c->peak_bf16 : p == ND_PRECISION_TF32 ? c->peak_tf32 : c->peak_fp32;
}
