/* The fused causal attention (kernels/cpu/attention.c: query x key tiles, an
 * online softmax, the backward recomputing the probabilities from the saved
 * log-sum-exp) against the unfused computation it replaced (below: whole
 * (T, T) probabilities, kept for the backward) and against the fp64
 * reference, forward and backward, within 1e-5 relative: one tile and several,
 * T not a multiple of the tile, T = 1, grouped-query heads (NKV < NH), hs 16
 * and 64, q, k, v as strided views of one fused buffer. */
#include "kernels/cpu/kernels.h"
#include "tests/ref/ref.h"
#include "tests/tap.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-5

/* ---- the unfused kernel, a reference: per (b, h) the (T, T) scores, a
 * masked softmax in place, out = att . v; the backward from att. */

static void causal_softmax(float *att, int T) {
  for (int t = 0; t < T; t++) {
    float *row = att + (size_t)t * T, mx = row[0], sum = 0.0f;
    for (int u = 1; u <= t; u++) mx = fmaxf(mx, row[u]);
    for (int u = 0; u <= t; u++) sum += row[u] = expf(row[u] - mx);
    for (int u = 0; u < T; u++) row[u] = u <= t ? row[u] / sum : 0.0f;
  }
}

static void unfused_forward(float *out, float *att, const float *q, const float *k, const float *v, int qs, int kvs,
                            int B, int T, int NH, int NKV, int hs) {
  const int C = NH * hs, group = NH / NKV;
  const float scale = 1.0f / sqrtf((float)hs);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      const float *qh = q + (size_t)b * T * qs + (size_t)h * hs;
      const float *kh = k + (size_t)b * T * kvs + (size_t)(h / group) * hs;
      const float *vh = v + (size_t)b * T * kvs + (size_t)(h / group) * hs;
      float *a = att + ((size_t)b * NH + h) * T * T, *o = out + (size_t)b * T * C + (size_t)h * hs;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, qh, qs, kh, kvs, 0.0f, a, T);
      causal_softmax(a, T);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, vh, kvs, 0.0f, o, C);
    }
}

static void unfused_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                             const float *v, const float *att, int qs, int kvs, int B, int T, int NH, int NKV, int hs) {
  const int C = NH * hs, group = NH / NKV;
  const float scale = 1.0f / sqrtf((float)hs);
  float *da = malloc((size_t)T * T * sizeof *da);
  if (!da) abort();
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      const size_t qo = (size_t)b * T * qs + (size_t)h * hs, ko = (size_t)b * T * kvs + (size_t)(h / group) * hs;
      const float kv_beta = h % group ? 1.0f : 0.0f, *a = att + ((size_t)b * NH + h) * T * T;
      const float *dy = dout + (size_t)b * T * C + (size_t)h * hs;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dy, C, v + ko, kvs, 0.0f, da, T);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, dy, C, kv_beta, dv + ko, kvs);
      for (int t = 0; t < T; t++) {
        float dot = 0.0f;
        for (int u = 0; u <= t; u++) dot += a[(size_t)t * T + u] * da[(size_t)t * T + u];
        for (int u = 0; u < T; u++) da[(size_t)t * T + u] = u <= t ? a[(size_t)t * T + u] * (da[(size_t)t * T + u] - dot) : 0;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, da, T, k + ko, kvs, 0.0f, dq + qo, qs);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, da, T, q + qo, qs, kv_beta, dk + ko, kvs);
    }
  free(da);
}

/* ---- helpers */

static nd_ref_rng rng;

static float *floats(size_t n) {
  float *x = malloc((n ? n : 1) * sizeof *x);
  if (!x) abort();
  return x;
}

static double *doubles(size_t n) {
  double *x = calloc(n ? n : 1, sizeof *x);
  if (!x) abort();
  return x;
}

/* ||a - b|| / ||b|| over the (T, hs) views of every (b, head): rows of a and b
 * with strides la and lb, heads nh wide */
