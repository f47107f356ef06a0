/* Internal to graph/'s model builders: the task emitters any transformer
 * uses. A task is a spec (the task and its accesses in the order of its kind's
 * row, graph/kinds.c) appended to the graph by nd__emit; W tasks may be held
 * back and appended later, a layer's of one rank together (nd__flush_w). Tensor ids are
 * -1 where a buffer is absent. */
#ifndef ND_GRAPH_EMIT_H
#define ND_GRAPH_EMIT_H

#include "graph/state.h"

/* A task being built. Its accesses live in `fixed` until they outgrow it (a
 * collective over many ranks, a stage's gradient norm): then on the heap,
 * freed by nd__emit. */
typedef struct nd__task_spec {
  nd_task t;
  nd_access fixed[64], *acc;
  int n, cap, oom;
} nd__task_spec;

void nd__spec_init(nd__task_spec *s, enum nd_task_kind kind, enum nd_phase phase, nd_rank r, int mb, int layer);
void nd__acc(nd__task_spec *s, int32_t tensor, int mode);
/* A gradient output: W the first time in the step (beta 0), RW after (beta 1). */
float nd__gacc(nd__builder *b, nd__task_spec *s, int32_t tensor);
void nd__emit(nd__builder *b, nd__task_spec *s);
/* Appends stage st's deferred W tasks of micro-batches up to `mb`, in order,
 * but each (rank, micro-batch, layer)'s together: one chain. */
void nd__flush_w(nd__builder *b, int st, int mb);

/* The all-reduce of a group's buffers, in place: every part ends as the sum.
 * A group of one needs none. */
void nd__allreduce(nd__builder *b, enum nd_group group, const int32_t *parts, int n, int mb, int layer);
/* The same, run by rank `on` (nd__allreduce: the first part's). */
void nd__allreduce_on(nd__builder *b, nd_rank on, enum nd_group group, const int32_t *parts, int n, int mb, int layer);
/* The reduce-scatter of n data-parallel gradients, run by rank `on`: shard c
 * of `shards` (graph/shard.h) summed in rank order, as the all-reduce sums
 * it, into the ranges outs[p] with p % shards == c, p < n_outs (one part:
 * a copy of its shards). mb: the micro-batch whose writes of the parts it
 * follows (held back behind them when they are W tasks). */
void nd__reduce_scatter(nd__builder *b, nd_rank on, const int32_t *parts, int n, const int32_t *outs, int n_outs,
                        int shards, int mb, int layer);
/* All-reduce of one activation across the tensor-parallel group of (d, st),
 * for each context rank of replica d. */
void nd__allreduce_tp(nd__builder *b, int d, int st, int layer, int which, int mb);
/* A copy of src's elements from `offset` (0: from its start), as many as dst
 * holds, to dst on another rank (a pipeline hand-over or its slice). */
void nd__sendrecv(nd__builder *b, enum nd_group group, int32_t src, int64_t offset, int32_t dst, int mb, int layer);
/* Each of the n outs becomes the n parts concatenated in order (a tensor-parallel
 * group's slices of one activation, each part on the rank of its out). */
void nd__allgather(nd__builder *b, const int32_t *parts, const int32_t *outs, int n, int mb, int layer);
void nd__load_batch(nd__builder *b, nd_rank r, int mb, int32_t tokens, int32_t targets);

/* A linear layer out (M, N) = inp (M, K) @ w (K, N; stored (N, K) when
 * trans_w) + bias: the forward reads out, inp, w, bias; the backward dinp,
 * dout, inp, w, dw, dbias (dinp -1: no input gradient). */
typedef struct nd__linear {
  int32_t out, inp, w, bias;
  int32_t dinp, dout, dw, dbias;
  int M, K, N, trans_w;
  int dinp_add; /* the input gradient adds to dinp (a second consumer of inp) */
} nd__linear;

void nd__matmul_fwd(nd__builder *b, nd_rank r, int mb, int layer, const nd__linear *x);
/* The two halves of a linear layer's backward: B (input gradient) and W (weight gradient). */
void nd__matmul_bwd(nd__builder *b, nd_rank r, int mb, int layer, const nd__linear *x);

/* A normalization over the last dimension (B*T rows of n_embd): the forward
 * reads out, mean, rstd, inp, w, bias; the backward dinp = dskip + N'(dout)
 * (dskip -1: none), then dw and dbias. RMSNorm (model.rms_norm_eps) is
 * LayerNorm without mean and bias (those fields unread). */
