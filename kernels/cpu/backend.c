/* The CPU backend: the kernels of kernels/cpu behind the descriptor
 * interface, replaceable kinds in the plugins' signature (so that built-ins
 * and plugins are called the same way), the others with the whole call. */
#include <math.h>
#include <starpu.h>
#include <stdlib.h>
#include <string.h>

#include "graph/shard.h"
#include "kernels/backend.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lanes.h"

#define F(i)  ((float *)t[i].data)
#define CF(i) ((float *)c->t[i].data)
#define CI(i) ((int32_t *)c->t[i].data)
#define CD(i) ((double *)c->t[i].data)

static int matmul_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (M, N), inp (M, K), weight (K, N), bias (N) or absent
  nd_matmul_forward(F(0), F(1), F(2), F(3), (int)t[1].shape[0], (int)t[1].shape[1], (int)t[0].shape[1],
                    nd__weight_transposed(&t[2]));
  return 0;
}

static int matmul_bwd_input(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  // dinp (M, K), dout (M, N), weight (K, N)
  nd_matmul_backward_input(F(0), F(1), F(2), (int)t[0].shape[0], (int)t[0].shape[1], (int)t[1].shape[1],
                           nd__weight_transposed(&t[2]), a->beta);
  return 0;
}

static int matmul_bwd_weight(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  // dweight (K, N), dbias (N) or absent, dout (M, N), inp (M, K)
  nd_matmul_backward_weight(F(0), F(1), F(2), F(3), (int)t[3].shape[0], (int)t[3].shape[1], (int)t[2].shape[1],
                            nd__weight_transposed(&t[0]), a->beta);
  return 0;
}

static int layernorm_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C)
  nd_layernorm_forward(F(0), F(1), F(2), F(3), F(4), F(5), (int)t[0].shape[0], (int)t[0].shape[1]);
  return 0;
}

static int layernorm_bwd_input(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // dinp (N, C), dskip (N, C) or absent, dout, inp (N, C), weight (C), mean (N), rstd (N)
  nd_layernorm_backward_input(F(0), F(1), F(2), F(3), F(4), F(5), F(6), (int)t[0].shape[0], (int)t[0].shape[1]);
  return 0;
}

static int layernorm_bwd_weight(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  // dweight (C), dbias (C), dout (N, C), inp (N, C), mean (N), rstd (N)
  nd_layernorm_backward_weight(F(0), F(1), F(2), F(3), F(4), F(5), (int)t[2].shape[0], (int)t[2].shape[1], a->beta);
  return 0;
}

static int attention_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (B, T, NH, hs), lse (B, NH, T), qkv (B, T, 3, NH, hs)
  const int64_t *s = t[0].shape;
  nd_attention_forward(F(0), F(1), F(2), (int)s[0], (int)s[1], (int)s[2], (int)s[3]);
  return 0;
}

static int attention_bwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // dqkv (B, T, 3, NH, hs), dout (B, T, NH, hs), qkv, out (B, T, NH, hs), lse (B, NH, T)
  const int64_t *s = t[1].shape;
  nd_attention_backward(F(0), F(1), F(2), F(3), F(4), (int)s[0], (int)s[1], (int)s[2], (int)s[3]);
  return 0;
}

static int residual_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (n), a (n), b (n)
  nd_residual_forward(F(0), F(1), F(2), t[0].shape[0]);
  return 0;
}

static int gelu_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // out (n), inp (n)
  nd_gelu_forward(F(0), F(1), t[0].shape[0]);
  return 0;
}

static int gelu_bwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  // dinp (n), inp (n), dout (n)
  nd_gelu_backward(F(0), F(1), F(2), t[0].shape[0]);
  return 0;
}

static int rmsnorm_fwd(const nd_kcall *c) {
  const struct nd_rms_args *a = &c->task->a.rms;
  // out (N, C), rstd (N), inp (N, C), weight (C)
  nd_rmsnorm_forward(CF(0), CF(1), CF(2), CF(3), a->N, a->C, a->eps);
  return 0;
}

static int rmsnorm_bwd_input(const nd_kcall *c) {
  const struct nd_rms_args *a = &c->task->a.rms;
  // dinp (N, C), dskip (N, C) or absent, dout, inp (N, C), weight (C), rstd (N)
  nd_rmsnorm_backward_input(CF(0), CF(1), CF(2), CF(3), CF(4), CF(5), a->N, a->C);
  return 0;
}

