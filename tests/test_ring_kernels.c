/* Context parallelism's kernels (kernels/cpu/ring.c) against a
 * double-precision causal attention over the whole sequence: the sequence
 * cut into 2 cp chunks, rank c holding chunks c and 2 cp - 1 - c; each
 * rank's own block by the fused causal kernel, every other rank's block by
 * ring_attention_fwd (with its key offset: the blocks' true positions) and
 * the log-sum-exp merge in rank order; backwards the own block's
 * attention_bwd, then ring_attention_bwd and ring_kv_add. Output, lse and
 * dqkv within 1e-5 of the largest reference value, for cp 2, 3 and 4 and
 * chunks of 1 and 3 tokens. And the position rows. */
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

/* whole-sequence causal attention in double: out (B, T, C), lse (B, NH, T), dqkv (B, T, 3C) */
static void reference(const double *qkv, const double *dout, double *out, double *lse, double *dqkv, int B, int T,
                      int NH, int hs) {
  int C = NH * hs, C3 = 3 * C;
  double scale = 1.0 / sqrt((double)hs), *p = malloc((size_t)T * sizeof *p);
  memset(dqkv, 0, (size_t)B * T * C3 * sizeof *dqkv);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      for (int i = 0; i < T; i++) {
        const double *q = qkv + ((size_t)b * T + i) * C3 + h * hs;
        double m = -INFINITY, sum = 0;
        for (int k = 0; k <= i; k++) {
          const double *kk = qkv + ((size_t)b * T + k) * C3 + C + h * hs;
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
          for (int d = 0; d < hs; d++) o[d] += p[k] * qkv[((size_t)b * T + k) * C3 + 2 * C + h * hs + d];
        }
        lse[((size_t)b * NH + h) * T + i] = m + log(sum);
        double D = 0;
        for (int d = 0; d < hs; d++) D += dO[d] * o[d];
        for (int k = 0; k <= i; k++) {
          const double *kk = qkv + ((size_t)b * T + k) * C3 + C + h * hs, *vv = kk + C;
          double dp = 0;
          for (int d = 0; d < hs; d++) dp += dO[d] * vv[d];
          double ds = p[k] * (dp - D) * scale;
          for (int d = 0; d < hs; d++) {
            dqkv[((size_t)b * T + i) * C3 + h * hs + d] += ds * kk[d];
            dqkv[((size_t)b * T + k) * C3 + C + h * hs + d] += ds * q[d];
            dqkv[((size_t)b * T + k) * C3 + 2 * C + h * hs + d] += p[k] * dO[d];
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

static void check(int cp, int h) {
  enum { B = 2, NH = 2, hs = 8, C = NH * hs, C3 = 3 * C };
  int Tf = 2 * cp * h, T = 2 * h;
  unsigned seed = 7u + (unsigned)(cp * 31 + h);
  size_t nf = (size_t)B * Tf;
  double *qkv = malloc(nf * C3 * sizeof *qkv), *dout = malloc(nf * C * sizeof *dout);
  double *out = malloc(nf * C * sizeof *out), *lse = malloc(nf * NH * sizeof *lse), *dqkv = malloc(nf * C3 * sizeof *dqkv);
  for (size_t i = 0; i < nf * C3; i++) qkv[i] = 2 * frand(&seed);
  for (size_t i = 0; i < nf * C; i++) dout[i] = frand(&seed);
  reference(qkv, dout, out, lse, dqkv, B, Tf, NH, hs);

  size_t nl = (size_t)B * T;
  float *lq[8], *ld[8], *lo[8], *ll[8], *ldq[8];
  float *part = malloc(nl * C * sizeof *part), *plse = malloc(nl * NH * sizeof *plse);
  float *dkv = malloc(nl * C3 * sizeof *dkv);
  for (int c = 0; c < cp; c++) {
    lq[c] = malloc(nl * C3 * sizeof(float)), ld[c] = malloc(nl * C * sizeof(float));
    lo[c] = malloc(nl * C * sizeof(float)), ll[c] = malloc(nl * NH * sizeof(float));
    ldq[c] = malloc(nl * C3 * sizeof(float));
    for (int b = 0; b < B; b++)
      for (int i = 0; i < T; i++) {
        int64_t pos = nd_ring_position(T, cp, c, i);
        for (int j = 0; j < C3; j++) lq[c][((size_t)b * T + i) * C3 + j] = (float)qkv[((size_t)b * Tf + pos) * C3 + j];
        for (int j = 0; j < C; j++) ld[c][((size_t)b * T + i) * C + j] = (float)dout[((size_t)b * Tf + pos) * C + j];
      }
  }
  int fwd_ok = 1;
  for (int c = 0; c < cp; c++) {
    nd_attention_forward(lo[c], ll[c], lq[c], B, T, NH, hs);
    for (int kr = 0; kr < cp; kr++) {
      if (kr == c) continue;
      fwd_ok &= nd_ring_attention_forward(part, plse, lq[c], lq[kr], B, T, NH, hs, cp, c, kr) == 0;
      nd_ring_attention_merge(lo[c], ll[c], part, plse, B, T, NH, hs);
    }
  }
  double eo = 0, el = 0, eg = 0;
  for (int c = 0; c < cp; c++) {
    eo = fmax(eo, rel(lo[c], out, B, T, Tf, C, cp, c, 0, NH));
    el = fmax(el, rel(ll[c], lse, B, T, Tf, NH, cp, c, 1, NH));
  }
  ok(fwd_ok && eo < TOL, "cp %d, chunks of %d: output of the blocks merged in rank order within %.2e", cp, h, eo);
  ok(el < TOL, "cp %d, chunks of %d: merged log-sum-exp within %.2e", cp, h, el);
  for (int c = 0; c < cp; c++) nd_attention_backward(ldq[c], ld[c], lq[c], lo[c], ll[c], B, T, NH, hs);
  for (int c = 0; c < cp; c++)
    for (int kr = 0; kr < cp; kr++) {
      if (kr == c) continue;
      fwd_ok &= nd_ring_attention_backward(ldq[c], dkv, ld[c], lq[c], lq[kr], lo[c], ll[c], B, T, NH, hs, cp, c,
                                           kr) == 0;
      nd_ring_kv_add(ldq[kr], dkv, B, T, C);
    }
  for (int c = 0; c < cp; c++) eg = fmax(eg, rel(ldq[c], dqkv, B, T, Tf, C3, cp, c, 0, NH));
  ok(fwd_ok && eg < TOL, "cp %d, chunks of %d: dq, dk, dv of the ring backward within %.2e", cp, h, eg);

  /* a block past every query of rank 0's first chunk: rows that see none */
  nd_ring_attention_forward(part, plse, lq[0], lq[1], B, T, NH, hs, cp, 0, 1);
  ok(isinf(plse[0]) && plse[0] < 0 && part[0] == 0.0f, "cp %d: a row that sees none of a block's keys: lse -inf, out 0",
     cp);
  for (int c = 0; c < cp; c++) free(lq[c]), free(ld[c]), free(lo[c]), free(ll[c]), free(ldq[c]);
  free(part), free(plse), free(dkv), free(qkv), free(dout), free(out), free(lse), free(dqkv);
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
    check(cp, 1);
    check(cp, 3);
  }
  positions();
  return done_testing();
}
