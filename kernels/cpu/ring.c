/* Context parallelism's kernels (graph/ring.c): the attention of one rank's
 * queries over another rank's keys and values at their true positions, the
 * merge of two partial results by their log-sum-exp, the block's backward,
 * and the position rows of a rank's chunks. A rank of cp holds T tokens:
 * chunk c (positions c h ...) then chunk 2 cp - 1 - c, h = T / 2. Between two
 * different ranks a chunk pair is wholly visible or wholly masked, so a
 * block is plain (unmasked) attention over the visible key rows, matrix
 * products over dense rectangles; rows that see none get lse -inf and a zero
 * output, which the merge leaves out. Sizes fix the order of every sum: the
 * same bits under any schedule. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd_exp.h"

int64_t nd_ring_position(int T, int cp, int rank, int i) {
  int h = T / 2;
  return i < h ? (int64_t)rank * h + i : (int64_t)(2 * cp - 1 - rank) * h + (i - h);
}

/* How many of rank kr's key rows (always its first n) the queries of half
 * qh (chunk qr, or chunk 2 cp - 1 - qr) of rank qr see: a chunk of keys is
 * wholly before or wholly after a chunk of queries, so a block is dense
 * rectangles: none, kr's first chunk, or both its chunks. */
static int visible(int T, int cp, int qr, int qh, int kr) {
  int h = T / 2;
  int64_t q = nd_ring_position(T, cp, qr, qh * h);
  return nd_ring_position(T, cp, kr, T - 1) <= q ? T : nd_ring_position(T, cp, kr, h - 1) <= q ? h : 0;
}

int nd_ring_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, int qs, int kvs,
                              int B, int T, int NH, int NKV, int hs, int cp, int qr, int kr) {
  const int C = NH * hs, group = NH / NKV, h = T / 2;
  const float scale = 1.0f / sqrtf((float)hs);
  float *s = malloc((size_t)h * T * sizeof *s);
  if (!s) return 1;
  for (int b = 0; b < B; b++)
    for (int hd = 0; hd < NH; hd++)
      for (int qh = 0; qh < 2; qh++) {
        const int n = visible(T, cp, qr, qh, kr), i0 = qh * h;
        const float *qi = q + ((size_t)b * T + i0) * qs + (size_t)hd * hs;
        const float *kk = k + (size_t)b * T * kvs + (size_t)(hd / group) * hs;
        const float *vv = v + (size_t)b * T * kvs + (size_t)(hd / group) * hs;
        float *o = out + ((size_t)b * T + i0) * C + (size_t)hd * hs;
        float *l = lse + ((size_t)b * NH + hd) * T + i0;
        if (n == 0) {
          for (int r = 0; r < h; r++) memset(o + (size_t)r * C, 0, (size_t)hs * sizeof *o), l[r] = -INFINITY;
          continue;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h, n, hs, scale, qi, qs, kk, kvs, 0.0f, s, n);
        for (int r = 0; r < h; r++) {
          float *row = s + (size_t)r * n, m = -INFINITY, sum = 0.0f;
          for (int j = 0; j < n; j++) m = row[j] > m ? row[j] : m;
          for (int j = 0; j < n; j++) sum += row[j] = nd__expf_simd(row[j] - m);
          for (int j = 0; j < n; j++) row[j] /= sum;
          l[r] = m + logf(sum);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h, hs, n, 1.0f, s, n, vv, kvs, 0.0f, o, C);
      }
  free(s);
  return 0;
}

void nd_ring_attention_merge(float *out, float *lse, const float *part, const float *part_lse, int B, int T, int NH,
                             int hs) {
  const int C = NH * hs;
  for (int b = 0; b < B; b++)
    for (int hd = 0; hd < NH; hd++)
      for (int i = 0; i < T; i++) {
        float *l = lse + ((size_t)b * NH + hd) * T + i;
        float lp = part_lse[((size_t)b * NH + hd) * T + i];
        if (lp == -INFINITY) continue; /* the block saw nothing */
        float *o = out + ((size_t)b * T + i) * C + (size_t)hd * hs;
        const float *p = part + ((size_t)b * T + i) * C + (size_t)hd * hs;
        float m = *l > lp ? *l : lp;
        float wa = *l == -INFINITY ? 0.0f : expf(*l - m), wb = expf(lp - m), sum = wa + wb;
        for (int d = 0; d < hs; d++) o[d] = (wa * o[d] + wb * p[d]) / sum;
        *l = m + logf(sum);
      }
}

