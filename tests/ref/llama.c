/* The double-precision Llama forward of tests/ref/llama.h. */
#include "tests/ref/llama.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* y[T, O] = x[T, I] . w^T, w [O, I] */
static void linear(double *y, const double *x, const double *w, int T, int I, int O) {
  for (int t = 0; t < T; t++)
    for (int o = 0; o < O; o++) {
      double s = 0;
      for (int i = 0; i < I; i++) s += x[(size_t)t * I + i] * w[(size_t)o * I + i];
      y[(size_t)t * O + o] = s;
    }
}

static void rmsnorm(double *y, const double *x, const double *w, int T, int C, double eps) {
  for (int t = 0; t < T; t++) {
    double ss = 0;
    for (int c = 0; c < C; c++) ss += x[(size_t)t * C + c] * x[(size_t)t * C + c];
    double s = 1.0 / sqrt(ss / C + eps);
    for (int c = 0; c < C; c++) y[(size_t)t * C + c] = w[c] * x[(size_t)t * C + c] * s;
  }
}

/* rotate_half: element i of a head pairs with element i + hs/2 */
static void rope(double *x, int T, int H, int hs, double theta) {
  int half = hs / 2;
  for (int t = 0; t < T; t++)
    for (int h = 0; h < H; h++)
      for (int i = 0; i < half; i++) {
        double a = t * pow(theta, -2.0 * i / hs), c = cos(a), s = sin(a);
        double *p = x + ((size_t)t * H + h) * hs;
        double x0 = p[i], x1 = p[i + half];
        p[i] = x0 * c - x1 * s;
        p[i + half] = x1 * c + x0 * s;
      }
}

double nd_ref_llama_loss(const nd_ref_llama *m, const int32_t *tokens, int T) {
  int C = m->C, hs = C / m->NH, KVC = m->KV * hs, W = m->I > m->V ? m->I : m->V;
  size_t tc = (size_t)T * C;
  double *x = malloc(tc * sizeof *x), *h = malloc(tc * sizeof *h), *q = malloc(tc * sizeof *q);
  double *k = malloc((size_t)T * KVC * sizeof *k), *v = malloc((size_t)T * KVC * sizeof *v);
  double *y = malloc(tc * sizeof *y), *o = malloc(tc * sizeof *o), *s = malloc((size_t)T * sizeof *s);
  double *a = malloc((size_t)T * W * sizeof *a), *b = malloc((size_t)T * m->I * sizeof *b);
  double loss = -1;
  if (!x || !h || !q || !k || !v || !y || !o || !s || !a || !b) goto done;
  for (int t = 0; t < T; t++) memcpy(x + (size_t)t * C, m->embed + (size_t)tokens[t] * C, C * sizeof *x);
  for (int l = 0; l < m->L; l++) {
    const nd_ref_llama_layer *ly = &m->layers[l];
    rmsnorm(h, x, ly->attn_norm, T, C, m->eps);
    linear(q, h, ly->q, T, C, C);
    linear(k, h, ly->k, T, C, KVC);
    linear(v, h, ly->v, T, C, KVC);
    rope(q, T, m->NH, hs, m->theta);
    rope(k, T, m->KV, hs, m->theta);
    for (int hd = 0; hd < m->NH; hd++) {
      int g = hd / (m->NH / m->KV);
      for (int t = 0; t < T; t++) {
        double mx = -INFINITY, z = 0;
        for (int u = 0; u <= t; u++) {
          double d = 0;
          for (int i = 0; i < hs; i++) d += q[(size_t)t * C + hd * hs + i] * k[(size_t)u * KVC + g * hs + i];
          s[u] = d / sqrt(hs);
          mx = fmax(mx, s[u]);
        }
        for (int u = 0; u <= t; u++) z += s[u] = exp(s[u] - mx);
        for (int i = 0; i < hs; i++) {
          double acc = 0;
          for (int u = 0; u <= t; u++) acc += s[u] / z * v[(size_t)u * KVC + g * hs + i];
          y[(size_t)t * C + hd * hs + i] = acc;
        }
      }
    }
    linear(o, y, ly->o, T, C, C);
    for (size_t i = 0; i < tc; i++) x[i] += o[i];
    rmsnorm(h, x, ly->mlp_norm, T, C, m->eps);
    linear(a, h, ly->gate, T, C, m->I);
    linear(b, h, ly->up, T, C, m->I);
    for (size_t i = 0; i < (size_t)T * m->I; i++) a[i] = a[i] / (1.0 + exp(-a[i])) * b[i];
    linear(o, a, ly->down, T, m->I, C);
    for (size_t i = 0; i < tc; i++) x[i] += o[i];
  }
  rmsnorm(h, x, m->norm, T, C, m->eps);
  linear(a, h, m->head, T, C, m->V);
  loss = 0;
  for (int t = 0; t < T; t++) {
    const double *row = a + (size_t)t * m->V;
    double mx = -INFINITY, z = 0;
    for (int j = 0; j < m->V; j++) mx = fmax(mx, row[j]);
    for (int j = 0; j < m->V; j++) z += exp(row[j] - mx);
    loss += mx + log(z) - row[tokens[t + 1]];
  }
  loss /= T;
done:
  free(x), free(h), free(q), free(k), free(v), free(y), free(o), free(s), free(a), free(b);
  return loss;
}
