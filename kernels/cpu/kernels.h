/* CPU kernels of the GPT step. Outputs first, then inputs, then sizes.
 * Shapes are given with each pointer. "beta" is 0 (overwrite) or 1
 * (accumulate into what is there): gradient accumulation over micro-batches
 * is the caller's choice of beta, so no zeroing pass is needed.
 *
 * Row-major everywhere. A weight W of a linear layer is stored input x output
 * (Hugging Face GPT-2 "Conv1D" layout): y = x . W + b. */
#ifndef ND_KERNELS_CPU_KERNELS_H
#define ND_KERNELS_CPU_KERNELS_H

#include <stdint.h>

#include "common/rope.h"

/* ---- linear layer: out (M, N) = inp (M, K) . W + bias
 * trans_w = 0: W is (K, N).  trans_w = 1: W is (N, K) and is used transposed
 * (the tied LM head: logits = x . wte^T).  bias (N) may be NULL. */
void nd_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int M, int K, int N,
                       int trans_w);
/* dinp (M, K) = beta * dinp + dout (M, N) . W^T */
void nd_matmul_backward_input(float *dinp, const float *dout, const float *weight, int M, int K, int N, int trans_w,
                              float beta);
/* dweight (K, N) or (N, K) = beta * dweight + inp^T . dout (or its transpose);
 * dbias (N) = beta * dbias + column sums of dout; dbias may be NULL. */
void nd_matmul_backward_weight(float *dweight, float *dbias, const float *dout, const float *inp, int M, int K, int N,
                               int trans_w, float beta);

/* ---- train.precision bf16 (bf16.c): out (n) = inp rounded to bf16 (common/bf16.h) */
void nd_cast_bf16(uint16_t *out, const float *inp, int64_t n);
/* A GEMM operand of n elements as fp32 values of bf16, in a new buffer (the
 * caller frees it; NULL: out of memory): widened from bf16 storage, or fp32
 * rounded to bf16. */
float *nd_bf16_operand(const void *data, int is_bf16, int64_t n);

/* ---- LayerNorm over the last dimension, eps 1e-5.
 * out (N, C), mean (N), rstd (N); inp (N, C), weight (C), bias (C) */
void nd_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                          const float *bias, int N, int C);
/* dinp (N, C) = dskip + d(LN)/d(inp) . dout; dskip (N, C) may be NULL (then 0).
 * dskip carries the residual stream's gradient, so the residual branch's
 * backward costs no extra pass. dinp may alias dskip. */
void nd_layernorm_backward_input(float *dinp, const float *dskip, const float *dout, const float *inp,
                                 const float *weight, const float *mean, const float *rstd, int N, int C);
/* dweight (C), dbias (C) = beta * previous + this micro-batch's gradient */
void nd_layernorm_backward_weight(float *dweight, float *dbias, const float *dout, const float *inp, const float *mean,
                                  const float *rstd, int N, int C, float beta);

/* ---- causal multi-head self-attention on NH heads of size hs = C3 / (3 NH),
 * fused (kernels/cpu/attention.c): the (T, T) scores are never stored.
 * out (B, T, NH*hs); lse (B, NH, T) each query row's log-sum-exp of its
 * scaled scores, what the backward recomputes the probabilities from;
 * qkv (B, T, 3*NH*hs) laid out as [q of the NH heads | k | v]. Scale 1/sqrt(hs). */
void nd_attention_forward(float *out, float *lse, const float *qkv, int B, int T, int NH, int hs);
/* dqkv (B, T, 3*NH*hs) overwritten; dout (B, T, NH*hs); qkv, out and lse as
 * the forward's. */
void nd_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *out, const float *lse, int B,
                           int T, int NH, int hs);

/* ---- context parallelism (kernels/cpu/ring.c): a rank of cp holds T tokens
 * of a sequence, chunk `rank` then chunk 2 cp - 1 - rank; nd_ring_position is
 * the true position of its token i. A ring block: rank qr's queries q (B, T,
 * NH heads, row stride qs floats) over rank kr's keys and values k, v (B, T,
 * NKV heads, row stride kvs; GPT-2's packed qkv as strided views), qr != kr,
 * into out (B, T, NH hs) and lse (B, NH, T) (-inf: a row that sees none of
 * kr's keys); non-zero when out of memory. The merge folds a block into out
 * and lse by the log-sum-exp. The backward adds dq into dq (stride qs) and
 * writes dk, dv (stride kvs; their NKV hs columns) from the merged out and
 * lse; nd_ring_kv_add brings them back to their owner's dk, dv. The position
 * rows: x (B, T, C) += wpe[position], and dwpe (T cp, C) = beta dwpe + their
 * sum. RoPE at the rank's true positions: nd_rope_forward_ring. */
