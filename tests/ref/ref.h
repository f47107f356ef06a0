/* Double-precision reference implementations of the GPT step's operators, for
 * tests: plain loops, no BLAS, no tricks. Same shapes and layouts as the CPU
 * kernels in kernels/cpu/kernels.h (row-major, weights input x output), with
 * double arrays. Outputs first, then inputs, then sizes. The replaceable
 * kinds' operators (matmul, LayerNorm, attention, residual) are the
 * library's, kernels/reference.h, which kernel-check uses too. */
#ifndef ND_TESTS_REF_REF_H
#define ND_TESTS_REF_REF_H

#include <stdint.h>

#include "kernels/reference.h" /* the replaceable kinds' operators */

/* ---- helpers */

/* A small deterministic generator (splitmix64) so tests are reproducible. */
typedef struct {
  uint64_t s;
} nd_ref_rng;
void nd_ref_rng_seed(nd_ref_rng *r, uint64_t seed);
/* uniform in [lo, hi) */
double nd_ref_uniform(nd_ref_rng *r, double lo, double hi);
/* x (n) filled with uniform values in [lo, hi) */
void nd_ref_fill(float *x, int64_t n, nd_ref_rng *r, double lo, double hi);
/* y (n) = (double) x (n) */
void nd_ref_to_double(double *y, const float *x, int64_t n);
/* ||a - b|| / ||b|| (or ||a|| when b is 0) */
double nd_ref_rel_err(const float *a, const double *b, int64_t n);
double nd_ref_rel_err_d(const double *a, const double *b, int64_t n);

/* ---- operators */

/* GeLU, tanh approximation. out (n), inp (n). */
void nd_ref_gelu(double *out, const double *inp, int64_t n);
/* out (B*T, C) = wte_shard[tok - v0] for tokens in [v0, v0 + Vs) else 0,
 * + wpe[t] if wpe (T, C) is not NULL. Pass v0 = 0, Vs = V for the full table. */
void nd_ref_embedding(double *out, const int32_t *tokens, const double *wte_shard, const double *wpe, int B, int T,
                      int C, int v0, int Vs);
/* log(sum_j exp(row[j])) of row (V), from its maximum */
double nd_ref_logsumexp(const double *row, int V);
/* Full-vocabulary cross-entropy: losses (N) or NULL; logits (N, V); targets (N).
 * Returns the sum of the losses. */
double nd_ref_crossentropy(double *losses, const double *logits, const int32_t *targets, int N, int V);
/* One AdamW step (decoupled weight decay, bias correction with step t >= 1,
 * grad scaled by grad_scale first). param, m, v, grad: (n). */
void nd_ref_adamw(double *param, double *m, double *v, const double *grad, int64_t n, double lr, double beta1,
                  double beta2, double eps, double weight_decay, double grad_scale, int t);

#endif