int nd_ring_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                               const float *v, const float *out, const float *lse, int qs, int kvs, int B, int T,
                               int NH, int NKV, int hs, int cp, int qr, int kr) {
  const int C = NH * hs, group = NH / NKV, KV = NKV * hs, h = T / 2;
  const float scale = 1.0f / sqrtf((float)hs);
  float *p = malloc(2 * (size_t)h * T * sizeof *p), *dp = p + (size_t)h * T;
  if (!p) return 1;
  for (size_t r = 0; r < (size_t)B * T; r++) {
    memset(dk + r * kvs, 0, (size_t)KV * sizeof *dk);
    memset(dv + r * kvs, 0, (size_t)KV * sizeof *dv);
  }
  for (int b = 0; b < B; b++)
    for (int hd = 0; hd < NH; hd++)
      for (int qh = 0; qh < 2; qh++) {
        const int n = visible(T, cp, qr, qh, kr), i0 = qh * h;
        if (n == 0) continue;
        const size_t kh = (size_t)b * T * kvs + (size_t)(hd / group) * hs;
        const float *qi = q + ((size_t)b * T + i0) * qs + (size_t)hd * hs;
        const float *dO = dout + ((size_t)b * T + i0) * C + (size_t)hd * hs;
        const float *O = out + ((size_t)b * T + i0) * C + (size_t)hd * hs;
        const float *l = lse + ((size_t)b * NH + hd) * T + i0;
        /* the probabilities of the whole softmax from its log-sum-exp; dP = dO V^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h, n, hs, scale, qi, qs, k + kh, kvs, 0.0f, p, n);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h, n, hs, 1.0f, dO, C, v + kh, kvs, 0.0f, dp, n);
        for (int r = 0; r < h; r++) {
          float D = 0.0f, *pr = p + (size_t)r * n, *dr = dp + (size_t)r * n;
          for (int d = 0; d < hs; d++) D += dO[(size_t)r * C + d] * O[(size_t)r * C + d];
          for (int j = 0; j < n; j++) {
            pr[j] = nd__expf_simd(pr[j] - l[r]);
            dr[j] = pr[j] * (dr[j] - D) * scale; /* dS */
          }
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, h, hs, n, 1.0f, dp, n, k + kh, kvs, 1.0f,
                    dq + ((size_t)b * T + i0) * qs + (size_t)hd * hs, qs);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, hs, h, 1.0f, dp, n, qi, qs, 1.0f, dk + kh, kvs);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, hs, h, 1.0f, p, n, dO, C, 1.0f, dv + kh, kvs);
      }
  free(p);
  return 0;
}

void nd_ring_kv_add(float *dk, float *dv, const float *pk, const float *pv, int kvs, int B, int T, int width) {
  for (size_t r = 0; r < (size_t)B * T; r++) {
    float *a = dk + r * kvs, *c = dv + r * kvs;
    const float *x = pk + r * kvs, *y = pv + r * kvs;
#pragma omp simd
    for (int j = 0; j < width; j++) a[j] += x[j];
#pragma omp simd
    for (int j = 0; j < width; j++) c[j] += y[j];
  }
}

void nd_ring_positions(float *x, const float *wpe, int B, int T, int C, int cp, int rank) {
  for (int b = 0; b < B; b++)
    for (int i = 0; i < T; i++) {
      float *o = x + ((size_t)b * T + i) * C;
      const float *p = wpe + (size_t)nd_ring_position(T, cp, rank, i) * C;
#pragma omp simd
      for (int c = 0; c < C; c++) o[c] += p[c];
    }
}

void nd_ring_positions_backward(float *dwpe, const float *dout, int B, int T, int C, int cp, int rank, float beta) {
  if (beta == 0.0f) memset(dwpe, 0, (size_t)T * cp * C * sizeof *dwpe);
  for (int b = 0; b < B; b++)
    for (int i = 0; i < T; i++) {
      float *dp = dwpe + (size_t)nd_ring_position(T, cp, rank, i) * C;
      const float *d = dout + ((size_t)b * T + i) * C;
#pragma omp simd
      for (int c = 0; c < C; c++) dp[c] += d[c];
    }
}