int64_t nd_ring_position(int T, int cp, int rank, int i);
int nd_ring_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, int qs, int kvs,
                              int B, int T, int NH, int NKV, int hs, int cp, int qr, int kr);
void nd_ring_attention_merge(float *out, float *lse, const float *part, const float *part_lse, int B, int T, int NH,
                             int hs);
int nd_ring_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                               const float *v, const float *out, const float *lse, int qs, int kvs, int B, int T,
                               int NH, int NKV, int hs, int cp, int qr, int kr);
void nd_ring_kv_add(float *dk, float *dv, const float *pk, const float *pv, int kvs, int B, int T, int width);
void nd_ring_positions(float *x, const float *wpe, int B, int T, int C, int cp, int rank);
void nd_ring_positions_backward(float *dwpe, const float *dout, int B, int T, int C, int cp, int rank, float beta);

/* Grouped-query attention on separate q (B, T, NH, hs), k and v (B, T, NKV, hs)
 * with row strides qs and kvs (elements from one (b, t) to the next): query
 * head h reads key/value head h / (NH / NKV); NKV == NH with q, k, v the three
 * parts of qkv is the above. The backward's dk and dv sum over each group. */
void nd_attention_gqa_forward(float *out, float *lse, const float *q, const float *k, const float *v, int qs, int kvs,
                              int B, int T, int NH, int NKV, int hs);
void nd_attention_gqa_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                               const float *v, const float *out, const float *lse, int qs, int kvs, int B, int T, int NH,
                               int NKV, int hs);

/* ---- RMSNorm over the last dimension (Llama): out = weight * x / rms(x),
 * rms(x) = sqrt(mean(x^2) + eps). out (N, C), rstd (N) = 1 / rms; inp (N, C), weight (C) */
void nd_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps);
/* dinp (N, C) = dskip + d(RMSNorm)/d(inp) . dout; dskip may be NULL or alias dinp */
void nd_rmsnorm_backward_input(float *dinp, const float *dskip, const float *dout, const float *inp,
                               const float *weight, const float *rstd, int N, int C);
/* dweight (C) = beta * dweight + sum over rows of dout * inp * rstd */
void nd_rmsnorm_backward_weight(float *dweight, const float *dout, const float *inp, const float *rstd, int N, int C,
                                float beta);

/* ---- rotary position embedding, Hugging Face's rotate_half convention: in
 * each head of size hs, element i < hs/2 pairs with i + hs/2, rotated by
 * pos * theta^(-2i/hs), pos the position in its sequence. x (B, T, H, hs).
 * The backward rotates by the opposite angle. out may not alias inp. */
void nd_rope_forward(float *out, const float *inp, int B, int T, int H, int hs, nd_rope r);
void nd_rope_backward(float *dinp, const float *dout, int B, int T, int H, int hs, nd_rope r);
/* The same at rank `rank` of cp's true positions (nd_ring_position). */
void nd_rope_forward_ring(float *out, const float *inp, int B, int T, int H, int hs, nd_rope r, int cp, int rank);
void nd_rope_backward_ring(float *dinp, const float *dout, int B, int T, int H, int hs, nd_rope r, int cp, int rank);

/* ---- generation's attention over a key/value cache (S, NKV, hs): the T new
 * tokens at positions pos .. pos + T - 1 (pos + T <= S) store their keys (rotated
 * by rope at their position when not NULL) and values in it, then each query
 * (rotated likewise) attends over the cache up to its own position.
 * out (T, NH, hs); new token i's query heads at q + i*qstride, its key and
 * value heads at k, v + i*kvstride (GPT-2's packed qkv or Llama's q, k, v).
 * 0, or 1 when out of memory. */
int nd_kv_attention(float *out, float *kcache, float *vcache, const float *q, const float *k, const float *v,
                    int qstride, int kvstride, int T, int pos, int NH, int NKV, int hs, const nd_rope *rope);

/* ---- gated SiLU MLP: out = silu(gate) * up, n elements; the backward
 * overwrites dgate and dup. */