static int rmsnorm_bwd_weight(const nd_kcall *c) {
  const struct nd_rms_args *a = &c->task->a.rms;
  // dweight (C), dout (N, C), inp (N, C), rstd (N)
  nd_rmsnorm_backward_weight(CF(0), CF(1), CF(2), CF(3), a->N, a->C, a->beta);
  return 0;
}

static int rope_fwd(const nd_kcall *c) {
  const struct nd_rope_args *a = &c->task->a.rope;
  nd_rope_forward(CF(0), CF(1), a->B, a->T, a->H, a->hs, a->rope);
  return 0;
}

static int rope_bwd(const nd_kcall *c) {
  const struct nd_rope_args *a = &c->task->a.rope;
  nd_rope_backward(CF(0), CF(1), a->B, a->T, a->H, a->hs, a->rope);
  return 0;
}

static int swiglu_fwd(const nd_kcall *c) {
  nd_swiglu_forward(CF(0), CF(1), CF(2), c->task->a.ew.n);
  return 0;
}

static int swiglu_bwd(const nd_kcall *c) {
  nd_swiglu_backward(CF(0), CF(1), CF(2), CF(3), CF(4), c->task->a.ew.n);
  return 0;
}

/* A GEMM kind's whole call: under train.precision bf16 (task->bf16) its
 * inputs as bf16 values (bf16.c) into the same kernel, whose output and
 * accumulation stay fp32; kernel-check calls the kernels above. */
static int matmul_call(const nd_kcall *c) {
  nd_kernel_fn fn = c->task->kind == ND_TASK_MATMUL_FWD      ? matmul_fwd
                    : c->task->kind == ND_TASK_MATMUL_BWD_IN ? matmul_bwd_input
                                                             : matmul_bwd_weight;
  if (!c->task->bf16) return fn(c->t, c->n, &c->a);
  const nd_kind_row *row = nd_kind(c->task->kind);
  nd_tensor_desc t[ND_KIND_MAX_BUFFERS];
  float *wide[ND_KIND_MAX_BUFFERS] = {0};
  int rc = 0;
  for (int i = 0; i < c->n && i < row->n_buffers; i++) {
    t[i] = c->t[i];
    if (row->buf[i].role != ND_ROLE_IN || !t[i].data) continue;
    int64_t count = 1;
    for (int d = 0; d < t[i].ndim; d++) count *= t[i].shape[d];
    if (!(wide[i] = nd_bf16_operand(t[i].data, t[i].dtype == ND_KERNEL_BF16, count))) rc = ND_ENOMEM;
    t[i].data = wide[i];
    t[i].dtype = ND_KERNEL_F32;
  }
  if (!rc) rc = fn(t, c->n, &c->a);
  for (int i = 0; i < ND_KIND_MAX_BUFFERS; i++) free(wide[i]);
  return rc;
}

/* A kernel whose output (t[0]) only GEMMs read, stored in bf16 under
 * train.precision bf16: the fp32 kernel (fn, or else impl) into scratch, then
 * rounded (common/bf16.h), as a GPU kernel rounds before its store. */
static int bf16_output(const nd_kcall *c, nd_kernel_fn fn, nd_impl_fn impl) {
  nd_tensor_desc t[c->n];
  memcpy(t, c->t, (size_t)c->n * sizeof t[0]);
  int64_t count = 1;
  for (int d = 0; d < t[0].ndim; d++) count *= t[0].shape[d];
  float *wide = malloc((size_t)(count > 0 ? count : 1) * sizeof *wide);
  if (!wide) return ND_ENOMEM;
  t[0].data = wide;
  t[0].dtype = ND_KERNEL_F32;
  nd_kcall call = *c;
  call.t = t;
  int rc = fn ? fn(t, c->n, &c->a) : impl(&call);
  if (!rc) nd_cast_bf16(c->t[0].data, wide, count);
  free(wide);
  return rc;
}

static int layernorm_fwd_call(const nd_kcall *c) {
  return c->t[0].dtype == ND_KERNEL_BF16 ? bf16_output(c, layernorm_fwd, NULL) : layernorm_fwd(c->t, c->n, &c->a);
}

static int gelu_fwd_call(const nd_kcall *c) {
  return c->t[0].dtype == ND_KERNEL_BF16 ? bf16_output(c, gelu_fwd, NULL) : gelu_fwd(c->t, c->n, &c->a);
}

