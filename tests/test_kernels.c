/* CPU kernels against the double-precision references of tests/ref and
 * kernels/reference.h:
 *  - forward: float kernel vs double reference, ||a - b|| / ||b|| < TOL_FWD;
 *  - backward: float kernel vs central finite differences of the DOUBLE
 *    reference forward of L = sum(dout * f(x)), relative error < TOL_BWD,
 *    and so is kernels/reference.h's double backward (kernel-check's), < TOL_REF;
 *  - beta (overwrite / accumulate) and aliasing semantics;
 *  - AdamW over steps t = 1..3, and the reductions;
 *  - Llama's kinds: RMSNorm, rotary embedding, gated SiLU, grouped-query attention;
 *  - the vectorized exponential behind the element-wise kernels, and what
 *    they give at saturation and for a NaN;
 *  - the lane sums behind the row reductions: accurate, and the same bits
 *    wherever a row lies in memory. */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lanes.h"
#include "kernels/cpu/simd_exp.h"
#include "tests/ref/ref.h"
#include "tests/tap.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define TOL_FWD 1e-5 /* float kernel vs double reference, forward */
#define TOL_BWD 1e-4 /* float backward vs double finite differences */
#define TOL_ACC 1e-6 /* beta = 1 result vs (previous + beta = 0 result) */
#define FD_H    1e-5 /* central difference step, on inputs of magnitude ~1 */
#define TOL_REF 1e-7 /* kernels/reference.h's double backward vs double finite differences */

/* ---- allocation: everything a case allocates is freed by free_all() */

static void *allocs[256];
static int nallocs;

static void *xalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p || nallocs == (int)(sizeof allocs / sizeof allocs[0])) {
    fprintf(stderr, "out of memory\n");
    exit(99);
  }
  allocs[nallocs++] = p;
  return p;
}
static float *falloc(int64_t n) { return xalloc((size_t)n * sizeof(float)); }
static double *dalloc(int64_t n) { return xalloc((size_t)n * sizeof(double)); }
static double *dcopy(const float *x, int64_t n) {
  double *y = dalloc(n);
  nd_ref_to_double(y, x, n);
  return y;
}
static double *dzeros(int64_t n) {
  double *y = dalloc(n);
  memset(y, 0, (size_t)n * sizeof *y);
  return y;
}
static void free_all(void) {
  while (nallocs > 0) free(allocs[--nallocs]);
}

static void fill_nan(float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = NAN;
}

/* b (n) = a (n) + c (n), in double */
static double *dsum(const float *a, const float *c, int64_t n) {
  double *y = dalloc(n);
  for (int64_t i = 0; i < n; i++) y[i] = (double)a[i] + c[i];
  return y;
}

