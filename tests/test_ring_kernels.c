/* Context parallelism's kernels (kernels/cpu/ring.c) against a
 * double-precision causal attention over the whole sequence: the sequence
 * cut into 2 cp chunks, rank c holding chunks c and 2 cp - 1 - c; each
 * rank's own block by the fused causal kernel (its grouped-query form),
 * every other rank's block by the ring kernel (with its key offset: the
 * blocks' true positions) and the log-sum-exp merge in rank order; backwards
 * the own block's backward, then the ring block's and the add to the keys'
 * owner. Output, lse and
 * dq, dk, dv within 1e-5 of the largest reference value, for cp 2, 3 and 4,
 * chunks of 1 and 3 tokens, 2 query heads over 2 or 1 key/value heads (q, k,
 * v as strided views of one buffer, as GPT-2's packed qkv). And the position
 * rows and the chunks' balance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "tests/tap.h"

#define TOL 1e-5

static double frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return ((*s >> 8) & 0xffff) / 65536.0 - 0.5;
}

/* Rows of width W = NH hs + 2 NKV hs: q, then k, then v (GPT-2's packed qkv
 * when NKV = NH; Llama's grouped-query heads as strided views otherwise). */
typedef struct shape {
  int B, NH, NKV, hs, W;
} shape;

/* whole-sequence causal attention in double: out (B, T, NH hs), lse (B, NH, T), dx (B, T, W) */
static void reference(const double *x, const double *dout, double *out, double *lse, double *dx, shape z, int T) {
  const int C = z.NH * z.hs, KV = z.NKV * z.hs, W = z.W, hs = z.hs;
  double scale = 1.0 / sqrt((double)hs), *p = malloc((size_t)T * sizeof *p);
  memset(dx, 0, (size_t)z.B * T * W * sizeof *dx);
  for (int b = 0; b < z.B; b++)
    for (int h = 0; h < z.NH; h++)
      for (int i = 0; i < T; i++) {
        const size_t kh = (size_t)(h / (z.NH / z.NKV)) * hs;
        const double *q = x + ((size_t)b * T + i) * W + h * hs;
        double m = -INFINITY, sum = 0;
        for (int k = 0; k <= i; k++) {
          const double *kk = x + ((size_t)b * T + k) * W + C + kh;
          double s = 0;
          for (int d = 0; d < hs; d++) s += q[d] * kk[d];
          p[k] = s * scale;
          m = fmax(m, p[k]);
        }
        for (int k = 0; k <= i; k++) sum += p[k] = exp(p[k] - m);
        double *o = out + ((size_t)b * T + i) * C + h * hs;
        const double *dO = dout + ((size_t)b * T + i) * C + h * hs;
        for (int d = 0; d < hs; d++) o[d] = 0;
        for (int k = 0; k <= i; k++) {
          p[k] /= sum;
          for (int d = 0; d < hs; d++) o[d] += p[k] * x[((size_t)b * T + k) * W + C + KV + kh + d];
        }
        lse[((size_t)b * z.NH + h) * T + i] = m + log(sum);
        double D = 0;
        for (int d = 0; d < hs; d++) D += dO[d] * o[d];
        for (int k = 0; k <= i; k++) {
          const double *kk = x + ((size_t)b * T + k) * W + C + kh, *vv = kk + KV;
          double dp = 0;
          for (int d = 0; d < hs; d++) dp += dO[d] * vv[d];
          double ds = p[k] * (dp - D) * scale;
          for (int d = 0; d < hs; d++) {
            dx[((size_t)b * T + i) * W + h * hs + d] += ds * kk[d];
            dx[((size_t)b * T + k) * W + C + kh + d] += ds * q[d];
            dx[((size_t)b * T + k) * W + C + KV + kh + d] += p[k] * dO[d];
          }
        }
      }
  free(p);
}