static int rmsnorm_fwd_call(const nd_kcall *c) {
  return c->t[0].dtype == ND_KERNEL_BF16 ? bf16_output(c, NULL, rmsnorm_fwd) : rmsnorm_fwd(c);
}

static int swiglu_fwd_call(const nd_kcall *c) {
  return c->t[0].dtype == ND_KERNEL_BF16 ? bf16_output(c, NULL, swiglu_fwd) : swiglu_fwd(c);
}

static int cast_bf16(const nd_kcall *c) {
  nd_cast_bf16(c->t[0].data, CF(1), c->task->a.ew.n);
  return 0;
}

static int gqa_fwd(const nd_kcall *c) {
  const struct nd_gqa_args *a = &c->task->a.gqa;
  // out (B, T, NH, hs), lse (B, NH, T), q (B, T, NH, hs), k, v (B, T, NKV, hs)
  nd_attention_gqa_forward(CF(0), CF(1), CF(2), CF(3), CF(4), a->NH * a->hs, a->NKV * a->hs, a->B, a->T, a->NH, a->NKV,
                           a->hs);
  return 0;
}

static int gqa_bwd(const nd_kcall *c) {
  const struct nd_gqa_args *a = &c->task->a.gqa;
  // dq, dk, dv, dout, q, k, v, out, lse
  nd_attention_gqa_backward(CF(0), CF(1), CF(2), CF(3), CF(4), CF(5), CF(6), CF(7), CF(8), a->NH * a->hs,
                            a->NKV * a->hs, a->B, a->T, a->NH, a->NKV, a->hs);
  return 0;
}

static int embedding_fwd(const nd_kcall *c) {
  const struct nd_emb_args *a = &c->task->a.emb;
  nd_embedding_forward(CF(0), CI(1), CF(2), CF(3), a->B, a->T, a->C, a->v0, a->Vs);
  return 0;
}

static int embedding_bwd(const nd_kcall *c) {
  const struct nd_emb_args *a = &c->task->a.emb;
  nd_embedding_backward(a->wpe ? NULL : CF(0), a->wpe ? CF(0) : NULL, CF(1), CI(2), a->B, a->T, a->C, a->v0, a->Vs,
                        a->beta);
  return 0;
}

static int crossentropy_stats(const nd_kcall *c) {
  const struct nd_ce_args *a = &c->task->a.ce;
  nd_crossentropy_stats(CF(0), CF(1), CI(2), a->N, a->Vs, a->v0);
  return 0;
}

/* stats (N, 3) of each of the S shards, loss (1, f64). Only the rows of
 * sequences below step->seq_limit count (an evaluation's tail). */
static int crossentropy_combine(const nd_kcall *c) {
  const nd_graph *g = c->graph;
  const nd_task *t = c->task;
  int S = t->a.ce.nshards, N = t->a.ce.N;
  const float *stats[S]; /* one per tensor-parallel rank (up to 1024): no fixed bound */
  for (int s = 0; s < S; s++) stats[s] = CF(s);
  int64_t replica = t->rank.dp / g->cp; /* a replica's context ranks share its sequences */
  int64_t first = c->step->seq_base + (replica * g->micro_batches + t->micro_batch) * g->B;
  int64_t valid = c->step->seq_limit - first;
  int rows = valid <= 0 ? 0 : valid >= g->B ? N : (int)valid * g->T;
  double sum = nd_crossentropy_combine(stats, S, rows);
  double *loss = CD(S);
  double prev = c->acc[S].mode & ND_ACCESS_R ? *loss : 0.0;
  *loss = prev + sum * c->step->loss_scale;
  return 0;
}

/* lse (N) of each of the S shards, stats (N, 3) of each shard */
static int crossentropy_lse(const nd_kcall *c) {
  int S = c->task->a.ce.nshards, N = c->task->a.ce.N;
  if (S < 1) return ND_EINVAL;
  const float *stats[S];
  for (int s = 0; s < S; s++) stats[s] = CF(S + s);
  nd_crossentropy_lse(CF(0), stats, S, N);
  for (int s = 1; s < S; s++) memcpy(CF(s), CF(0), (size_t)N * sizeof(float));
  return 0;
}

static int crossentropy_bwd(const nd_kcall *c) {
  const struct nd_ce_args *a = &c->task->a.ce;
  nd_crossentropy_backward(CF(0), CF(0), CF(1), CI(2), a->N, a->Vs, a->v0, c->step->loss_scale);
  return 0;
}

