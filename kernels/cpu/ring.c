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

int nd_ring_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, int qs, int kvs,
                              int B, int T, int NH, int NKV, int hs, int cp, int qr, int kr) {
  const int C = NH * hs, group = NH / NKV;
  const float scale = 1.0f / sqrtf((float)hs);
  float *s = malloc((size_t)T * sizeof *s);
  if (!s) return 1;
  for (int b = 0; b < B; b++)
    for (int hd = 0; hd < NH; hd++)
      for (int i = 0; i < T; i++) {
        const float *qi = q + ((size_t)b * T + i) * qs + (size_t)hd * hs;
        const size_t kh = (size_t)(hd / group) * hs;
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
        for (int j = k0; j < k0 + n; j++) {
          const float *kk = k + ((size_t)b * T + j) * kvs + kh;
          float dot = 0.0f;
          for (int d = 0; d < hs; d++) dot += qi[d] * kk[d];
          s[j] = dot * scale;
          if (s[j] > m) m = s[j];
        }
        float sum = 0.0f;
        for (int j = k0; j < k0 + n; j++) {
          float p = nd__expf_simd(s[j] - m);
          const float *vv = v + ((size_t)b * T + j) * kvs + kh;
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

int nd_ring_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                               const float *v, const float *out, const float *lse, int qs, int kvs, int B, int T,
                               int NH, int NKV, int hs, int cp, int qr, int kr) {
  const int C = NH * hs, group = NH / NKV, KV = NKV * hs;
  const float scale = 1.0f / sqrtf((float)hs);
  for (size_t r = 0; r < (size_t)B * T; r++) {
    memset(dk + r * kvs, 0, (size_t)KV * sizeof *dk);
    memset(dv + r * kvs, 0, (size_t)KV * sizeof *dv);
  }
  for (int b = 0; b < B; b++)
    for (int hd = 0; hd < NH; hd++)
      for (int i = 0; i < T; i++) {
        int k0, n;
        visible(T, cp, qr, i, kr, &k0, &n);
        if (n == 0) continue;
        const size_t qi = ((size_t)b * T + i) * qs + (size_t)hd * hs, oi = ((size_t)b * T + i) * C + (size_t)hd * hs;
        const size_t kh = (size_t)(hd / group) * hs;
        const float *qq = q + qi, *dO = dout + oi, *O = out + oi;
        float *dqi = dq + qi;
        float l = lse[((size_t)b * NH + hd) * T + i], D = 0.0f;
        for (int d = 0; d < hs; d++) D += dO[d] * O[d];
        for (int j = k0; j < k0 + n; j++) {
          const size_t kj = ((size_t)b * T + j) * kvs + kh;
          float dot = 0.0f, dp = 0.0f;
          for (int d = 0; d < hs; d++) dot += qq[d] * k[kj + d], dp += dO[d] * v[kj + d];
          float p = nd__expf_simd(dot * scale - l), ds = p * (dp - D) * scale;
          for (int d = 0; d < hs; d++) {
            dv[kj + d] += p * dO[d];
            dqi[d] += ds * k[kj + d];
            dk[kj + d] += ds * qq[d];
          }
        }
      }
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