/* the largest |got - want| over the largest |want|, rows of width w of rank c's positions */
static double rel(const float *got, const double *want, int B, int T, int Tf, int w, int cp, int c, int bhead, int NH) {
  double err = 0, mag = 1e-30;
  for (int b = 0; b < B; b++)
    for (int i = 0; i < T; i++) {
      int64_t pos = nd_ring_position(T, cp, c, i);
      for (int j = 0; j < w; j++) {
        /* bhead: (B, NH, T) layout with w = NH heads */
        double wv = bhead ? want[((size_t)b * NH + j) * Tf + pos] : want[((size_t)b * Tf + pos) * w + j];
        double gv = bhead ? got[((size_t)b * NH + j) * T + i] : got[((size_t)b * T + i) * w + j];
        err = fmax(err, fabs(gv - wv));
        mag = fmax(mag, fabs(wv));
      }
    }
  return err / mag;
}

static void check(int cp, int h, int NKV) {
  const shape z = {2, 2, NKV, 8, (2 + 2 * NKV) * 8};
  const int B = z.B, NH = z.NH, hs = z.hs, C = NH * hs, KV = NKV * hs, W = z.W;
  int Tf = 2 * cp * h, T = 2 * h;
  unsigned seed = 7u + (unsigned)(cp * 31 + h + 97 * NKV);
  size_t nf = (size_t)B * Tf;
  double *x = malloc(nf * W * sizeof *x), *dout = malloc(nf * C * sizeof *dout);
  double *out = malloc(nf * C * sizeof *out), *lse = malloc(nf * NH * sizeof *lse), *dx = malloc(nf * W * sizeof *dx);
  for (size_t i = 0; i < nf * W; i++) x[i] = 2 * frand(&seed);
  for (size_t i = 0; i < nf * C; i++) dout[i] = frand(&seed);
  reference(x, dout, out, lse, dx, z, Tf);

  size_t nl = (size_t)B * T;
  float *lx[8], *ld[8], *lo[8], *ll[8], *ldx[8];
  float *part = malloc(nl * C * sizeof *part), *plse = malloc(nl * NH * sizeof *plse);
  float *dkv = malloc(nl * W * sizeof *dkv);
  for (int c = 0; c < cp; c++) {
    lx[c] = malloc(nl * W * sizeof(float)), ld[c] = malloc(nl * C * sizeof(float));
    lo[c] = malloc(nl * C * sizeof(float)), ll[c] = malloc(nl * NH * sizeof(float));
    ldx[c] = malloc(nl * W * sizeof(float));
    for (int b = 0; b < B; b++)
      for (int i = 0; i < T; i++) {
        int64_t pos = nd_ring_position(T, cp, c, i);
        for (int j = 0; j < W; j++) lx[c][((size_t)b * T + i) * W + j] = (float)x[((size_t)b * Tf + pos) * W + j];
        for (int j = 0; j < C; j++) ld[c][((size_t)b * T + i) * C + j] = (float)dout[((size_t)b * Tf + pos) * C + j];
      }
  }
#define Q(c) lx[c]
#define K(c) (lx[c] + C)
#define V(c) (lx[c] + C + KV)
  int good = 1;
  for (int c = 0; c < cp; c++) {
    nd_attention_gqa_forward(lo[c], ll[c], Q(c), K(c), V(c), W, W, B, T, NH, NKV, hs);
    for (int kr = 0; kr < cp; kr++) {
      if (kr == c) continue;
      good &= nd_ring_attention_forward(part, plse, Q(c), K(kr), V(kr), W, W, B, T, NH, NKV, hs, cp, c, kr) == 0;
      nd_ring_attention_merge(lo[c], ll[c], part, plse, B, T, NH, hs);
    }
  }
  double eo = 0, el = 0, eg = 0;
  for (int c = 0; c < cp; c++) {
    eo = fmax(eo, rel(lo[c], out, B, T, Tf, C, cp, c, 0, NH));
    el = fmax(el, rel(ll[c], lse, B, T, Tf, NH, cp, c, 1, NH));
  }
  ok(good && eo < TOL, "cp %d, chunks of %d, %d key/value heads: output of the blocks merged in rank order within %.2e",
     cp, h, NKV, eo);
  ok(el < TOL, "cp %d, chunks of %d, %d key/value heads: merged log-sum-exp within %.2e", cp, h, NKV, el);
  for (int c = 0; c < cp; c++)
    nd_attention_gqa_backward(ldx[c], ldx[c] + C, ldx[c] + C + KV, ld[c], Q(c), K(c), V(c), lo[c], ll[c], W, W, B, T,
                              NH, NKV, hs);
  for (int c = 0; c < cp; c++)
    for (int kr = 0; kr < cp; kr++) {
      if (kr == c) continue;
      good &= nd_ring_attention_backward(ldx[c], dkv + C, dkv + C + KV, ld[c], Q(c), K(kr), V(kr), lo[c], ll[c], W, W,
                                         B, T, NH, NKV, hs, cp, c, kr) == 0;
      nd_ring_kv_add(ldx[kr] + C, ldx[kr] + C + KV, dkv + C, dkv + C + KV, W, B, T, KV);
    }
  for (int c = 0; c < cp; c++) eg = fmax(eg, rel(ldx[c], dx, B, T, Tf, W, cp, c, 0, NH));
  ok(good && eg < TOL, "cp %d, chunks of %d, %d key/value heads: dq, dk, dv of the ring backward within %.2e", cp, h,
     NKV, eg);

  /* a block past every query of rank 0's first chunk: rows that see none */
  nd_ring_attention_forward(part, plse, Q(0), K(1), V(1), W, W, B, T, NH, NKV, hs, cp, 0, 1);
  ok(isinf(plse[0]) && plse[0] < 0 && part[0] == 0.0f, "cp %d: a row that sees none of a block's keys: lse -inf, out 0",
     cp);
#undef Q
#undef K
#undef V
  for (int c = 0; c < cp; c++) free(lx[c]), free(ld[c]), free(lo[c]), free(ll[c]), free(ldx[c]);
  free(part), free(plse), free(dkv), free(x), free(dout), free(out), free(lse), free(dx);
}