/* a sum in rank order into the first part, then copies: deterministic, whatever the schedule */
static int allreduce(const nd_kcall *c) {
  const struct nd_coll_args *a = &c->task->a.coll;
  if (a->dtype == ND_F64) {
    double *out = CD(0);
    for (int p = 1; p < a->nparts; p++)
      for (int64_t i = 0; i < a->n; i++) out[i] += CD(p)[i];
  } else {
    const float *parts[a->nparts]; /* one per rank of the group: no fixed bound, no allocation */
    for (int p = 0; p < a->nparts; p++) parts[p] = CF(p);
    nd_sum_ordered(CF(0), parts, a->nparts, a->n);
  }
  size_t bytes = (size_t)a->n * (a->dtype == ND_F64 ? 8 : 4);
  for (int p = 1; p < a->nparts; p++) memcpy(c->t[p].data, c->t[0].data, bytes);
  return 0;
}

/* dst, then the other copies of the shard group in order: each one's own
 * range (graph/shard.h) into dst, after each rank updated its range */
static int shard_gather(const nd_kcall *c) {
  const struct nd_coll_args *a = &c->task->a.coll;
  for (int k = 0; k < a->nparts; k++) {
    int64_t begin, n;
    nd_dp_range(a->n, a->nparts + 1, k < a->own ? k : k + 1, &begin, &n);
    if (n) memcpy(CF(0) + begin, CF(1 + k) + begin, (size_t)n * sizeof(float));
  }
  return 0;
}

/* dst, then the shard group's non-empty ranges of the weight in rank order:
 * their concatenation is the whole weight */
static int param_gather(const nd_kcall *c) {
  float *dst = CF(0);
  for (int k = 1; k < c->n; k++) {
    memcpy(dst, CF(k), (size_t)c->t[k].shape[0] * sizeof(float));
    dst += c->t[k].shape[0];
  }
  return 0;
}

/* the parts (whole gradients), then the ranges: shard s's elements summed
 * in rank order over every part (as the all-reduce sums it) into range s,
 * then copied to each range p with p % shards == s: the bits of the
 * all-reduce, in the ranges their ranks keep. A range past the shard's
 * elements is padding, zeros (a range written on another process comes
 * back whole). One part with `shards` ranges: a copy of its shards. */
static int reduce_scatter(const nd_kcall *c) {
  const struct nd_coll_args *a = &c->task->a.coll;
  const float *parts[a->nparts];
  int outs = c->n - a->nparts;
  for (int s = 0; s < a->shards && s < outs; s++) {
    int64_t begin, n;
    nd_dp_range(a->n, a->shards, s, &begin, &n);
    if (n == 0) continue;
    for (int p = 0; p < a->nparts; p++) parts[p] = CF(p) + begin;
    for (int p = s; p < outs; p += a->shards) {
      float *range = CF(a->nparts + p);
      if (p == s)
        nd_sum_ordered(range, parts, a->nparts, n);
      else
        memcpy(range, CF(a->nparts + s), (size_t)n * sizeof(float));
      memset(range + n, 0, (size_t)(c->t[a->nparts + p].shape[0] - n) * sizeof(float));
    }
  }
  return 0;
}

static int sendrecv(const nd_kcall *c) {
  memcpy(CF(1), CF(0) + c->task->a.send.offset, (size_t)c->task->a.send.n * sizeof(float));
  return 0;
}

/* outs, then parts: every out is the parts one after the other */
static int allgather(const nd_kcall *c) {
  int n = c->task->a.coll.nparts;
  for (int p = 0; p < n; p++) {
    float *out = CF(p);
    for (int q = 0; q < n; q++) {
      memcpy(out, CF(n + q), (size_t)c->t[n + q].shape[0] * sizeof(float));
      out += c->t[n + q].shape[0];
    }
  }
  return 0;
}

/* normsq (1, f64), then the rank's primary gradients */
static int grad_sumsq(const nd_kcall *c) {
  double sum = 0.0;
  for (int p = 1; p < c->n; p++) sum += nd_sumsq(CF(p), c->t[p].shape[0]);
  *CD(0) = sum;
  return 0;
}

