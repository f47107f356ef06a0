/* Internal: double-precision references of the replaceable kinds' operators:
 * plain loops, no BLAS, no float. `ndgraph kernel-check` compares plugin
 * kernels with them, and the tests' fp64 trainer (tests/ref/gpt.c) is built
 * on them; tests/test_kernels checks them against finite differences.
 * Row-major, contiguous; a weight is (K, N), or stored (N, K) when trans_w.
 * Outputs first, then inputs, then sizes. A backward adds its gradients to
 * what its outputs hold (+=); an output given as NULL is not computed. */
#ifndef ND_KERNELS_REFERENCE_H
#define ND_KERNELS_REFERENCE_H

#include <stdint.h>

/* out (M, N) = inp (M, K) . weight (K, N) + bias (N); bias may be NULL. */
void nd__ref_matmul_fwd(double *out, const double *inp, const double *weight, const double *bias, int M, int K, int N,
                        int trans_w);
/* dinp (M, K), dweight (K, N) (stored as weight is), dbias (N), from dout
 * (M, N); weight is read for dinp only, inp for dweight only. */
void nd__ref_matmul_bwd(double *dinp, double *dweight, double *dbias, const double *dout, const double *inp,
                        const double *weight, int M, int K, int N, int trans_w);

/* LayerNorm over the last dimension, eps 1e-5: out (N, C), mean (N) and
 * rstd (N) (either may be NULL), inp (N, C), weight (C), bias (C). */
void nd__ref_layernorm_fwd(double *out, double *mean, double *rstd, const double *inp, const double *weight,
                           const double *bias, int N, int C);
/* dinp (N, C), dweight (C), dbias (C), from dout (N, C) and the forward's
 * inp (N, C), weight (C), mean (N), rstd (N), whatever their values;
 * weight is read for dinp only. */
void nd__ref_layernorm_bwd(double *dinp, double *dweight, double *dbias, const double *dout, const double *inp,
                           const double *weight, const double *mean, const double *rstd, int N, int C);

/* Causal self-attention, scale 1 / sqrt(hs): out (B, T, C), lse (B, NH, T)
 * each query row's log-sum-exp of its scaled scores, or NULL; qkv (B, T, 3C)
 * as [q heads | k heads | v heads]; C = NH * hs. */
void nd__ref_attention_fwd(double *out, double *lse, const double *qkv, int B, int T, int NH, int hs);
/* dqkv (B, T, 3C) from dout (B, T, C), qkv, out (B, T, C) and lse as the
 * forward's: the probabilities exp(score - lse), the scores' gradient
 * p (dp - rowsum(dout * out)), whatever out and lse hold. */
void nd__ref_attention_bwd(double *dqkv, const double *dout, const double *qkv, const double *out, const double *lse,
                           int B, int T, int NH, int hs);

/* out (n) = a (n) + b (n) */
void nd__ref_residual_fwd(double *out, const double *a, const double *b, int64_t n);

#endif