static double dot(const double *a, const double *b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/* ---- finite differences: g (n) = dL/dx by central differences, where f(ctx)
 * evaluates L and reads x (n) through ctx. */
typedef double (*objective_fn)(void *ctx);

static void fd_grad(double *g, double *x, int64_t n, objective_fn f, void *ctx) {
  for (int64_t i = 0; i < n; i++) {
    double x0 = x[i];
    x[i] = x0 + FD_H;
    double lp = f(ctx);
    x[i] = x0 - FD_H;
    double lm = f(ctx);
    x[i] = x0;
    g[i] = (lp - lm) / (2.0 * FD_H);
  }
}

static nd_ref_rng rng;

/* ================================================================ matmul */

typedef struct {
  double *inp, *w, *bias, *dout, *out;
  int M, K, N, trans;
} matmul_ctx;

static double matmul_obj(void *p) {
  matmul_ctx *c = p;
  nd__ref_matmul_fwd(c->out, c->inp, c->w, c->bias, c->M, c->K, c->N, c->trans);
  return dot(c->dout, c->out, (int64_t)c->M * c->N);
}

static void test_matmul(int M, int K, int N, int trans, int with_bias) {
  const char *tag = trans ? "trans_w" : "plain";
  int64_t nin = (int64_t)M * K, nw = (int64_t)K * N, nout = (int64_t)M * N;
  float *inp = falloc(nin), *w = falloc(nw), *bias = falloc(N), *dout = falloc(nout);
  float *out = falloc(nout);
  nd_ref_fill(inp, nin, &rng, -1, 1);
  nd_ref_fill(w, nw, &rng, -1, 1);
  nd_ref_fill(bias, N, &rng, -1, 1);
  nd_ref_fill(dout, nout, &rng, -1, 1);
  float *b = with_bias ? bias : NULL;

  matmul_ctx c = {dcopy(inp, nin),
                  dcopy(w, nw),
                  with_bias ? dcopy(bias, N) : NULL,
                  dcopy(dout, nout),
                  dalloc(nout),
                  M,
                  K,
                  N,
                  trans};
  nd_matmul_forward(out, inp, w, b, M, K, N, trans);
  matmul_obj(&c);
  double e = nd_ref_rel_err(out, c.out, nout);
  ok(e < TOL_FWD, "matmul forward %s M=%d K=%d N=%d bias=%d: rel err %.2e", tag, M, K, N, with_bias, e);

  // backward, beta = 0 over NaN: must overwrite
  float *dinp = falloc(nin), *dw = falloc(nw), *db = falloc(N);
  fill_nan(dinp, nin);
  fill_nan(dw, nw);
  fill_nan(db, N);
  nd_matmul_backward_input(dinp, dout, w, M, K, N, trans, 0.0f);
  nd_matmul_backward_weight(dw, with_bias ? db : NULL, dout, inp, M, K, N, trans, 0.0f);

  double *g = dalloc(nin > nw ? nin : nw);
  double *rdinp = dzeros(nin), *rdw = dzeros(nw), *rdb = dzeros(N);
  nd__ref_matmul_bwd(rdinp, rdw, with_bias ? rdb : NULL, c.dout, c.inp, c.w, M, K, N, trans);
  fd_grad(g, c.inp, nin, matmul_obj, &c);
  e = nd_ref_rel_err(dinp, g, nin);
  double er = nd_ref_rel_err_d(rdinp, g, nin);
  ok(e < TOL_BWD && er < TOL_REF, "matmul dinp %s M=%d K=%d N=%d vs finite differences: rel err %.2e, fp64 %.2e", tag,
     M, K, N, e, er);
  fd_grad(g, c.w, nw, matmul_obj, &c);
  e = nd_ref_rel_err(dw, g, nw);
  er = nd_ref_rel_err_d(rdw, g, nw);
  ok(e < TOL_BWD && er < TOL_REF, "matmul dweight %s M=%d K=%d N=%d vs finite differences: rel err %.2e, fp64 %.2e",
     tag, M, K, N, e, er);
  if (with_bias) {
    fd_grad(g, c.bias, N, matmul_obj, &c);
    e = nd_ref_rel_err(db, g, N);
    er = nd_ref_rel_err_d(rdb, g, N);
    ok(e < TOL_BWD && er < TOL_REF, "matmul dbias %s M=%d K=%d N=%d vs finite differences: rel err %.2e, fp64 %.2e",
       tag, M, K, N, e, er);
  }

  // beta = 1 accumulates onto what is there
  float *dinp1 = falloc(nin), *dw1 = falloc(nw), *db1 = falloc(N);
  nd_ref_fill(dinp1, nin, &rng, -1, 1);
  nd_ref_fill(dw1, nw, &rng, -1, 1);
  nd_ref_fill(db1, N, &rng, -1, 1);
  double *want_in = dsum(dinp1, dinp, nin), *want_w = dsum(dw1, dw, nw), *want_b = dsum(db1, db, N);
  nd_matmul_backward_input(dinp1, dout, w, M, K, N, trans, 1.0f);
  nd_matmul_backward_weight(dw1, with_bias ? db1 : NULL, dout, inp, M, K, N, trans, 1.0f);
  e = nd_ref_rel_err(dinp1, want_in, nin);
  double e2 = nd_ref_rel_err(dw1, want_w, nw);
  double e3 = with_bias ? nd_ref_rel_err(db1, want_b, N) : 0.0;
  ok(e < TOL_ACC && e2 < TOL_ACC && e3 < TOL_ACC,
     "matmul beta=1 accumulation %s M=%d K=%d N=%d: rel err dinp %.2e dweight %.2e dbias %.2e", tag, M, K, N, e, e2,
     e3);
  free_all();
}

/* ============================================================= layernorm */

typedef struct {
  double *inp, *w, *b, *dout, *out;
  int N, C;
} ln_ctx;

static double ln_obj(void *p) {
  ln_ctx *c = p;
  nd__ref_layernorm_fwd(c->out, NULL, NULL, c->inp, c->w, c->b, c->N, c->C);
  return dot(c->dout, c->out, (int64_t)c->N * c->C);
}

static void test_layernorm(int N, int C) {
  int64_t n = (int64_t)N * C;
  float *inp = falloc(n), *w = falloc(C), *b = falloc(C), *dout = falloc(n), *out = falloc(n);
  float *mean = falloc(N), *rstd = falloc(N);
  nd_ref_fill(inp, n, &rng, -2, 2);
  nd_ref_fill(w, C, &rng, 0.5, 1.5);
  nd_ref_fill(b, C, &rng, -0.5, 0.5);
  nd_ref_fill(dout, n, &rng, -1, 1);
  ln_ctx c = {dcopy(inp, n), dcopy(w, C), dcopy(b, C), dcopy(dout, n), dalloc(n), N, C};
  double *rmean = dalloc(N), *rrstd = dalloc(N);

  nd_layernorm_forward(out, mean, rstd, inp, w, b, N, C);
  nd__ref_layernorm_fwd(c.out, rmean, rrstd, c.inp, c.w, c.b, N, C);
  double e = nd_ref_rel_err(out, c.out, n);
  double em = nd_ref_rel_err(mean, rmean, N), er = nd_ref_rel_err(rstd, rrstd, N);
  ok(e < TOL_FWD && em < TOL_FWD && er < TOL_FWD, "layernorm forward N=%d C=%d: rel err out %.2e mean %.2e rstd %.2e",
     N, C, e, em, er);

  float *dinp = falloc(n), *dw = falloc(C), *db = falloc(C);
  fill_nan(dinp, n);
  fill_nan(dw, C);
  fill_nan(db, C);
  nd_layernorm_backward_input(dinp, NULL, dout, inp, w, mean, rstd, N, C);
  nd_layernorm_backward_weight(dw, db, dout, inp, mean, rstd, N, C, 0.0f);
  double *g = dalloc(n > C ? n : C);
  double *rdinp = dzeros(n), *rdw = dzeros(C), *rdb = dzeros(C);
  nd__ref_layernorm_bwd(rdinp, rdw, rdb, c.dout, c.inp, c.w, rmean, rrstd, N, C);
  fd_grad(g, c.inp, n, ln_obj, &c);
  e = nd_ref_rel_err(dinp, g, n);
  double eref = nd_ref_rel_err_d(rdinp, g, n);
  ok(e < TOL_BWD && eref < TOL_REF, "layernorm dinp N=%d C=%d vs finite differences: rel err %.2e, fp64 %.2e", N, C, e,
     eref);
  fd_grad(g, c.w, C, ln_obj, &c);
  e = nd_ref_rel_err(dw, g, C);
  eref = nd_ref_rel_err_d(rdw, g, C);
  ok(e < TOL_BWD && eref < TOL_REF, "layernorm dweight N=%d C=%d vs finite differences: rel err %.2e, fp64 %.2e", N, C,
     e, eref);
  fd_grad(g, c.b, C, ln_obj, &c);
  e = nd_ref_rel_err(db, g, C);
  eref = nd_ref_rel_err_d(rdb, g, C);
  ok(e < TOL_BWD && eref < TOL_REF, "layernorm dbias N=%d C=%d vs finite differences: rel err %.2e, fp64 %.2e", N, C, e,
     eref);

  // dskip: dinp = dskip + gradient, separately and with dinp aliasing dskip
  float *dskip = falloc(n), *dinp2 = falloc(n), *alias = falloc(n);
  nd_ref_fill(dskip, n, &rng, -1, 1);
  memcpy(alias, dskip, (size_t)n * sizeof(float));
  double *want = dsum(dskip, dinp, n);
  nd_layernorm_backward_input(dinp2, dskip, dout, inp, w, mean, rstd, N, C);
  nd_layernorm_backward_input(alias, alias, dout, inp, w, mean, rstd, N, C);
  e = nd_ref_rel_err(dinp2, want, n);
  ok(e < TOL_ACC, "layernorm dinp with dskip N=%d C=%d: rel err %.2e", N, C, e);
  ok(memcmp(alias, dinp2, (size_t)n * sizeof(float)) == 0,
     "layernorm dinp aliasing dskip N=%d C=%d: same bits as separate buffers", N, C);

  // beta = 1 on dweight, dbias
  float *dw1 = falloc(C), *db1 = falloc(C);
  nd_ref_fill(dw1, C, &rng, -1, 1);
  nd_ref_fill(db1, C, &rng, -1, 1);
  double *ww = dsum(dw1, dw, C), *wb = dsum(db1, db, C);
  nd_layernorm_backward_weight(dw1, db1, dout, inp, mean, rstd, N, C, 1.0f);
  e = nd_ref_rel_err(dw1, ww, C);
  double e2 = nd_ref_rel_err(db1, wb, C);
  ok(e < TOL_ACC && e2 < TOL_ACC, "layernorm beta=1 accumulation N=%d C=%d: rel err dweight %.2e dbias %.2e", N, C, e,
     e2);
  free_all();
}

/* ============================================================= attention */

typedef struct {
  double *qkv, *dout, *out;
  int B, T, NH, hs;
} att_ctx;

static double att_obj(void *p) {
  att_ctx *c = p;
  nd__ref_attention_fwd(c->out, NULL, c->qkv, c->B, c->T, c->NH, c->hs);
  return dot(c->dout, c->out, (int64_t)c->B * c->T * c->NH * c->hs);
}

static void test_attention(int B, int T, int NH, int hs, int check_backward) {
  int C = NH * hs;
  int64_t nqkv = (int64_t)B * T * 3 * C, nout = (int64_t)B * T * C, nlse = (int64_t)B * NH * T;
  float *qkv = falloc(nqkv), *dout = falloc(nout), *out = falloc(nout), *lse = falloc(nlse);
  nd_ref_fill(qkv, nqkv, &rng, -1.5, 1.5);
  nd_ref_fill(dout, nout, &rng, -1, 1);
  fill_nan(out, nout);
  fill_nan(lse, nlse);
  att_ctx c = {dcopy(qkv, nqkv), dcopy(dout, nout), dalloc(nout), B, T, NH, hs};
  double *rlse = dalloc(nlse);

  nd_attention_forward(out, lse, qkv, B, T, NH, hs);
  nd__ref_attention_fwd(c.out, rlse, c.qkv, B, T, NH, hs);
  double e = nd_ref_rel_err(out, c.out, nout), el = nd_ref_rel_err(lse, rlse, nlse);
  ok(e < TOL_FWD && el < TOL_FWD, "attention forward B=%d T=%d NH=%d hs=%d: rel err out %.2e lse %.2e", B, T, NH, hs, e,
     el);
  if (!check_backward) {
    free_all();
    return;
  }

  float *dqkv = falloc(nqkv);
  fill_nan(dqkv, nqkv); // overwritten
  nd_attention_backward(dqkv, dout, qkv, out, lse, B, T, NH, hs);
  double *g = dalloc(nqkv), *rdqkv = dzeros(nqkv), *rout = dalloc(nout);
  memcpy(rout, c.out, (size_t)nout * sizeof *rout);
  nd__ref_attention_bwd(rdqkv, c.dout, c.qkv, rout, rlse, B, T, NH, hs);
  fd_grad(g, c.qkv, nqkv, att_obj, &c);
  e = nd_ref_rel_err(dqkv, g, nqkv);
  double eref = nd_ref_rel_err_d(rdqkv, g, nqkv);
  ok(e < TOL_BWD && eref < TOL_REF,
     "attention dqkv B=%d T=%d NH=%d hs=%d vs finite differences: rel err %.2e, fp64 %.2e", B, T, NH, hs, e, eref);
  free_all();
}

/* ================================================================== exp */

static void test_simd_exp(void) {
  double worst = 0, at = 0;
  for (double x = -87; x <= 87; x += 1.0 / 1024) {
    double e = fabs(nd__expf_simd((float)x) - exp((double)(float)x)) / exp((double)(float)x);
    if (e > worst) worst = e, at = x;
  }
  ok(worst < 3e-7, "simd exp on [-87, 87]: max rel err %.2e at %g", worst, at);
  float lo = nd__expf_simd(-1e30f), hi = nd__expf_simd(INFINITY);
  ok(lo > 0 && lo < 2e-38f && isfinite(hi) && hi > 6e37f, "simd exp clamps to [e^-87, e^87]: %g, %g", lo, hi);
  ok(isnan(nd__expf_simd(NAN)), "simd exp of NaN is NaN");
  /* saturated GeLU is exact, a NaN stays NaN: the trainer stops on it */
  float in[5] = {-100.0f, 100.0f, -1e30f, 1e30f, NAN}, out[5], din[5], dout[5] = {1, 1, 1, 1, 1};
  nd_gelu_forward(out, in, 5);
  nd_gelu_backward(din, in, dout, 5);
  ok(out[0] == 0 && out[1] == 100.0f && out[2] == 0 && out[3] == 1e30f && isnan(out[4]),
     "gelu saturates: %g %g %g %g, NaN -> %g", out[0], out[1], out[2], out[3], out[4]);
  ok(din[0] == 0 && din[1] == 1 && isnan(din[4]), "gelu dinp saturates: %g %g, NaN -> %g", din[0], din[1], din[4]);
  float g[3] = {-100.0f, 100.0f, NAN}, up[3] = {1, 1, 1}, sw[3];
  nd_swiglu_forward(sw, g, up, 3);
  ok(fabsf(sw[0]) < 1e-30f && sw[1] == 100.0f && isnan(sw[2]), "swiglu saturates: %g %g, NaN -> %g", sw[0], sw[1],
     sw[2]);
}

/* The lane sums, on lengths below, at and above a block of ND_LANES: against
 * double sums; and one row copied to every offset of a block (a kernel's rows
 * start anywhere) through LayerNorm, RMSNorm, the loss's stats and the
 * gradient norm: the same bits each time. */
static void test_lanes(void) {
  enum { MAXN = 67 };
  float *buf = falloc(MAXN + ND_LANES), *row = falloc(MAXN), *w = falloc(MAXN), *b = falloc(MAXN);
  nd_ref_fill(row, MAXN, &rng, -2, 3);
  nd_ref_fill(w, MAXN, &rng, 0.5, 1.5);
  nd_ref_fill(b, MAXN, &rng, -1, 1);
  double worst = 0;
  for (int n = 1; n <= MAXN; n++) {
    double s = 0, d = 0;
    for (int j = 0; j < n; j++) s += row[j], d += (double)row[j] * w[j];
    worst = fmax(worst, fabs(nd__sum(row, n) - s) / (fabs(s) + 1));
    worst = fmax(worst, fabs(nd__dot(row, w, n) - d) / (fabs(d) + 1));
  }
  ok(worst < 1e-6, "lane sums and dots, n = 1..%d: max rel err %.2e", MAXN, worst);
  float first[3 * MAXN + 3], now[3 * MAXN + 3], mean, rstd;
  int32_t target = 5;
  int same = 1;
  for (int off = 0; off < ND_LANES; off++) {
    float *x = buf + off;
    memcpy(x, row, MAXN * sizeof *x);
    nd_layernorm_forward(now, &mean, &rstd, x, w, b, 1, MAXN);
    nd_rmsnorm_forward(now + MAXN, &rstd, x, w, 1, MAXN, 1e-5f);
    nd_crossentropy_stats(now + 2 * MAXN, x, &target, 1, MAXN, 0);
    now[3 * MAXN + 2] = (float)nd_sumsq(x, MAXN);
    now[3 * MAXN] = mean, now[3 * MAXN + 1] = rstd;
    if (off == 0) memcpy(first, now, sizeof first);
    same &= !memcmp(first, now, sizeof first);
  }
  ok(same, "layernorm, rmsnorm, crossentropy stats and sumsq of one row at %d offsets: the same bits", ND_LANES);
  free_all();
}

/* ================================================================== gelu */

typedef struct {
  double *inp, *dout, *out;
  int64_t n;
} gelu_ctx;

static double gelu_obj(void *p) {
  gelu_ctx *c = p;
  nd_ref_gelu(c->out, c->inp, c->n);
  return dot(c->dout, c->out, c->n);
}

static void test_gelu(int64_t n) {
  float *inp = falloc(n), *dout = falloc(n), *out = falloc(n), *dinp = falloc(n);
  nd_ref_fill(inp, n, &rng, -4, 4);
  nd_ref_fill(dout, n, &rng, -1, 1);
  gelu_ctx c = {dcopy(inp, n), dcopy(dout, n), dalloc(n), n};
  nd_gelu_forward(out, inp, n);
  gelu_obj(&c);
  double e = nd_ref_rel_err(out, c.out, n);
  ok(e < TOL_FWD, "gelu forward n=%lld: rel err %.2e", (long long)n, e);
  fill_nan(dinp, n);
  nd_gelu_backward(dinp, inp, dout, n);
  double *g = dalloc(n);
  fd_grad(g, c.inp, n, gelu_obj, &c);
  e = nd_ref_rel_err(dinp, g, n);
  ok(e < TOL_BWD, "gelu dinp n=%lld vs finite differences: rel err %.2e", (long long)n, e);
  free_all();
}

/* ============================================================== residual */

static void test_residual(int64_t n) {
  float *a = falloc(n), *b = falloc(n), *out = falloc(n);
  nd_ref_fill(a, n, &rng, -1, 1);
  nd_ref_fill(b, n, &rng, -1, 1);
  double *want = dalloc(n);
  nd__ref_residual_fwd(want, dcopy(a, n), dcopy(b, n), n);
  nd_residual_forward(out, a, b, n);
  double e = nd_ref_rel_err(out, want, n);
  nd_residual_forward(a, a, b, n); // in place
  int same = memcmp(a, out, (size_t)n * sizeof(float)) == 0;
  ok(e < TOL_FWD && same, "residual forward n=%lld: rel err %.2e, in place %s", (long long)n, e,
     same ? "same" : "DIFFERENT");
  free_all();
}

/* ============================================================= embedding */

typedef struct {
  double *wte, *wpe, *dout, *out;
  const int32_t *tokens;
  int B, T, C, v0, Vs;
} emb_ctx;

static double emb_obj(void *p) {
  emb_ctx *c = p;
  nd_ref_embedding(c->out, c->tokens, c->wte, c->wpe, c->B, c->T, c->C, c->v0, c->Vs);
  return dot(c->dout, c->out, (int64_t)c->B * c->T * c->C);
}

/* The vocabulary V split in nshards shards of the given sizes. */
static void test_embedding(int B, int T, int C, int V, int nshards, const int *sizes) {
  int64_t nbt = (int64_t)B * T, nout = nbt * C;
  int32_t *tokens = xalloc((size_t)nbt * sizeof(int32_t));
  for (int64_t i = 0; i < nbt; i++) tokens[i] = (int32_t)nd_ref_uniform(&rng, 0, V);
  float *wte = falloc((int64_t)V * C), *wpe = falloc((int64_t)T * C), *dout = falloc(nout);
  nd_ref_fill(wte, (int64_t)V * C, &rng, -1, 1);
  nd_ref_fill(wpe, (int64_t)T * C, &rng, -1, 1);
  nd_ref_fill(dout, nout, &rng, -1, 1);
  double *full = dalloc(nout);
  nd_ref_embedding(full, tokens, dcopy(wte, (int64_t)V * C), dcopy(wpe, (int64_t)T * C), B, T, C, 0, V);

  // forward: each shard alone matches the reference; their sum is the full embedding
  float *out = falloc(nout), *sum = falloc(nout);
  memset(sum, 0, (size_t)nout * sizeof(float));
  double worst = 0.0, worst_bwd = 0.0, worst_acc = 0.0;
  int v0 = 0;
  for (int s = 0; s < nshards; s++) {
    int Vs = sizes[s];
    const float *wpe_s = s == 0 ? wpe : NULL; // positions are added by one shard only
    const float *wte_s = wte + (int64_t)v0 * C;
    emb_ctx c = {dcopy(wte_s, (int64_t)Vs * C),
                 wpe_s ? dcopy(wpe, (int64_t)T * C) : NULL,
                 dcopy(dout, nout),
                 dalloc(nout),
                 tokens,
                 B,
                 T,
                 C,
                 v0,
                 Vs};
    nd_embedding_forward(out, tokens, wte_s, wpe_s, B, T, C, v0, Vs);
    emb_obj(&c);
    double e = nd_ref_rel_err(out, c.out, nout);
    worst = e > worst ? e : worst;
    for (int64_t i = 0; i < nout; i++) sum[i] += out[i];

    // backward vs finite differences, beta = 0 over NaN
    float *dwte = falloc((int64_t)Vs * C), *dwpe = falloc((int64_t)T * C);
    fill_nan(dwte, (int64_t)Vs * C);
    fill_nan(dwpe, (int64_t)T * C);
    nd_embedding_backward(dwte, wpe_s ? dwpe : NULL, dout, tokens, B, T, C, v0, Vs, 0.0f);
    double *g = dalloc((int64_t)(Vs > T ? Vs : T) * C);
    fd_grad(g, c.wte, (int64_t)Vs * C, emb_obj, &c);
    e = nd_ref_rel_err(dwte, g, (int64_t)Vs * C);
    worst_bwd = e > worst_bwd ? e : worst_bwd;
    if (wpe_s) {
      fd_grad(g, c.wpe, (int64_t)T * C, emb_obj, &c);
      e = nd_ref_rel_err(dwpe, g, (int64_t)T * C);
      worst_bwd = e > worst_bwd ? e : worst_bwd;
    }
    // beta = 1
    float *dwte1 = falloc((int64_t)Vs * C), *dwpe1 = falloc((int64_t)T * C);
    nd_ref_fill(dwte1, (int64_t)Vs * C, &rng, -1, 1);
    nd_ref_fill(dwpe1, (int64_t)T * C, &rng, -1, 1);
    double *w1 = dsum(dwte1, dwte, (int64_t)Vs * C), *w2 = dsum(dwpe1, dwpe, (int64_t)T * C);
    nd_embedding_backward(dwte1, wpe_s ? dwpe1 : NULL, dout, tokens, B, T, C, v0, Vs, 1.0f);
    e = nd_ref_rel_err(dwte1, w1, (int64_t)Vs * C);
    worst_acc = e > worst_acc ? e : worst_acc;
    if (wpe_s) {
      e = nd_ref_rel_err(dwpe1, w2, (int64_t)T * C);
      worst_acc = e > worst_acc ? e : worst_acc;
    }
    v0 += Vs;
  }
  double e = nd_ref_rel_err(sum, full, nout);
  ok(worst < TOL_FWD && e < TOL_FWD,
     "embedding forward B=%d T=%d C=%d V=%d in %d shards: rel err per shard %.2e, sum of "
     "shards %.2e",
     B, T, C, V, nshards, worst, e);
  ok(worst_bwd < TOL_BWD, "embedding dwte/dwpe B=%d T=%d C=%d V=%d in %d shards vs finite differences: rel err %.2e", B,
     T, C, V, nshards, worst_bwd);
  ok(worst_acc < TOL_ACC, "embedding beta=1 accumulation B=%d T=%d C=%d V=%d in %d shards: rel err %.2e", B, T, C, V,
     nshards, worst_acc);
  free_all();
}

/* ========================================================== cross-entropy */

typedef struct {
  double *logits;
  const int32_t *targets;
  int N, V;
  double scale;
} ce_ctx;

static double ce_obj(void *p) {
  ce_ctx *c = p;
  return c->scale * nd_ref_crossentropy(NULL, c->logits, c->targets, c->N, c->V);
}

/* logits (N, V) split in nshards column shards of the given sizes. */
static void test_crossentropy(int N, int V, int nshards, const int *sizes, int check_backward) {
  int64_t n = (int64_t)N * V;
  float *logits = falloc(n);
  nd_ref_fill(logits, n, &rng, -4, 4);
  int32_t *targets = xalloc((size_t)N * sizeof(int32_t));
  for (int i = 0; i < N; i++) targets[i] = (int32_t)nd_ref_uniform(&rng, 0, V);
  targets[0] = V - 1; // in the last shard
  if (N > 1) targets[1] = 0;
  float scale = 1.0f / (float)N;
  ce_ctx c = {dcopy(logits, n), targets, N, V, scale};
  double want = nd_ref_crossentropy(NULL, c.logits, targets, N, V);

  // step 1 per shard, on each shard's own (N, Vs) copy of its columns
  float *shard[8], *stats[8];
  int v0s[8];
  int v0 = 0;
  for (int s = 0; s < nshards; s++) {
    int Vs = sizes[s];
    shard[s] = falloc((int64_t)N * Vs);
    stats[s] = falloc((int64_t)N * 3);
    for (int i = 0; i < N; i++)
      memcpy(shard[s] + (int64_t)i * Vs, logits + (int64_t)i * V + v0, (size_t)Vs * sizeof(float));
    nd_crossentropy_stats(stats[s], shard[s], targets, N, Vs, v0);
    v0s[s] = v0;
    v0 += Vs;
  }
  // step 2
  float *lse = falloc(N);
  double loss = nd_crossentropy_combine((const float *const *)stats, nshards, N);
  nd_crossentropy_lse(lse, (const float *const *)stats, nshards, N);
  double e = fabs(loss - want) / fabs(want), lse_err = 0;
  for (int i = 0; i < N; i++) {
    double ref = nd_ref_logsumexp(c.logits + (int64_t)i * V, V);
    lse_err = fmax(lse_err, fabs(lse[i] - ref) / fmax(1.0, fabs(ref)));
  }
  char split[64];
  int len = 0;
  for (int s = 0; s < nshards; s++)
    len += snprintf(split + len, sizeof split - (size_t)len, "%s%d", s ? "+" : "", sizes[s]);
  ok(e < TOL_FWD, "crossentropy loss N=%d V=%d shards %s: rel err %.2e", N, V, split, e);
  ok(lse_err < TOL_FWD, "crossentropy log-sum-exp N=%d V=%d shards %s: largest err %.2e (relative above 1)", N, V,
     split, lse_err);
  if (!check_backward) {
    free_all();
    return;
  }

  // step 3 per shard, in place, gathered back to (N, V)
  float *dlogits = falloc(n);
  int same = 1;
  for (int s = 0; s < nshards; s++) {
    int Vs = sizes[s];
    float *sep = falloc((int64_t)N * Vs);
    nd_crossentropy_backward(sep, shard[s], lse, targets, N, Vs, v0s[s], scale);
    nd_crossentropy_backward(shard[s], shard[s], lse, targets, N, Vs, v0s[s], scale);
    same &= memcmp(sep, shard[s], (size_t)N * Vs * sizeof(float)) == 0;
    for (int i = 0; i < N; i++)
      memcpy(dlogits + (int64_t)i * V + v0s[s], shard[s] + (int64_t)i * Vs, (size_t)Vs * sizeof(float));
  }
  double *g = dalloc(n);
  fd_grad(g, c.logits, n, ce_obj, &c);
  e = nd_ref_rel_err(dlogits, g, n);
  ok(e < TOL_BWD && same, "crossentropy dlogits N=%d V=%d shards %s vs finite differences: rel err %.2e, in place %s",
     N, V, split, e, same ? "same" : "DIFFERENT");
  free_all();
}

/* ================================================================= adamw */

/* The parameter itself moves little per step, so the update p - p0 is
 * checked too, against TOL_UPD: float rounding of p (~6e-8 |p|) over an
 * update of ~lr limits its precision. */
#define TOL_UPD 1e-3
static void test_adamw(int64_t n, float lr, float wd, float grad_scale) {
  const float b1 = 0.9f, b2 = 0.95f, eps = 1e-8f;
  float *p = falloc(n), *m = falloc(n), *v = falloc(n), *grad = falloc(n);
  nd_ref_fill(p, n, &rng, -1, 1);
  memset(m, 0, (size_t)n * sizeof(float));
  memset(v, 0, (size_t)n * sizeof(float));
  double *rp = dcopy(p, n), *rm = dcopy(m, n), *rv = dcopy(v, n), *rg = dalloc(n);
  double *p0 = dcopy(p, n), *upd = dalloc(n), *rupd = dalloc(n);
  for (int t = 1; t <= 3; t++) {
    nd_ref_fill(grad, n, &rng, -1, 1);
    nd_ref_to_double(rg, grad, n);
    nd_adamw(p, m, v, grad, n, lr, b1, b2, eps, wd, grad_scale, t);
    nd_ref_adamw(rp, rm, rv, rg, n, lr, b1, b2, eps, wd, grad_scale, t);
    for (int64_t i = 0; i < n; i++) {
      upd[i] = (double)p[i] - p0[i];
      rupd[i] = rp[i] - p0[i];
    }
    double ep = nd_ref_rel_err(p, rp, n), em = nd_ref_rel_err(m, rm, n), ev = nd_ref_rel_err(v, rv, n),
           eu = nd_ref_rel_err_d(upd, rupd, n);
    ok(ep < TOL_FWD && em < TOL_FWD && ev < TOL_FWD && eu < TOL_UPD,
       "adamw n=%lld lr=%g wd=%g grad_scale=%g step t=%d: rel err param %.2e m %.2e v %.2e "
       "update %.2e",
       (long long)n, lr, wd, grad_scale, t, ep, em, ev, eu);
  }
  free_all();
}

/* ============================================================ reductions */

static void test_sum_ordered(int nparts, int64_t n) {
  float *parts[8];
  for (int i = 0; i < nparts; i++) {
    parts[i] = falloc(n);
    nd_ref_fill(parts[i], n, &rng, -1, 1);
  }
  float *out = falloc(n), *byhand = falloc(n);
  double *want = dalloc(n);
  for (int64_t j = 0; j < n; j++) {
    float acc = parts[0][j];
    double d = parts[0][j];
    for (int i = 1; i < nparts; i++) {
      acc += parts[i][j];
      d += parts[i][j];
    }
    byhand[j] = acc;
    want[j] = d;
  }
  nd_sum_ordered(out, (const float *const *)parts, nparts, n);
  double e = nd_ref_rel_err(out, want, n);
  int exact = memcmp(out, byhand, (size_t)n * sizeof(float)) == 0;
  nd_sum_ordered(parts[0], (const float *const *)parts, nparts, n); // out aliases parts[0]
  int alias = memcmp(out, parts[0], (size_t)n * sizeof(float)) == 0;
  ok(e < TOL_FWD && exact && alias, "sum_ordered nparts=%d n=%lld: rel err %.2e, index order %s, out=parts[0] %s",
     nparts, (long long)n, e, exact ? "exact" : "WRONG", alias ? "same" : "DIFFERENT");
  free_all();
}

static void test_sumsq(int64_t n) {
  float *x = falloc(n);
  nd_ref_fill(x, n, &rng, -2, 2);
  double want = 0.0;
  for (int64_t i = 0; i < n; i++) want += (double)x[i] * (double)x[i];
  double got = nd_sumsq(x, n);
  double e = fabs(got - want) / want;
  ok(e < 1e-12, "sumsq n=%lld: rel err %.2e", (long long)n, e);
  free_all();
}

static void test_clip_scale(void) {
  struct {
    double norm, max_norm, want;
  } cases[] = {
      {2.0, 1.0, 0.5},  {0.5, 1.0, 1.0}, {1.0, 1.0, 1.0},  {5.0, 0.0, 1.0},
      {5.0, -1.0, 1.0}, {0.0, 1.0, 1.0}, {1e6, 1.0, 1e-6},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float got = nd_clip_scale(cases[i].norm, cases[i].max_norm);
    double e = fabs(got - cases[i].want) / cases[i].want;
    ok(e < 1e-7, "clip_scale norm=%g max_norm=%g: %g (want %g)", cases[i].norm, cases[i].max_norm, (double)got,
       cases[i].want);
  }
}

/* =============================================================== llama */

/* out (N, C) = w * x / sqrt(mean(x^2) + eps), in double */
static void ref_rmsnorm(double *out, const double *x, const double *w, int N, int C, double eps) {
  for (int i = 0; i < N; i++) {
    double ss = 0;
    for (int j = 0; j < C; j++) ss += x[(size_t)i * C + j] * x[(size_t)i * C + j];
    double s = 1.0 / sqrt(ss / C + eps);
    for (int j = 0; j < C; j++) out[(size_t)i * C + j] = w[j] * x[(size_t)i * C + j] * s;
  }
}

typedef struct {
  double *inp, *w, *dout, *out;
  int N, C;
  double eps;
} rms_ctx;

static double rms_obj(void *p) {
  rms_ctx *c = p;
  ref_rmsnorm(c->out, c->inp, c->w, c->N, c->C, c->eps);
  return dot(c->dout, c->out, (int64_t)c->N * c->C);
}

static void test_rmsnorm(int N, int C, float eps) {
  int64_t n = (int64_t)N * C;
  float *inp = falloc(n), *w = falloc(C), *dout = falloc(n), *out = falloc(n), *rstd = falloc(N);
  nd_ref_fill(inp, n, &rng, -2, 2);
  nd_ref_fill(w, C, &rng, 0.5, 1.5);
  nd_ref_fill(dout, n, &rng, -1, 1);
  rms_ctx c = {dcopy(inp, n), dcopy(w, C), dcopy(dout, n), dalloc(n), N, C, eps};
  nd_rmsnorm_forward(out, rstd, inp, w, N, C, eps);
  rms_obj(&c);
  double e = nd_ref_rel_err(out, c.out, n);
  ok(e < TOL_FWD, "rmsnorm forward N=%d C=%d eps=%g: rel err %.2e", N, C, (double)eps, e);

  float *dinp = falloc(n), *dw = falloc(C), *dskip = falloc(n), *alias = falloc(n), *dw1 = falloc(C);
  fill_nan(dinp, n);
  fill_nan(dw, C);
  nd_rmsnorm_backward_input(dinp, NULL, dout, inp, w, rstd, N, C);
  nd_rmsnorm_backward_weight(dw, dout, inp, rstd, N, C, 0.0f);
  double *g = dalloc(n > C ? n : C);
  fd_grad(g, c.inp, n, rms_obj, &c);
  e = nd_ref_rel_err(dinp, g, n);
  ok(e < TOL_BWD, "rmsnorm dinp N=%d C=%d vs finite differences: rel err %.2e", N, C, e);
  fd_grad(g, c.w, C, rms_obj, &c);
  e = nd_ref_rel_err(dw, g, C);
  ok(e < TOL_BWD, "rmsnorm dweight N=%d C=%d vs finite differences: rel err %.2e", N, C, e);

  // dskip, aliased, and beta = 1
  nd_ref_fill(dskip, n, &rng, -1, 1);
  memcpy(alias, dskip, (size_t)n * sizeof(float));
  double *want = dsum(dskip, dinp, n);
  nd_rmsnorm_backward_input(alias, alias, dout, inp, w, rstd, N, C);
  e = nd_ref_rel_err(alias, want, n);
  nd_ref_fill(dw1, C, &rng, -1, 1);
  double *ww = dsum(dw1, dw, C);
  nd_rmsnorm_backward_weight(dw1, dout, inp, rstd, N, C, 1.0f);
  double e2 = nd_ref_rel_err(dw1, ww, C);
  ok(e < TOL_ACC && e2 < TOL_ACC, "rmsnorm dinp onto an aliased dskip %.2e, dweight beta=1 %.2e N=%d C=%d", e, e2, N,
     C);
  free_all();
}

/* The frequency of pair i, in double, from the definitions: theta^(-2i/hs),
 * and Llama 3's scaling of it by its wavelength 2 pi / f against the
 * original context: longer than context / low, f / factor; shorter than
 * context / high, f; between, the mix of the two whose weight on f,
 * (context / wavelength - low) / (high - low), goes from 0 to 1 across. */
static double ref_inv_freq(nd_rope r, int i, int hs) {
  double f = pow(r.theta, -2.0 * i / hs);
  if (r.factor == 1.0f) return f;
  double wavelength = 2 * M_PI / f, lo = (double)r.context / r.low, hi = (double)r.context / r.high;
  if (wavelength > lo) return f / r.factor;
  if (wavelength < hi) return f;
  double w = ((double)r.context / wavelength - r.low) / ((double)r.high - r.low);
  return w * f + (1 - w) * f / r.factor;
}

/* Hugging Face's rotate_half rotation of x (B, T, H, hs) at each position, in double */
static void ref_rope(double *out, const double *x, int B, int T, int H, int hs, nd_rope r) {
  int half = hs / 2;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int h = 0; h < H; h++) {
        size_t o = (((size_t)b * T + t) * H + h) * hs;
        for (int i = 0; i < half; i++) {
          double a = t * ref_inv_freq(r, i, hs);
          out[o + i] = x[o + i] * cos(a) - x[o + i + half] * sin(a);
          out[o + i + half] = x[o + i + half] * cos(a) + x[o + i] * sin(a);
        }
      }
}