/* normsq (1, f64), lanes (8 per gradient, f64), [prev: the lanes of shard
 * - 1], then the gradients' ranges of this shard (starting on multiples of 8
 * elements, padded with zeros): each continues its lanes, so that the last
 * shard's total is grad_sumsq's over the whole gradients, bit for bit; the
 * others write 0 */
static int grad_sumsq_range(const nd_kcall *c) {
  const struct nd_sumsq_args *a = &c->task->a.sumsq;
  double *lanes = CD(1);
  int first = 3; /* after prev, an empty descriptor on shard 0 */
  if (a->shard > 0)
    memcpy(lanes, CD(2), (size_t)c->t[1].shape[0] * sizeof *lanes);
  else
    memset(lanes, 0, (size_t)c->t[1].shape[0] * sizeof *lanes);
  double sum = 0.0;
  for (int p = first; p < c->n; p++) {
    double *l = lanes + (size_t)(p - first) * ND_LANES;
    nd_sumsq_lanes(l, CF(p), c->t[p].shape[0]);
    sum += nd_lanes_total(l);
  }
  *CD(0) = a->last ? sum : 0.0;
  return 0;
}

static int adamw(const nd_kcall *c) {
  const struct nd_adamw_args *a = &c->task->a.adamw;
  const nd_step *s = c->step;
  float scale = nd_clip_scale(sqrt(*CD(4)), s->grad_clip);
  nd_adamw(CF(0) + (a->param_range ? 0 : a->offset), CF(1), CF(2), CF(3) + (a->grad_range ? 0 : a->offset), a->n, s->lr, s->beta1, s->beta2, s->eps, a->decay ? s->weight_decay : 0.0f,
           scale, s->adam_t);
  return 0;
}

/* [tokens (B, T)], [targets (B, T)] from the dataset. A read that fails
 * (the file cut short or rewritten under the run) leaves zero ids and its
 * message with the dataset, where the trainer takes it (nd_dataset_failure). */
static int load_batch(const nd_kcall *c) {
  const struct nd_load_args *a = &c->task->a.load;
  if (c->step->tokens) { /* generation: the ids it was given */
    memcpy(CI(0), c->step->tokens, (size_t)a->B * a->T * sizeof(int32_t));
    return 0;
  }
  if (a->cp == 1) return nd_dataset_read(c->step->data, c->step->seq_base + a->seq0, a->B, CI(0), CI(1));
  /* context parallelism: the whole sequences, then this rank's two chunks */
  size_t full = (size_t)a->B * a->T * a->cp;
  int32_t *buf = calloc(2 * full, sizeof *buf);
  if (!buf) return 1;
  int rc = nd_dataset_read(c->step->data, c->step->seq_base + a->seq0, a->B, CI(0) ? buf : NULL,
                           CI(1) ? buf + full : NULL);
  for (int k = 0; k < 2; k++) {
    int32_t *dst = k ? CI(1) : CI(0);
    for (size_t bt = 0; dst && bt < (size_t)a->B * a->T; bt++) {
      size_t b = bt / a->T, pos = (size_t)nd_ring_position(a->T, a->cp, a->chunk, (int)(bt % a->T));
      dst[bt] = buf[k * full + b * a->T * a->cp + pos];
    }
  }
  free(buf);
  return rc;
}

/* GPT-2's packed qkv (B, T, 3C) as strided q, k and v views */
static int ring_attention_fwd(const nd_kcall *c) {
  const struct nd_ring_args *a = &c->task->a.ring;
  const int C = a->NH * a->hs;
  // out, lse, qkv (queries' rank), kv (keys' rank)
  return nd_ring_attention_forward(CF(0), CF(1), CF(2), CF(3) + C, CF(3) + 2 * C, 3 * C, 3 * C, a->B, a->T, a->NH,
                                   a->NKV, a->hs, a->cp, a->qr, a->kr);
}

static int ring_gqa_fwd(const nd_kcall *c) {
  const struct nd_ring_args *a = &c->task->a.ring;
  // out, lse, q (queries' rank), k, v (keys' rank)
  return nd_ring_attention_forward(CF(0), CF(1), CF(2), CF(3), CF(4), a->NH * a->hs, a->NKV * a->hs, a->B, a->T, a->NH,
                                   a->NKV, a->hs, a->cp, a->qr, a->kr);
}

static int ring_attention_merge(const nd_kcall *c) {
  const struct nd_ring_args *a = &c->task->a.ring;
  // out, lse, part, part_lse
  nd_ring_attention_merge(CF(0), CF(1), CF(2), CF(3), a->B, a->T, a->NH, a->hs);
  return 0;
}