typedef struct nd__norm {
  int32_t out, mean, rstd, inp, w, bias;
  int32_t dinp, dskip, dout, dw, dbias;
} nd__norm;
enum nd__norm_kind { ND__LAYERNORM, ND__RMSNORM };

void nd__norm_fwd(nd__builder *b, enum nd__norm_kind k, nd_rank r, int mb, int layer, const nd__norm *x);
void nd__norm_bwd(nd__builder *b, enum nd__norm_kind k, nd_rank r, int mb, int layer, const nd__norm *x);

/* The token embedding of rank r's vocabulary rows, plus a learned position
 * table where wpe >= 0: out (B, T, C) = wte[tokens] [+ wpe]; and the
 * gradients of the tables (dwpe -1: none) from dout. */
void nd__embed_fwd(nd__builder *b, nd_rank r, int mb, int32_t out, int32_t tokens, int32_t wte, int32_t wpe);
void nd__embed_bwd(nd__builder *b, nd_rank r, int mb, int32_t dwte, int32_t dwpe, int32_t dout, int32_t tokens);

/* The vocabulary-parallel cross-entropy of replica d at the last stage, on
 * its stage activations: per tensor rank the statistics of its logits shard,
 * then over all shards (collectives when split) the loss and, for the
 * backward, each row's log-sum-exp; backwards, dlogits in place of the
 * logits of rank r. */
void nd__ce_stats(nd__builder *b, nd_rank r, int mb);
void nd__ce_combine(nd__builder *b, int d, int mb);
void nd__ce_lse(nd__builder *b, int d, int mb);
void nd__ce_bwd(nd__builder *b, nd_rank r, int mb);

/* Generation graphs (graph/generate.c): the attention of layer l's new
 * tokens over its key/value cache of kv_heads heads (split across the tensor
 * ranks), from GPT-2's packed qkv (n_in 1) or Llama's q, k, v (n_in 3, RoPE
 * applied at their positions when rope is not NULL); and the position rows
 * of wpe added to the embedding x at the submission's position. */
void nd__gen_attention(nd__builder *b, nd_rank r, int l, int32_t out, const int32_t *in, int n_in, const nd_rope *rope,
                       int kv_heads);
void nd__gen_positions(nd__builder *b, nd_rank r, int32_t x, int32_t wpe);

/* Context parallelism (graph/ring.c). Each context rank's q, k and v of a
 * replica's layer, by context rank: GPT-2's packed (B, T, 3C) qkv in q (k
 * and v NULL), or Llama's three tensors. */
typedef struct nd__ring_qkv {
  const int32_t *q, *k, *v;
} nd__ring_qkv;
/* Rank r's attention after its own causal block wrote out and lse: every
 * other context rank's block of keys and values into part and part_lse,
 * merged into out and lse in rank order. */
void nd__ring_attention_fwd(nd__builder *b, nd_rank r, int mb, int layer, int32_t out, int32_t lse, const nd__ring_qkv *x,
                            int32_t part, int32_t part_lse);
/* The backward of rank r's block over context rank kr's keys: dq added to
 * r's, dk and dv into part_k, part_v (GPT-2: both in part_k, part_v -1), then
 * added to kr's (after kr's own block; called for kr in rank order, so each
 * sum has a fixed order). */
void nd__ring_attention_bwd(nd__builder *b, nd_rank r, int kr, int mb, int layer, const nd__ring_qkv *dx,
                            int32_t dout, const nd__ring_qkv *x, int32_t out, int32_t lse, int32_t part_k,
                            int32_t part_v);
/* RoPE (a rope_fwd or rope_bwd of sizes a) at rank r's true positions. */
void nd__ring_rope(nd__builder *b, enum nd_phase ph, nd_rank r, int mb, int layer, int32_t out, int32_t in,
                   const struct nd_rope_args *a);
/* The position rows of rank r's chunks added to x (B, T, C); backwards
 * their gradient from dout. */
void nd__ring_pos_fwd(nd__builder *b, nd_rank r, int mb, int32_t x, int32_t wpe);
void nd__ring_pos_bwd(nd__builder *b, nd_rank r, int mb, int32_t dwpe, int32_t dout);

/* out = f(in0, in1) elementwise over out's elements. */
void nd__elementwise(nd__builder *b, enum nd_task_kind kind, enum nd_phase ph, nd_rank r, int mb, int layer,
                     int32_t out, int32_t in0, int32_t in1, int replica);

#endif