typedef struct {
  double *inp, *dout, *out;
  int B, T, H, hs;
  nd_rope r;
} rope_ctx;

static double rope_obj(void *p) {
  rope_ctx *c = p;
  ref_rope(c->out, c->inp, c->B, c->T, c->H, c->hs, c->r);
  return dot(c->dout, c->out, (int64_t)c->B * c->T * c->H * c->hs);
}

/* Llama 3.1's scaling (theta 500000, factor 8, low 1, high 4, context 8192)
 * on a head of 128: every frequency within 1e-6 of the closed form, and each
 * regime met (the highest kept, the lowest divided by 8, some between). */
static void test_rope_freq(void) {
  nd_rope r = {500000.0f, 8.0f, 1.0f, 4.0f, 8192.0f};
  double worst = 0;
  int kept = 0, divided = 0, blended = 0;
  for (int i = 0; i < 64; i++) {
    double want = ref_inv_freq(r, i, 128), got = nd_rope_inv_freq(r, i, 128), plain = pow(500000.0, -i / 64.0);
    worst = fmax(worst, fabs(got - want) / want);
    kept += fabs(want / plain - 1) < 1e-12, divided += fabs(want * 8 / plain - 1) < 1e-12;
    blended += fabs(want / plain - 1) >= 1e-12 && fabs(want * 8 / plain - 1) >= 1e-12;
  }
  ok(worst < 1e-6 && kept > 0 && divided > 0 && blended > 0 && nd_rope_inv_freq(r, 0, 128) == 1.0f,
     "llama3 inv_freq against the closed form: rel err %.2e (%d kept, %d blended, %d divided)", worst, kept, blended,
     divided);
}