static int ring_attention_bwd(const nd_kcall *c) {
  const struct nd_ring_args *a = &c->task->a.ring;
  const int C = a->NH * a->hs;
  // dqkv, dkv, dout, qkv, kv, out, lse
  return nd_ring_attention_backward(CF(0), CF(1) + C, CF(1) + 2 * C, CF(2), CF(3), CF(4) + C, CF(4) + 2 * C, CF(5),
                                    CF(6), 3 * C, 3 * C, a->B, a->T, a->NH, a->NKV, a->hs, a->cp, a->qr, a->kr);
}

static int ring_gqa_bwd(const nd_kcall *c) {
  const struct nd_ring_args *a = &c->task->a.ring;
  // dq, dk, dv, dout, q, k, v, out, lse
  return nd_ring_attention_backward(CF(0), CF(1), CF(2), CF(3), CF(4), CF(5), CF(6), CF(7), CF(8), a->NH * a->hs,
                                    a->NKV * a->hs, a->B, a->T, a->NH, a->NKV, a->hs, a->cp, a->qr, a->kr);
}

static int ring_kv_add(const nd_kcall *c) {
  const struct nd_ring_args *a = &c->task->a.ring;
  const int C = a->NH * a->hs;
  // dqkv, dkv: their k and v columns
  nd_ring_kv_add(CF(0) + C, CF(0) + 2 * C, CF(1) + C, CF(1) + 2 * C, 3 * C, a->B, a->T, C);
  return 0;
}

static int ring_gqa_kv_add(const nd_kcall *c) {
  const struct nd_ring_args *a = &c->task->a.ring;
  const int KV = a->NKV * a->hs;
  // dk, dv, pdk, pdv
  nd_ring_kv_add(CF(0), CF(1), CF(2), CF(3), KV, a->B, a->T, KV);
  return 0;
}

static int ring_rope_fwd(const nd_kcall *c) {
  const struct nd_ring_rope_args *a = &c->task->a.ring_rope;
  nd_rope_forward_ring(CF(0), CF(1), a->r.B, a->r.T, a->r.H, a->r.hs, a->r.rope, a->cp, a->chunk);
  return 0;
}

static int ring_rope_bwd(const nd_kcall *c) {
  const struct nd_ring_rope_args *a = &c->task->a.ring_rope;
  nd_rope_backward_ring(CF(0), CF(1), a->r.B, a->r.T, a->r.H, a->r.hs, a->r.rope, a->cp, a->chunk);
  return 0;
}

static int ring_position_fwd(const nd_kcall *c) {
  const struct nd_emb_args *a = &c->task->a.emb;
  nd_ring_positions(CF(0), CF(1), a->B, a->T, a->C, a->cp, a->chunk);
  return 0;
}

static int ring_position_bwd(const nd_kcall *c) {
  const struct nd_emb_args *a = &c->task->a.emb;
  nd_ring_positions_backward(CF(0), CF(1), a->B, a->T, a->C, a->cp, a->chunk, a->beta);
  return 0;
}

/* generation (graph/generate.c): GPT-2's packed qkv or Llama's q, k, v at the submission's position */
static int kv_attention(const nd_kcall *c) {
  const struct nd_cache_args *a = &c->task->a.cache;
  int packed = c->task->kind == ND_TASK_KV_ATTN, w = a->NH * a->hs;
  const float *q = CF(3), *k = packed ? q + w : CF(4), *v = packed ? q + 2 * w : CF(5);
  if (c->step->pos < 0 || c->step->pos + a->T > a->positions) return 1;
  return nd_kv_attention(CF(0), CF(1), CF(2), q, k, v, packed ? 3 * w : w, packed ? 3 * w : a->NKV * a->hs, a->T,
                         (int)c->step->pos, a->NH, a->NKV, a->hs, a->rotary ? &a->rope : NULL);
}

static int position_add(const nd_kcall *c) {
  const struct nd_cache_args *a = &c->task->a.cache;
  if (c->step->pos < 0 || c->step->pos + a->T > a->positions) return 1;
  nd_residual_forward(CF(0), CF(0), CF(1) + (size_t)c->step->pos * a->hs, (int64_t)a->T * a->hs);
  return 0;
}

static void *buffer_data(void *buffer) { return (void *)STARPU_VECTOR_GET_PTR(buffer); }

