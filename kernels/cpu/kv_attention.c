/* Generation's attention (graph/generate.c): T new tokens at positions
 * pos .. pos + T - 1 store their keys and values in the layer's cache, then
 * each query attends causally over the cache up to its own position. RoPE,
 * where given, rotates the new queries and keys at those positions as
 * kernels/cpu/rope.c does over a whole sequence. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernels.h"

static void rotate_at(float *y, const float *x, int hs, int t, const nd_rope *r) {
  if (!r) {
    memcpy(y, x, (size_t)hs * sizeof *y);
    return;
  }
  const int half = hs / 2;
  for (int i = 0; i < half; i++) {
    float ang = (float)t * nd_rope_inv_freq(*r, i, hs), c = cosf(ang), s = sinf(ang);
    float x0 = x[i], x1 = x[i + half];
    y[i] = x0 * c - x1 * s;
    y[i + half] = x1 * c + x0 * s;
  }
}

int nd_kv_attention(float *out, float *kcache, float *vcache, const float *q, const float *k, const float *v,
                    int qstride, int kvstride, int T, int pos, int NH, int NKV, int hs, const nd_rope *rope) {
  // out (T, NH, hs); kcache, vcache (S, NKV, hs); query i's heads at q + i*qstride, its keys and values at k, v + i*kvstride
  const size_t row = (size_t)NKV * hs;
  for (int i = 0; i < T; i++)
    for (int g = 0; g < NKV; g++) {
      rotate_at(kcache + (size_t)(pos + i) * row + (size_t)g * hs, k + (size_t)i * kvstride + (size_t)g * hs, hs,
                pos + i, rope);
      memcpy(vcache + (size_t)(pos + i) * row + (size_t)g * hs, v + (size_t)i * kvstride + (size_t)g * hs,
             (size_t)hs * sizeof(float));
    }
  float *qr = malloc(((size_t)hs + (size_t)pos + (size_t)T) * sizeof *qr);
  if (!qr) return 1;
  float *p = qr + hs, scale = 1.0f / sqrtf((float)hs);
  for (int i = 0; i < T; i++) {
    int n = pos + i + 1;
    for (int h = 0; h < NH; h++) {
      const size_t g = (size_t)(h / (NH / NKV)) * hs;
      rotate_at(qr, q + (size_t)i * qstride + (size_t)h * hs, hs, pos + i, rope);
      /* the scores and the weighted values as BLAS products over the cache's
       * rows: the loops they replace, a scalar sum per key, made the
       * attention most of a decoding step's time after a few hundred positions */
      cblas_sgemv(CblasRowMajor, CblasNoTrans, n, hs, scale, kcache + g, (int)row, qr, 1, 0.0f, p, 1);
      float max = -INFINITY, sum = 0.0f;
      for (int j = 0; j < n; j++)
        if (p[j] > max) max = p[j];
      for (int j = 0; j < n; j++) sum += p[j] = expf(p[j] - max);
      cblas_sgemv(CblasRowMajor, CblasTrans, n, hs, 1.0f / sum, vcache + g, (int)row, p, 1, 0.0f,
                  out + ((size_t)i * NH + h) * hs, 1);
    }
  }
  free(qr);
  return 0;
}