static void test_rope(int B, int T, int H, int hs, nd_rope r) {
  int64_t n = (int64_t)B * T * H * hs;
  float *inp = falloc(n), *dout = falloc(n), *out = falloc(n), *dinp = falloc(n);
  nd_ref_fill(inp, n, &rng, -1, 1);
  nd_ref_fill(dout, n, &rng, -1, 1);
  rope_ctx c = {dcopy(inp, n), dcopy(dout, n), dalloc(n), B, T, H, hs, r};
  nd_rope_forward(out, inp, B, T, H, hs, r);
  rope_obj(&c);
  double e = nd_ref_rel_err(out, c.out, n);
  ok(e < TOL_FWD, "rope forward B=%d T=%d H=%d hs=%d theta=%g llama3 factor %g: rel err %.2e", B, T, H, hs,
     (double)r.theta, (double)r.factor, e);
  fill_nan(dinp, n);
  nd_rope_backward(dinp, dout, B, T, H, hs, r);
  double *g = dalloc(n);
  fd_grad(g, c.inp, n, rope_obj, &c);
  e = nd_ref_rel_err(dinp, g, n);
  ok(e < TOL_BWD, "rope backward B=%d T=%d H=%d hs=%d vs finite differences: rel err %.2e", B, T, H, hs, e);
  free_all();
}

