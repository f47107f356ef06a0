/* Context parallelism's kernels (graph/ring.c): the attention of one rank's
 * queries over another rank's keys and values at their true positions, the
 * merge of two partial results by their log-sum-exp, the block's backward,
 * and the position rows of a rank's chunks. A rank of cp holds T tokens:
 * chunk c (positions c h ...) then chunk 2 cp - 1 - c, h = T / 2. Between two
 * different ranks a chunk pair is wholly visible or wholly masked, so a
 * block is plain (unmasked) attention over the visible key rows; rows that
 * see none get lse -inf and a zero output, which the merge leaves out. The
 * loops are plain and in a fixed order: the same bits under any schedule. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd_exp.h"

int64_t nd_ring_position(int T, int cp, int rank, int i) {
  int h = T / 2;
  return i < h ? (int64_t)rank * h + i : (int64_t)(2 * cp - 1 - rank) * h + (i - h);
}

/* The key rows [k0, k0 + n) of rank kr that query row i of rank qr sees: a
 * chunk of keys is before or after a chunk of queries as a whole. */
static void visible(int T, int cp, int qr, int i, int kr, int *k0, int *n) {
  int h = T / 2;
  int64_t q = nd_ring_position(T, cp, qr, i);
  /* first chunk of kr always comes before its second; positions ascend within it */
  int64_t last_first = nd_ring_position(T, cp, kr, h - 1), last_second = nd_ring_position(T, cp, kr, T - 1);
  *k0 = 0;
  *n = last_second <= q ? T : last_first <= q ? h : 0;
}

int nd_ring_attention_forward(float *out, float *lse, const float *qkv, const float *kv, int B, int T, int NH, int hs,
                              int cp, int qr, int kr) {
  const int C = NH * hs, C3 = 3 * C;
  const float scale = 1.0f / sqrtf((float)hs);
  float *s = malloc((size_t)T * sizeof *s);
  if (!s) return 1;
  for (int b = 0; b < B; b++)
    for (int hd = 0; hd < NH; hd++)
      for (int i = 0; i < T; i++) {
        const float *q = qkv + ((size_t)b * T + i) * C3 + (size_t)hd * hs;
        float *o = out + ((size_t)b * T + i) * C + (size_t)hd * hs;
        float *l = lse + ((size_t)b * NH + hd) * T + i;
        int k0, n;
        visible(T, cp, qr, i, kr, &k0, &n);
        memset(o, 0, (size_t)hs * sizeof *o);
        if (n == 0) {
          *l = -INFINITY;
          continue;
        }
        float m = -INFINITY;
        for (int k = k0; k < k0 + n; k++) {
          const float *kk = kv + ((size_t)b * T + k) * C3 + C + (size_t)hd * hs;
          float dot = 0.0f;
          for (int d = 0; d < hs; d++) dot += q[d] * kk[d];
          s[k] = dot * scale;
          if (s[k] > m) m = s[k];
        }
        float sum = 0.0f;
        for (int k = k0; k < k0 + n; k++) {
          float p = nd__expf_simd(s[k] - m);
          const float *vv = kv + ((size_t)b * T + k) * C3 + 2 * C + (size_t)hd * hs;
          sum += p;
          for (int d = 0; d < hs; d++) o[d] += p * vv[d];
        }
        for (int d = 0; d < hs; d++) o[d] /= sum;
        *l = m + logf(sum);
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

int nd_ring_attention_backward(float *dqkv, float *dkv, const float *dout, const float *qkv, const float *kv,
                               const float *out, const float *lse, int B, int T, int NH, int hs, int cp, int qr,
                               int kr) {
  const int C = NH * hs, C3 = 3 * C;
  const float scale = 1.0f / sqrtf((float)hs);
  memset(dkv, 0, (size_t)B * T * C3 * sizeof *dkv);
  for (int b = 0; b < B; b++)
    for (int hd = 0; hd < NH; hd++)
      for (int i = 0; i < T; i++) {
        int k0, n;
        visible(T, cp, qr, i, kr, &k0, &n);
        if (n == 0) continue;
        size_t qi = ((size_t)b * T + i) * C3 + (size_t)hd * hs, oi = ((size_t)b * T + i) * C + (size_t)hd * hs;
        const float *q = qkv + qi, *dO = dout + oi, *O = out + oi;
        float *dq = dqkv + qi;
        float l = lse[((size_t)b * NH + hd) * T + i], D = 0.0f;
        for (int d = 0; d < hs; d++) D += dO[d] * O[d];
        for (int k = k0; k < k0 + n; k++) {
          size_t ki = ((size_t)b * T + k) * C3 + C + (size_t)hd * hs, vi = ki + C;
          float dot = 0.0f, dp = 0.0f;
          for (int d = 0; d < hs; d++) dot += q[d] * kv[ki + d], dp += dO[d] * kv[vi + d];
          float p = nd__expf_simd(dot * scale - l), ds = p * (dp - D) * scale;
          for (int d = 0; d < hs; d++) {
            dkv[vi + d] += p * dO[d];
            dq[d] += ds * kv[ki + d];
            dkv[ki + d] += ds * q[d];
          }
        }
      }
  return 0;
}

void nd_ring_kv_add(float *dqkv, const float *dkv, int B, int T, int C) {
  for (size_t r = 0; r < (size_t)B * T; r++) {
    float *d = dqkv + r * 3 * C + C;
    const float *p = dkv + r * 3 * C + C;
#pragma omp simd
    for (int j = 0; j < 2 * C; j++) d[j] += p[j];
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