static void positions(void) {
  enum { B = 2, T = 4, C = 3, cp = 2 };
  float wpe[T * cp * C], x[B * T * C] = {0}, dwpe[T * cp * C];
  for (int i = 0; i < T * cp * C; i++) wpe[i] = (float)i;
  nd_ring_positions(x, wpe, B, T, C, cp, 1); /* rank 1: positions 2, 3 and 4, 5 */
  const int want[T] = {2, 3, 4, 5};
  int good = 1;
  for (int b = 0; b < B; b++)
    for (int i = 0; i < T; i++) good &= x[(b * T + i) * C] == (float)(want[i] * C);
  ok(good, "ring_position_fwd adds the rows of the rank's chunks' true positions");
  for (int i = 0; i < T * cp * C; i++) dwpe[i] = 5.0f;
  for (int i = 0; i < B * T * C; i++) x[i] = 1.0f;
  nd_ring_positions_backward(dwpe, x, B, T, C, cp, 1, 0.0f);
  good = 1;
  for (int p = 0; p < T * cp; p++) good &= dwpe[p * C] == (p >= 2 && p <= 5 ? (float)B : 0.0f);
  ok(good, "ring_position_bwd: beta 0 clears the table, then sums each position over the batch");
}

/* chunks c and 2 cp - 1 - c: every rank's queries see as many keys (the causal work is balanced) */
static void balance(void) {
  for (int cp = 2; cp <= 8; cp *= 2) {
    int T = 6, same = 1, covered[8 * 6] = {0};
    int64_t keys0 = -1;
    for (int c = 0; c < cp; c++) {
      int64_t keys = 0;
      for (int i = 0; i < T; i++) {
        int64_t pos = nd_ring_position(T, cp, c, i);
        keys += pos + 1;
        covered[pos]++;
      }
      if (keys0 < 0) keys0 = keys;
      same &= keys == keys0;
    }
    for (int p = 0; p < cp * T; p++) same &= covered[p] == 1;
    ok(same, "cp %d: the ranks' positions cover the sequence once, each rank seeing as many keys", cp);
  }
}

int main(void) {
  balance();
  for (int cp = 2; cp <= 4; cp++) {
    check(cp, 1, 2); /* GPT-2's packed qkv: as many key/value heads as query heads */
    check(cp, 3, 2);
    check(cp, 3, 1); /* Llama's grouped-query heads */
  }
  positions();
  return done_testing();
}