typedef struct {
  double *gate, *up, *dout, *out;
  int64_t n;
} swiglu_ctx;

static double swiglu_obj(void *p) {
  swiglu_ctx *c = p;
  for (int64_t i = 0; i < c->n; i++) c->out[i] = c->gate[i] / (1.0 + exp(-c->gate[i])) * c->up[i];
  return dot(c->dout, c->out, c->n);
}

static void test_swiglu(int64_t n) {
  float *gate = falloc(n), *up = falloc(n), *dout = falloc(n), *out = falloc(n), *dg = falloc(n), *du = falloc(n);
  nd_ref_fill(gate, n, &rng, -4, 4);
  nd_ref_fill(up, n, &rng, -2, 2);
  nd_ref_fill(dout, n, &rng, -1, 1);
  swiglu_ctx c = {dcopy(gate, n), dcopy(up, n), dcopy(dout, n), dalloc(n), n};
  nd_swiglu_forward(out, gate, up, n);
  swiglu_obj(&c);
  double e = nd_ref_rel_err(out, c.out, n);
  ok(e < TOL_FWD, "swiglu forward n=%lld: rel err %.2e", (long long)n, e);
  fill_nan(dg, n);
  fill_nan(du, n);
  nd_swiglu_backward(dg, du, gate, up, dout, n);
  double *g = dalloc(n);
  fd_grad(g, c.gate, n, swiglu_obj, &c);
  e = nd_ref_rel_err(dg, g, n);
  fd_grad(g, c.up, n, swiglu_obj, &c);
  double e2 = nd_ref_rel_err(du, g, n);
  ok(e < TOL_BWD && e2 < TOL_BWD, "swiglu dgate %.2e dup %.2e n=%lld vs finite differences", e, e2, (long long)n);
  free_all();
}