static double view_err(const float *a, int la, const double *b, int lb, int rows, int nh, int hs) {
  double num = 0, den = 0;
  for (int r = 0; r < rows; r++)
    for (int i = 0; i < nh * hs; i++) {
      double x = a[(size_t)r * la + i], y = b[(size_t)r * lb + i];
      num += (x - y) * (x - y), den += y * y;
    }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static double err_ff(const float *a, const float *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), den += (double)b[i] * b[i];
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* One shape: q, k, v and their gradients as the three parts of one fused
 * buffer (B, T, (NH + 2 NKV) hs), GPT-2's layout when NKV = NH. */
static void check(int B, int T, int NH, int NKV, int hs) {
  const int C = NH * hs, KV = NKV * hs, ld = C + 2 * KV, group = NH / NKV;
  const size_t nx = (size_t)B * T * ld, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
  float *x = floats(nx), *dout = floats(no), *out = floats(no), *lse = floats(nl), *dx = floats(nx);
  float *uout = floats(no), *att = floats(nl * T), *udx = floats(nx);
  nd_ref_fill(x, (int64_t)nx, &rng, -1.5, 1.5);
  nd_ref_fill(dout, (int64_t)no, &rng, -1, 1);
  for (size_t i = 0; i < nx; i++) dx[i] = udx[i] = NAN; // overwritten
  const float *q = x, *k = x + C, *v = x + C + KV;

  nd_attention_gqa_forward(out, lse, q, k, v, ld, ld, B, T, NH, NKV, hs);
  unfused_forward(uout, att, q, k, v, ld, ld, B, T, NH, NKV, hs);
  nd_attention_gqa_backward(dx, dx + C, dx + C + KV, dout, q, k, v, out, lse, ld, ld, B, T, NH, NKV, hs);
  unfused_backward(udx, udx + C, udx + C + KV, dout, q, k, v, att, ld, ld, B, T, NH, NKV, hs);

  /* fp64: multi-head attention on qkv (B, T, 3C) with the key/value heads
   * repeated over their groups; a key/value head's gradient is its group's sum */
  double *rqkv = doubles((size_t)B * T * 3 * C), *rdout = doubles(no), *rout = doubles(no), *rlse = doubles(nl);
  double *rdqkv = doubles((size_t)B * T * 3 * C), *rdx = doubles(nx);
  for (int bt = 0; bt < B * T; bt++)
    for (int h = 0; h < NH; h++)
      for (int i = 0; i < hs; i++) {
        const float *row = x + (size_t)bt * ld;
        double *r = rqkv + (size_t)bt * 3 * C;
        r[h * hs + i] = row[h * hs + i];
        r[C + h * hs + i] = row[C + (h / group) * hs + i];
        r[2 * C + h * hs + i] = row[C + KV + (h / group) * hs + i];
      }
  for (size_t i = 0; i < no; i++) rdout[i] = dout[i];
  nd__ref_attention_fwd(rout, rlse, rqkv, B, T, NH, hs);
  nd__ref_attention_bwd(rdqkv, rdout, rqkv, rout, rlse, B, T, NH, hs);
  for (int bt = 0; bt < B * T; bt++)
    for (int h = 0; h < NH; h++)
      for (int i = 0; i < hs; i++) {
        const double *r = rdqkv + (size_t)bt * 3 * C;
        double *d = rdx + (size_t)bt * ld;
        d[h * hs + i] = r[h * hs + i];
        d[C + (h / group) * hs + i] += r[C + h * hs + i];
        d[C + KV + (h / group) * hs + i] += r[2 * C + h * hs + i];
      }

  const int rows = B * T;
  double eo = err_ff(out, uout, no), eor = view_err(out, C, rout, C, rows, NH, hs);
  double el = 0, den = 0;
  for (size_t i = 0; i < nl; i++) el += (lse[i] - rlse[i]) * (lse[i] - rlse[i]), den += rlse[i] * rlse[i];
  el = den > 0 ? sqrt(el / den) : sqrt(el);
  ok(eo < TOL && eor < TOL && el < TOL,
     "forward B=%d T=%d NH=%d NKV=%d hs=%d: out vs unfused %.1e, vs fp64 %.1e; lse vs fp64 %.1e", B, T, NH, NKV, hs, eo,
     eor, el);
  double eq = err_ff(dx, udx, nx), eqr = view_err(dx, ld, rdx, ld, rows, NH + 2 * NKV, hs);
  double edq = view_err(dx, ld, rdx, ld, rows, NH, hs), edk = view_err(dx + C, ld, rdx + C, ld, rows, NKV, hs);
  double edv = view_err(dx + C + KV, ld, rdx + C + KV, ld, rows, NKV, hs);
  ok(eq < TOL && eqr < TOL && edq < TOL && edk < TOL && edv < TOL,
     "backward B=%d T=%d NH=%d NKV=%d hs=%d: dq, dk, dv vs unfused %.1e, vs fp64 %.1e (dq %.1e dk %.1e dv %.1e)", B, T,
     NH, NKV, hs, eq, eqr, edq, edk, edv);
  free(x), free(dout), free(out), free(lse), free(dx), free(uout), free(att), free(udx);
  free(rqkv), free(rdout), free(rout), free(rlse), free(rdqkv), free(rdx);
}

int main(void) {
#ifdef OPENBLAS_VERSION
  openblas_set_num_threads(1);
#endif
  nd_ref_rng_seed(&rng, 57);
  check(2, 1, 2, 2, 16);    // T = 1
  check(1, 5, 3, 3, 16);    // less than a tile
  check(2, 64, 4, 4, 16);   // exactly one tile (the quick start's shape)
  check(1, 100, 4, 2, 16);  // T not a multiple of the tile, groups of 2
  check(2, 130, 2, 2, 64);  // three query tiles, the last of 2 rows
  check(1, 200, 8, 2, 64);  // groups of 4
  check(1, 129, 3, 1, 16);  // one key/value head for all
  check(1, 256, 2, 2, 64);  // four full tiles
  return done_testing();
}