void nd_swiglu_forward(float *out, const float *gate, const float *up, int64_t n);
void nd_swiglu_backward(float *dgate, float *dup, const float *gate, const float *up, const float *dout, int64_t n);

/* ---- GeLU, tanh approximation (GPT-2's gelu_new). n elements. */
void nd_gelu_forward(float *out, const float *inp, int64_t n);
/* dinp = gelu'(inp) * dout (overwrite) */
void nd_gelu_backward(float *dinp, const float *inp, const float *dout, int64_t n);

/* ---- residual: out = a + b (n elements). The backward is the identity on
 * both branches: it is expressed by the graph, with no kernel. */
void nd_residual_forward(float *out, const float *a, const float *b, int64_t n);

/* ---- embedding, vocabulary-parallel.
 * out (B*T, C) = wte_shard[tok - v0] if v0 <= tok < v0 + Vs, else 0,
 *                plus wpe[t] when wpe (T, C) is not NULL.
 * tokens (B*T); wte_shard (Vs, C) holds rows v0 .. v0 + Vs - 1 of wte. */
void nd_embedding_forward(float *out, const int32_t *tokens, const float *wte_shard, const float *wpe, int B, int T,
                          int C, int v0, int Vs);
/* dwte_shard (Vs, C) = beta * dwte_shard + scatter of dout rows into the tokens' rows;
 * dwpe (T, C) = beta * dwpe + sum over batch of dout; either may be NULL. */
void nd_embedding_backward(float *dwte_shard, float *dwpe, const float *dout, const int32_t *tokens, int B, int T,
                           int C, int v0, int Vs, float beta);

/* ---- cross-entropy over a vocabulary split in shards (vocabulary parallel).
 * Step 1, per shard: stats (N, 3) = {max of the shard's logits, sum of
 * exp(logit - max) over the shard, logit of the target if it is in the shard
 * else 0}. logits (N, Vs) hold columns v0 .. v0 + Vs - 1; targets (N). */
void nd_crossentropy_stats(float *stats, const float *logits, const int32_t *targets, int N, int Vs, int v0);
/* Step 2, over all shards, in shard order (shard_stats[s] is shard s's (N, 3)
 * stats): the loss, the sum over rows of (log-sum-exp over the whole
 * vocabulary - target logit) in double; and for the backward, lse (N) = that
 * log-sum-exp, computed in double the same way, so both agree bit for bit. */
double nd_crossentropy_combine(const float *const *shard_stats, int nshards, int N);
void nd_crossentropy_lse(float *lse, const float *const *shard_stats, int nshards, int N);
/* Step 3, per shard, in place: dlogits (N, Vs) = scale * (softmax - onehot(target)),
 * with lse (N) from step 2. scale is 1 / (tokens of the global batch). */
void nd_crossentropy_backward(float *dlogits, const float *logits, const float *lse, const int32_t *targets, int N,
                              int Vs, int v0, float scale);

/* ---- optimizer
 * AdamW with decoupled weight decay and bias correction, t >= 1 the step number.
 * grad is multiplied by grad_scale first (gradient clipping). */
void nd_adamw(float *param, float *m, float *v, const float *grad, int64_t n, float lr, float beta1, float beta2,
              float eps, float weight_decay, float grad_scale, int t);
/* Sum of squares of x (n), accumulated in double. */
double nd_sumsq(const float *x, int64_t n);
/* The squares of x added to the 8 lanes of nd_sumsq (kernels/cpu/lanes.h):
 * one call on a whole array or calls on consecutive pieces that each start
 * on a multiple of 8 elements give the same lanes, bit for bit. */
void nd_sumsq_lanes(double *lanes, const float *x, int64_t n);
double nd_lanes_total(const double *lanes); /* the fixed tree of nd_sumsq */
/* out (cols) += the column sums of x (rows, cols), each added in row order (a linear layer's bias gradient). */
void nd_add_column_sums(float *out, const float *x, int rows, int cols);
/* The factor that clips a gradient of norm `norm` to max_norm (1 if max_norm <= 0 or not needed). */
float nd_clip_scale(double norm, double max_norm);

/* ---- collectives' arithmetic (the CPU algorithm: a fixed-order sum).
 * out (n) = sum over i of parts[i] (n), summed in index order; out may be parts[0]. */
void nd_sum_ordered(float *out, const float *const *parts, int nparts, int64_t n);

#endif