/* Grouped-query attention: the reference is multi-head attention on a qkv whose
 * key/value heads are repeated across each query group. */
typedef struct {
  double *q, *k, *v, *qkv, *dout, *out;
  int B, T, NH, NKV, hs;
} gqa_ctx;

static double gqa_obj(void *p) {
  gqa_ctx *c = p;
  int C = c->NH * c->hs, g = c->NH / c->NKV;
  for (int bt = 0; bt < c->B * c->T; bt++)
    for (int h = 0; h < c->NH; h++)
      for (int i = 0; i < c->hs; i++) {
        double *row = c->qkv + (size_t)bt * 3 * C;
        row[h * c->hs + i] = c->q[((size_t)bt * c->NH + h) * c->hs + i];
        row[C + h * c->hs + i] = c->k[((size_t)bt * c->NKV + h / g) * c->hs + i];
        row[2 * C + h * c->hs + i] = c->v[((size_t)bt * c->NKV + h / g) * c->hs + i];
      }
  nd__ref_attention_fwd(c->out, NULL, c->qkv, c->B, c->T, c->NH, c->hs);
  return dot(c->dout, c->out, (int64_t)c->B * c->T * C);
}

static void test_gqa(int B, int T, int NH, int NKV, int hs) {
  int64_t nq = (int64_t)B * T * NH * hs, nkv = (int64_t)B * T * NKV * hs, nlse = (int64_t)B * NH * T;
  float *q = falloc(nq), *k = falloc(nkv), *v = falloc(nkv), *dout = falloc(nq), *out = falloc(nq);
  float *lse = falloc(nlse), *dq = falloc(nq), *dk = falloc(nkv), *dv = falloc(nkv);
  nd_ref_fill(q, nq, &rng, -1.5, 1.5);
  nd_ref_fill(k, nkv, &rng, -1.5, 1.5);
  nd_ref_fill(v, nkv, &rng, -1.5, 1.5);
  nd_ref_fill(dout, nq, &rng, -1, 1);
  gqa_ctx c = {
      dcopy(q, nq), dcopy(k, nkv), dcopy(v, nkv), dalloc(3 * nq), dcopy(dout, nq), dalloc(nq), B, T, NH, NKV, hs};
  nd_attention_gqa_forward(out, lse, q, k, v, NH * hs, NKV * hs, B, T, NH, NKV, hs);
  gqa_obj(&c);
  double e = nd_ref_rel_err(out, c.out, nq);
  ok(e < TOL_FWD, "gqa forward B=%d T=%d NH=%d NKV=%d hs=%d: rel err %.2e", B, T, NH, NKV, hs, e);
  fill_nan(dq, nq);
  fill_nan(dk, nkv);
  fill_nan(dv, nkv);
  nd_attention_gqa_backward(dq, dk, dv, dout, q, k, v, out, lse, NH * hs, NKV * hs, B, T, NH, NKV, hs);
  double *g = dalloc(nq);
  fd_grad(g, c.q, nq, gqa_obj, &c);
  e = nd_ref_rel_err(dq, g, nq);
  fd_grad(g, c.k, nkv, gqa_obj, &c);
  double ek = nd_ref_rel_err(dk, g, nkv);
  fd_grad(g, c.v, nkv, gqa_obj, &c);
  double ev = nd_ref_rel_err(dv, g, nkv);
  ok(e < TOL_BWD && ek < TOL_BWD && ev < TOL_BWD,
     "gqa B=%d T=%d NH=%d NKV=%d hs=%d vs finite differences: rel err dq %.2e dk %.2e dv %.2e", B, T, NH, NKV, hs, e,
     ek, ev);
  free_all();
}

