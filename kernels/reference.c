/* Double-precision references of the replaceable kinds: see reference.h. */
#include "kernels/reference.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* Where weight element (k, j) of a (K, N) weight is stored. */
static size_t w_at(int k, int j, int K, int N, int trans_w) { return trans_w ? (size_t)j * K + k : (size_t)k * N + j; }

void nd__ref_matmul_fwd(double *out, const double *inp, const double *weight, const double *bias, int M, int K, int N,
                        int trans_w) {
  // out (M, N), inp (M, K), weight (K, N), bias (N)
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = bias ? bias[j] : 0.0;
      for (int k = 0; k < K; k++) s += inp[(size_t)i * K + k] * weight[w_at(k, j, K, N, trans_w)];
      out[(size_t)i * N + j] = s;
    }
}

void nd__ref_matmul_bwd(double *dinp, double *dweight, double *dbias, const double *dout, const double *inp,
                        const double *weight, int M, int K, int N, int trans_w) {
  // dinp (M, K), dweight (K, N), dbias (N), dout (M, N), inp (M, K), weight (K, N)
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double d = dout[(size_t)i * N + j];
      if (dbias) dbias[j] += d;
      for (int k = 0; k < K; k++) {
        size_t w = w_at(k, j, K, N, trans_w);
        if (dinp) dinp[(size_t)i * K + k] += d * weight[w];
        if (dweight) dweight[w] += d * inp[(size_t)i * K + k];
      }
    }
}

void nd__ref_layernorm_fwd(double *out, double *mean, double *rstd, const double *inp, const double *weight,
                           const double *bias, int N, int C) {
  // out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C)
  for (int i = 0; i < N; i++) {
    const double *x = inp + (size_t)i * C;
    double m = 0.0, v = 0.0;
    for (int j = 0; j < C; j++) m += x[j];
    m /= C;
    for (int j = 0; j < C; j++) v += (x[j] - m) * (x[j] - m);
    v /= C;
    double s = 1.0 / sqrt(v + 1e-5);
    for (int j = 0; j < C; j++) out[(size_t)i * C + j] = (x[j] - m) * s * weight[j] + bias[j];
    if (mean) mean[i] = m;
    if (rstd) rstd[i] = s;
  }
}

void nd__ref_layernorm_bwd(double *dinp, double *dweight, double *dbias, const double *dout, const double *inp,
                           const double *weight, const double *mean, const double *rstd, int N, int C) {
  // dinp (N, C), dweight (C), dbias (C), dout (N, C), inp (N, C), weight (C), mean (N), rstd (N)
  for (int i = 0; i < N; i++) {
    const double *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
    double sum_d = 0, sum_dx = 0; // the row sums of the normalization's gradient and of it times xhat
    for (int j = 0; j < C; j++) {
      double xhat = (x[j] - mean[i]) * rstd[i];
      if (dweight) dweight[j] += dy[j] * xhat;
      if (dbias) dbias[j] += dy[j];
      if (!dinp) continue; // weight is read for dinp only
      sum_d += dy[j] * weight[j];
      sum_dx += dy[j] * weight[j] * xhat;
    }
    for (int j = 0; dinp && j < C; j++) {
      double xhat = (x[j] - mean[i]) * rstd[i];
      dinp[(size_t)i * C + j] += rstd[i] * (dy[j] * weight[j] - sum_d / C - xhat * sum_dx / C);
    }
  }
}

/* The offsets of head h's q, k and v at position t of batch b in qkv (B, T, 3C). */
static size_t qkv_at(int b, int t, int which, int h, int T, int C, int hs) {
  return ((size_t)b * T + t) * 3 * C + (size_t)which * C + (size_t)h * hs;
}

void nd__ref_attention_fwd(double *out, double *lse, const double *qkv, int B, int T, int NH, int hs) {
  // out (B, T, C), lse (B, NH, T), qkv (B, T, 3C)
  const int C = NH * hs;
  const double scale = 1.0 / sqrt((double)hs);
  double *p = malloc((size_t)(T > 0 ? T : 1) * sizeof *p); // (T) one row's probabilities
  if (!p) abort();
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      for (int t = 0; t < T; t++) {
        const double *q = qkv + qkv_at(b, t, 0, h, T, C, hs);
        double mx = -INFINITY, sum = 0.0;
        for (int u = 0; u <= t; u++) {
          const double *k = qkv + qkv_at(b, u, 1, h, T, C, hs);
          double s = 0.0;
          for (int d = 0; d < hs; d++) s += q[d] * k[d];
          p[u] = s * scale;
          mx = fmax(mx, p[u]);
        }
        for (int u = 0; u <= t; u++) sum += (p[u] = exp(p[u] - mx));
        for (int u = 0; u <= t; u++) p[u] /= sum;
        double *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
        for (int d = 0; d < hs; d++) {
          double s = 0.0;
          for (int u = 0; u <= t; u++) s += p[u] * qkv[qkv_at(b, u, 2, h, T, C, hs) + d];
          o[d] = s;
        }
        if (lse) lse[((size_t)b * NH + h) * T + t] = mx + log(sum);
      }
  free(p);
}

void nd__ref_attention_bwd(double *dqkv, const double *dout, const double *qkv, const double *out, const double *lse,
                           int B, int T, int NH, int hs) {
  // dqkv (B, T, 3C), dout (B, T, C), qkv (B, T, 3C), out (B, T, C), lse (B, NH, T)
  const int C = NH * hs;
  const double scale = 1.0 / sqrt((double)hs);
  double *p = malloc((size_t)(T > 0 ? T : 1) * 2 * sizeof *p); // (T) one row's probabilities, then their gradient
  if (!p) abort();
  double *dp = p + (T > 0 ? T : 1);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      for (int t = 0; t < T; t++) {
        const double *d = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
        const double *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
        const double *q = qkv + qkv_at(b, t, 0, h, T, C, hs);
        const double l = lse[((size_t)b * NH + h) * T + t];
        double *dq = dqkv + qkv_at(b, t, 0, h, T, C, hs);
        double D = 0; // rowsum(dout * out), which is rowsum(p * dp)
        for (int k = 0; k < hs; k++) D += d[k] * o[k];
        for (int u = 0; u <= t; u++) {
          const double *k = qkv + qkv_at(b, u, 1, h, T, C, hs);
          const double *v = qkv + qkv_at(b, u, 2, h, T, C, hs);
          double *dv = dqkv + qkv_at(b, u, 2, h, T, C, hs);
          double s = 0;
          dp[u] = 0;
          for (int c = 0; c < hs; c++) s += q[c] * k[c], dp[u] += d[c] * v[c];
          p[u] = exp(s * scale - l); // the probability, recomputed from the saved log-sum-exp
          for (int c = 0; c < hs; c++) dv[c] += p[u] * d[c];
        }
        for (int u = 0; u <= t; u++) {
          double ds = p[u] * (dp[u] - D) * scale; // the gradient of score (t, u)
          const double *k = qkv + qkv_at(b, u, 1, h, T, C, hs);
          double *dk = dqkv + qkv_at(b, u, 1, h, T, C, hs);
          for (int c = 0; c < hs; c++) {
            dq[c] += ds * k[c];
            dk[c] += ds * q[c];
          }
        }
      }
  free(p);
}

void nd__ref_residual_fwd(double *out, const double *a, const double *b, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