const nd_backend_ops nd__cpu_backend = {
    .device = ND_BACKEND_CPU,
    .worker_type = STARPU_CPU_WORKER,
    .buffer_data = buffer_data,
    .kernel = {[ND_TASK_MATMUL_FWD] = matmul_fwd,
               [ND_TASK_MATMUL_BWD_IN] = matmul_bwd_input,
               [ND_TASK_MATMUL_BWD_W] = matmul_bwd_weight,
               [ND_TASK_LN_FWD] = layernorm_fwd,
               [ND_TASK_LN_BWD_IN] = layernorm_bwd_input,
               [ND_TASK_LN_BWD_W] = layernorm_bwd_weight,
               [ND_TASK_ATTN_FWD] = attention_fwd,
               [ND_TASK_ATTN_BWD] = attention_bwd,
               [ND_TASK_RESIDUAL_FWD] = residual_fwd,
               [ND_TASK_ACT_FWD] = gelu_fwd,
               [ND_TASK_ACT_BWD] = gelu_bwd},
    .impl = {[ND_TASK_MATMUL_FWD] = matmul_call,
             [ND_TASK_MATMUL_BWD_IN] = matmul_call,
             [ND_TASK_MATMUL_BWD_W] = matmul_call,
             [ND_TASK_CAST_BF16] = cast_bf16,
             [ND_TASK_LN_FWD] = layernorm_fwd_call,
             [ND_TASK_ACT_FWD] = gelu_fwd_call,
             [ND_TASK_LOAD_BATCH] = load_batch,
             [ND_TASK_EMBED_FWD] = embedding_fwd,
             [ND_TASK_EMBED_BWD] = embedding_bwd,
             [ND_TASK_CE_STATS] = crossentropy_stats,
             [ND_TASK_CE_COMBINE] = crossentropy_combine,
             [ND_TASK_CE_LSE] = crossentropy_lse,
             [ND_TASK_CE_BWD] = crossentropy_bwd,
             [ND_TASK_ALLREDUCE] = allreduce,
             [ND_TASK_SHARD_GATHER] = shard_gather,
             [ND_TASK_PARAM_GATHER] = param_gather,
             [ND_TASK_REDUCE_SCATTER] = reduce_scatter,
             [ND_TASK_GRAD_SUMSQ_RANGE] = grad_sumsq_range,
             [ND_TASK_SENDRECV] = sendrecv,
             [ND_TASK_ALLGATHER] = allgather,
             [ND_TASK_GRAD_SUMSQ] = grad_sumsq,
             [ND_TASK_ADAMW] = adamw,
             [ND_TASK_RMSNORM_FWD] = rmsnorm_fwd_call,
             [ND_TASK_RMSNORM_BWD_IN] = rmsnorm_bwd_input,
             [ND_TASK_RMSNORM_BWD_W] = rmsnorm_bwd_weight,
             [ND_TASK_ROPE_FWD] = rope_fwd,
             [ND_TASK_ROPE_BWD] = rope_bwd,
             [ND_TASK_SWIGLU_FWD] = swiglu_fwd_call,
             [ND_TASK_SWIGLU_BWD] = swiglu_bwd,
             [ND_TASK_GQA_FWD] = gqa_fwd,
             [ND_TASK_GQA_BWD] = gqa_bwd,
             [ND_TASK_KV_ATTN] = kv_attention,
             [ND_TASK_KV_GQA] = kv_attention,
             [ND_TASK_POS_ADD] = position_add,
             [ND_TASK_RING_ATTN_FWD] = ring_attention_fwd,
             [ND_TASK_RING_ATTN_MERGE] = ring_attention_merge,
             [ND_TASK_RING_ATTN_BWD] = ring_attention_bwd,
             [ND_TASK_RING_KV_ADD] = ring_kv_add,
             [ND_TASK_RING_POS_FWD] = ring_position_fwd,
             [ND_TASK_RING_POS_BWD] = ring_position_bwd,
             [ND_TASK_RING_GQA_FWD] = ring_gqa_fwd,
             [ND_TASK_RING_GQA_BWD] = ring_gqa_bwd,
             [ND_TASK_RING_GQA_KV_ADD] = ring_gqa_kv_add,
             [ND_TASK_RING_ROPE_FWD] = ring_rope_fwd,
             [ND_TASK_RING_ROPE_BWD] = ring_rope_bwd},
};