int main(void) {
#ifdef OPENBLAS_VERSION
  openblas_set_num_threads(1);
#endif
  nd_ref_rng_seed(&rng, 1234);
  diag("tolerances: forward %.0e, backward vs finite differences %.0e (h=%.0e; fp64 backward %.0e), beta=1 %.0e",
       TOL_FWD, TOL_BWD, FD_H, TOL_REF, TOL_ACC);

  test_simd_exp();
  test_lanes();

  test_matmul(7, 5, 3, 0, 1);
  test_matmul(7, 5, 3, 1, 1);
  test_matmul(1, 1, 1, 0, 1);
  test_matmul(4, 6, 9, 0, 0);
  test_matmul(5, 8, 11, 1, 0);
  test_matmul(33, 17, 24, 0, 1);
  test_matmul(16, 24, 40, 1, 0);

  test_layernorm(1, 1);
  test_layernorm(3, 5);
  test_layernorm(7, 16);
  test_layernorm(5, 64);
  test_layernorm(3, 13);

  test_attention(1, 1, 1, 1, 1);
  test_attention(2, 1, 2, 3, 1);
  test_attention(1, 5, 2, 3, 1);
  test_attention(2, 7, 3, 4, 1);
  test_attention(1, 16, 2, 8, 1);
  test_attention(2, 64, 4, 16, 0);

  test_gelu(1);
  test_gelu(7);
  test_gelu(1000);

  test_residual(1);
  test_residual(1001);

  test_embedding(2, 5, 3, 7, 1, (int[]){7});
  test_embedding(3, 4, 5, 9, 2, (int[]){5, 4});
  test_embedding(2, 6, 4, 10, 3, (int[]){2, 7, 1});
  test_embedding(1, 1, 8, 3, 2, (int[]){1, 2});

  test_crossentropy(4, 11, 1, (int[]){11}, 1);
  test_crossentropy(5, 11, 2, (int[]){6, 5}, 1);
  test_crossentropy(5, 11, 3, (int[]){3, 7, 1}, 1);
  test_crossentropy(1, 5, 2, (int[]){1, 4}, 1);
  test_crossentropy(4, 257, 3, (int[]){100, 100, 57}, 1);
  test_crossentropy(16, 5000, 3, (int[]){1700, 1700, 1600}, 0);

  test_adamw(7, 1e-3f, 0.0f, 1.0f);
  test_adamw(1000, 1e-3f, 0.1f, 0.5f);
  test_adamw(1000, 0.05f, 0.1f, 0.25f);

  test_sum_ordered(1, 7);
  test_sum_ordered(2, 1000);
  test_sum_ordered(3, 1);
  test_sum_ordered(5, 513);
  test_sumsq(1);
  test_sumsq(10007);
  test_clip_scale();

  test_rmsnorm(1, 4, 1e-5f);
  test_rmsnorm(3, 5, 1e-5f);
  test_rmsnorm(7, 64, 1e-6f);
  test_rmsnorm(2, 21, 1e-5f);
  test_rope(1, 1, 1, 2, ND_ROPE_DEFAULT(10000.0f));
  test_rope(2, 5, 3, 4, ND_ROPE_DEFAULT(10000.0f));
  test_rope(1, 16, 2, 8, ND_ROPE_DEFAULT(500000.0f));
  /* Llama 3's scaling: at hs 16, pair 0 kept, 1 blended, 2.. divided */
  test_rope(2, 24, 2, 16, (nd_rope){10000.0f, 4.0f, 0.5f, 2.0f, 16.0f});
  test_rope_freq();
  test_swiglu(1);
  test_swiglu(1000);
  test_gqa(1, 1, 1, 1, 1);
  test_gqa(2, 5, 4, 2, 3);
  test_gqa(1, 7, 6, 2, 4);
  test_gqa(2, 6, 4, 1, 2);

  free_all();
  return done_testing();
}
