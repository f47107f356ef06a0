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

void nd_ref_gelu(double *out, const double *inp, int64_t n) {
  const double s = sqrt(2.0 / 3.14159265358979323846);
  for (int64_t i = 0; i < n; i++) {
    double x = inp[i];
    out[i] = 0.5 * x * (1.0 + tanh(s * (x + 0.044715 * x * x * x)));
  }
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
