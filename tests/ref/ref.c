/* Double-precision reference operators: see ref.h. */
#include "tests/ref/ref.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

void nd_ref_rng_seed(nd_ref_rng *r, uint64_t seed) { r->s = seed; }

static uint64_t next_u64(nd_ref_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double nd_ref_uniform(nd_ref_rng *r, double lo, double hi) {
  return lo + (hi - lo) * ((double)(next_u64(r) >> 11) * 0x1.0p-53);
}

void nd_ref_fill(float *x, int64_t n, nd_ref_rng *r, double lo, double hi) {
  for (int64_t i = 0; i < n; i++) x[i] = (float)nd_ref_uniform(r, lo, hi);
}

void nd_ref_to_double(double *y, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = x[i];
}

double nd_ref_rel_err(const float *a, const double *b, int64_t n) {
  double num = 0.0, den = 0.0, na = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double d = (double)a[i] - b[i];
    num += d * d;
    den += b[i] * b[i];
    na += (double)a[i] * a[i];
  }
  if (den == 0.0) return sqrt(na);
  return sqrt(num / den);
}

double nd_ref_rel_err_d(const double *a, const double *b, int64_t n) {
  double num = 0.0, den = 0.0, na = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double d = a[i] - b[i];
    num += d * d;
    den += b[i] * b[i];
    na += a[i] * a[i];
  }
  if (den == 0.0) return sqrt(na);
  return sqrt(num / den);
}

void nd_ref_matmul(double *out, const double *inp, const double *weight, const double *bias, int M, int K, int N,
                   int trans_w) {
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      double s = bias ? bias[j] : 0.0;
      for (int k = 0; k < K; k++) {
        double w = trans_w ? weight[(size_t)j * K + k] : weight[(size_t)k * N + j];
        s += inp[(size_t)i * K + k] * w;
      }
      out[(size_t)i * N + j] = s;
    }
  }
}

void nd_ref_layernorm(double *out, double *mean, double *rstd, const double *inp, const double *weight,
                      const double *bias, int N, int C) {
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

void nd_ref_attention(double *out, double *att, const double *qkv, int B, int T, int NH, int hs) {
  const int C = NH * hs;
  const double scale = 1.0 / sqrt((double)hs);
  double *p = malloc((size_t)(T > 0 ? T : 1) * sizeof(double)); // probabilities of one row
  if (!p) abort();
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      for (int t = 0; t < T; t++) {
        const double *q = qkv + ((size_t)b * T + t) * 3 * C + (size_t)h * hs;
        double mx = -INFINITY;
        for (int u = 0; u <= t; u++) {
          const double *k = qkv + ((size_t)b * T + u) * 3 * C + C + (size_t)h * hs;
          double s = 0.0;
          for (int d = 0; d < hs; d++) s += q[d] * k[d];
          p[u] = s * scale;
          if (p[u] > mx) mx = p[u];
        }
        double sum = 0.0;
        for (int u = 0; u <= t; u++) {
          p[u] = exp(p[u] - mx);
          sum += p[u];
        }
        for (int u = 0; u < T; u++) p[u] = u <= t ? p[u] / sum : 0.0;
        double *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
        for (int d = 0; d < hs; d++) {
          double s = 0.0;
          for (int u = 0; u <= t; u++) s += p[u] * qkv[((size_t)b * T + u) * 3 * C + 2 * C + (size_t)h * hs + d];
          o[d] = s;
        }
        if (att) {
          double *a = att + (((size_t)b * NH + h) * T + t) * T;
          for (int u = 0; u < T; u++) a[u] = p[u];
        }
      }
    }
  }
  free(p);
}

void nd_ref_gelu(double *out, const double *inp, int64_t n) {
  const double s = sqrt(2.0 / 3.14159265358979323846);
  for (int64_t i = 0; i < n; i++) {
    double x = inp[i];
    out[i] = 0.5 * x * (1.0 + tanh(s * (x + 0.044715 * x * x * x)));
  }
}

void nd_ref_residual(double *out, const double *a, const double *b, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void nd_ref_embedding(double *out, const int32_t *tokens, const double *wte_shard, const double *wpe, int B, int T,
                      int C, int v0, int Vs) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      size_t bt = (size_t)b * T + t;
      int64_t r = (int64_t)tokens[bt] - v0;
      for (int c = 0; c < C; c++) {
        double e = (r >= 0 && r < Vs) ? wte_shard[(size_t)r * C + c] : 0.0;
        out[bt * C + c] = e + (wpe ? wpe[(size_t)t * C + c] : 0.0);
      }
    }
  }
}

double nd_ref_logsumexp(const double *row, int V) {
  double mx = -INFINITY, sum = 0.0;
  for (int j = 0; j < V; j++) mx = row[j] > mx ? row[j] : mx;
  for (int j = 0; j < V; j++) sum += exp(row[j] - mx);
  return mx + log(sum);
}

double nd_ref_crossentropy(double *losses, const double *logits, const int32_t *targets, int N, int V) {
  double total = 0.0;
  for (int i = 0; i < N; i++) {
    const double *row = logits + (size_t)i * V;
    double l = nd_ref_logsumexp(row, V) - row[targets[i]];
    if (losses) losses[i] = l;
    total += l;
  }
  return total;
}

void nd_ref_adamw(double *param, double *m, double *v, const double *grad, int64_t n, double lr, double beta1,
                  double beta2, double eps, double weight_decay, double grad_scale, int t) {
  for (int64_t i = 0; i < n; i++) {
    double g = grad[i] * grad_scale;
    m[i] = beta1 * m[i] + (1.0 - beta1) * g;
    v[i] = beta2 * v[i] + (1.0 - beta2) * g * g;
    double mhat = m[i] / (1.0 - pow(beta1, t));
    double vhat = v[i] / (1.0 - pow(beta2, t));
    param[i] -= lr * (mhat / (sqrt(vhat) + eps) + weight_decay * param[i]);
  }
}
