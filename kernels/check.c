/* Checking a kernel implementation on random inputs: a replacement, on each
 * backend it has a kernel for, against the double-precision reference of its
 * kind (kernels/reference.h); an activation's backward against finite
 * differences of its forward. Used by `ndgraph kernel-check` and by the
 * validation call before training. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/device.h"
#include "common/error.h"
#include "kernels/backend.h"
#include "kernels/probe.h"
#include "kernels/reference.h"
#include "kernels/registry.h"

#define ND__TOL    1e-4 /* float kernels against fp64 */
#define ND__TOL_FD 1e-3 /* central differences in float */

typedef struct buffers {
  int n;
  nd_tensor_desc d[ND_KIND_MAX_BUFFERS];
  uint8_t role[ND_KIND_MAX_BUFFERS];
  int64_t numel[ND_KIND_MAX_BUFFERS];
  nd_kernel_args a;
} buffers;

/* per thread: two runs may validate their plugins at once */
static _Thread_local uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static float uniform(float lo, float hi) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return lo + (hi - lo) * (float)((rng_state >> 40) / 16777216.0);
}

static int64_t extent(const nd_tensor_desc *d) {
  if (!d->data && d->ndim == 0) return 0;
  int64_t e = 1;
  for (int i = 0; i < d->ndim; i++) e += (d->shape[i] - 1) * d->strides[i];
  return e;
}

static void buffers_free(buffers *b) {
  for (int i = 0; i < b->n; i++) free(b->d[i].data);
}

/* Descriptors of task t with random contents (seeded: each case's inputs are the same on every backend). */
static int buffers_new(buffers *b, const nd_task *t, uint64_t seed) {
  memset(b, 0, sizeof *b);
  nd_tensor_desc shapes[ND_KIND_MAX_BUFFERS];
  b->n = nd__kernel_layout(t, NULL, NULL, NULL, shapes, &b->a, b->role);
  rng_state = seed;
  for (int i = 0; i < b->n; i++) {
    b->d[i] = shapes[i];
    if (shapes[i].ndim == 0) continue; /* absent */
    b->numel[i] = extent(&shapes[i]);
    float *p = malloc((size_t)(b->numel[i] ? b->numel[i] : 1) * sizeof *p);
    if (!p) {
      buffers_free(b);
      return ND_ENOMEM;
    }
    for (int64_t k = 0; k < b->numel[i]; k++) p[k] = uniform(-1.0f, 1.0f);
    b->d[i].data = p;
  }
  return 0;
}

/* ||x - ref|| / ||ref|| over the outputs (NaN when x has a non-finite value). */
static double out_err(const buffers *x, double *const *ref) {
  double num = 0, den = 0;
  for (int i = 0; i < x->n; i++) {
    if (x->role[i] != ND_ROLE_OUT || !x->d[i].data) continue;
    const float *p = x->d[i].data;
    for (int64_t k = 0; k < x->numel[i]; k++) {
      if (!isfinite(p[k])) return NAN;
      num += ((double)p[k] - ref[i][k]) * ((double)p[k] - ref[i][k]);
      den += ref[i][k] * ref[i][k];
    }
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* ---- the fp64 reference of each replaceable kind on r, double copies of the
 * descriptors' storage whose outputs hold what the kernel adds to */

#define OPT(i) (d[i].data ? r[i] : NULL)

static void ref_matmul_fwd(double *const *r, const nd_tensor_desc *d) {
  // out (M, N), inp (M, K), weight (K, N), bias (N) or absent
  nd__ref_matmul_fwd(r[0], r[1], r[2], OPT(3), (int)d[1].shape[0], (int)d[1].shape[1], (int)d[0].shape[1],
                     nd__weight_transposed(&d[2]));
}
static void ref_matmul_bwd_input(double *const *r, const nd_tensor_desc *d) {
  // dinp (M, K), dout (M, N), weight (K, N)
  nd__ref_matmul_bwd(r[0], NULL, NULL, r[1], NULL, r[2], (int)d[0].shape[0], (int)d[0].shape[1], (int)d[1].shape[1],
                     nd__weight_transposed(&d[2]));
}
static void ref_matmul_bwd_weight(double *const *r, const nd_tensor_desc *d) {
  // dweight (K, N), dbias (N) or absent, dout (M, N), inp (M, K)
  nd__ref_matmul_bwd(NULL, r[0], OPT(1), r[2], r[3], NULL, (int)d[3].shape[0], (int)d[3].shape[1], (int)d[2].shape[1],
                     nd__weight_transposed(&d[0]));
}
static void ref_layernorm_fwd(double *const *r, const nd_tensor_desc *d) {
  // out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C)
  nd__ref_layernorm_fwd(r[0], r[1], r[2], r[3], r[4], r[5], (int)d[0].shape[0], (int)d[0].shape[1]);
}
static void ref_layernorm_bwd_input(double *const *r, const nd_tensor_desc *d) {
  // dinp (N, C), dskip (N, C) or absent, dout, inp (N, C), weight (C), mean (N), rstd (N)
  const int64_t n = d[0].shape[0] * d[0].shape[1];
  if (d[1].data) memcpy(r[0], r[1], (size_t)n * sizeof(double)); // dinp = dskip + the normalization's gradient
  nd__ref_layernorm_bwd(r[0], NULL, NULL, r[2], r[3], r[4], r[5], r[6], (int)d[0].shape[0], (int)d[0].shape[1]);
}
static void ref_layernorm_bwd_weight(double *const *r, const nd_tensor_desc *d) {
  // dweight (C), dbias (C), dout (N, C), inp (N, C), mean (N), rstd (N)
  nd__ref_layernorm_bwd(NULL, r[0], r[1], r[2], r[3], NULL, r[4], r[5], (int)d[2].shape[0], (int)d[2].shape[1]);
}
static void ref_attention_fwd(double *const *r, const nd_tensor_desc *d) {
  // out (B, T, NH, hs), lse (B, NH, T), qkv (B, T, 3, NH, hs)
  const int64_t *s = d[0].shape;
  nd__ref_attention_fwd(r[0], r[1], r[2], (int)s[0], (int)s[1], (int)s[2], (int)s[3]);
}
static void ref_attention_bwd(double *const *r, const nd_tensor_desc *d) {
  // dqkv (B, T, 3, NH, hs), dout (B, T, NH, hs), qkv, out (B, T, NH, hs), lse (B, NH, T)
  const int64_t *s = d[1].shape;
  nd__ref_attention_bwd(r[0], r[1], r[2], r[3], r[4], (int)s[0], (int)s[1], (int)s[2], (int)s[3]);
}
static void ref_residual_fwd(double *const *r, const nd_tensor_desc *d) {
  // out (n), a (n), b (n)
  nd__ref_residual_fwd(r[0], r[1], r[2], d[0].shape[0]);
}
#undef OPT

typedef void (*reference_fn)(double *const *r, const nd_tensor_desc *d);
static const reference_fn reference[ND_TASK_KIND_COUNT] = {
    [ND_TASK_MATMUL_FWD] = ref_matmul_fwd,          [ND_TASK_MATMUL_BWD_IN] = ref_matmul_bwd_input,
    [ND_TASK_MATMUL_BWD_W] = ref_matmul_bwd_weight, [ND_TASK_LN_FWD] = ref_layernorm_fwd,
    [ND_TASK_LN_BWD_IN] = ref_layernorm_bwd_input,  [ND_TASK_LN_BWD_W] = ref_layernorm_bwd_weight,
    [ND_TASK_ATTN_FWD] = ref_attention_fwd,         [ND_TASK_ATTN_BWD] = ref_attention_bwd,
    [ND_TASK_RESIDUAL_FWD] = ref_residual_fwd,
};

/* What the inputs of b must be for the kind's contract, not only their shapes:
 * the attention backward's out and lse are the forward's on its qkv. */
static int meet_contract(enum nd_task_kind kind, buffers *b) {
  if (kind != ND_TASK_ATTN_BWD) return 0;
  const int64_t *s = b->d[1].shape; // dout (B, T, NH, hs); qkv (2), out (3), lse (4)
  double *qkv = malloc((size_t)b->numel[2] * sizeof *qkv), *out = malloc((size_t)b->numel[3] * sizeof *out);
  double *lse = malloc((size_t)(b->numel[4] ? b->numel[4] : 1) * sizeof *lse);
  int rc = qkv && out && lse ? 0 : ND_ENOMEM;
  if (!rc) {
    const float *x = b->d[2].data;
    float *o = b->d[3].data, *l = b->d[4].data;
    for (int64_t k = 0; k < b->numel[2]; k++) qkv[k] = x[k];
    nd__ref_attention_fwd(out, lse, qkv, (int)s[0], (int)s[1], (int)s[2], (int)s[3]);
    for (int64_t k = 0; k < b->numel[3]; k++) o[k] = (float)out[k];
    for (int64_t k = 0; k < b->numel[4]; k++) l[k] = (float)lse[k];
  }
  free(qkv), free(out), free(lse);
  return rc;
}

/* r[i]: buffer i of b in double, outputs as the kernel starts from (beta
 * times what they hold where the row says the kernel honours beta, else 0),
 * then the kind's reference computed on them. */
static int reference_of(enum nd_task_kind kind, const buffers *b, double **r) {
  const nd_kind_row *row = nd_kind(kind);
  memset(r, 0, ND_KIND_MAX_BUFFERS * sizeof *r);
  for (int i = 0; i < b->n; i++) {
    if (!b->d[i].data) continue;
    if (!(r[i] = malloc((size_t)(b->numel[i] ? b->numel[i] : 1) * sizeof **r))) return ND_ENOMEM;
    const float *p = b->d[i].data;
    double keep = b->role[i] != ND_ROLE_IN ? (row->buf[i].beta ? b->a.beta : 0.0) : 1.0;
    for (int64_t k = 0; k < b->numel[i]; k++) r[i][k] = keep ? keep * p[k] : 0.0;
  }
  reference[kind](r, b->d);
  return 0;
}

static void reference_free(double **r) {
  for (int i = 0; i < ND_KIND_MAX_BUFFERS; i++) free(r[i]);
}

/* The sizes each kind is checked at: its row's samples (the first is the quick one). */
static int cases(enum nd_task_kind kind, nd_task *t, int max) {
  const nd_kind_row *row = nd_kind(kind);
  int n = row->n_samples < max ? row->n_samples : max;
  for (int i = 0; i < n; i++) {
    memset(&t[i], 0, sizeof t[i]);
    t[i].kind = kind;
    t[i].a = row->samples[i];
  }
  return n;
}

/* In the start-up probe and kernel-check (a child process): the call that
 * follows, named if it never comes back. */
static void stage(const nd__kernel_impl *im, const char *kind, int dev) {
  nd__probe_stage("%s: kernel '%s' for %s%s%s", im->origin, im->name, kind, dev == ND_BACKEND_CPU ? "" : " on ",
                  dev == ND_BACKEND_CPU ? "" : nd_device_name(dev));
}

static int returned(const nd__kernel_impl *im, const char *kind, const char *what, int rc, nd_error *err) {
  return nd__fail(err, ND_EPLUGIN, "%s: kernel '%s' for %s returned %d on a %s", im->origin, im->name, kind, rc, what);
}

/* fn of backend dev on b (host memory; other backends copy it to a device and back). */
static int call(int dev, nd_kernel_fn fn, buffers *b, nd_error *err) {
  const nd_backend_ops *ops = nd__backend(dev);
  if (dev == ND_BACKEND_CPU || !ops->check_call) return fn(b->d, b->n, &b->a);
  return ops->check_call(fn, b->d, b->n, &b->a, err);
}

static int check_kind(enum nd_task_kind kind, const nd__kernel_impl *im, int dev, int quick, FILE *out, nd_error *err) {
  nd_task t[8];
  int n = cases(kind, t, quick ? 1 : 8), failed = 0;
  char on[24] = "";
  if (dev != ND_BACKEND_CPU) snprintf(on, sizeof on, " on %s", nd_device_name(dev));
  if (!reference[kind])
    return nd__fail(err, ND_EINVAL, "kernel check: %s has no double-precision reference", nd_task_kind_name(kind));
  for (int c = 0; c < n; c++) {
    buffers mine;
    double *ref[ND_KIND_MAX_BUFFERS] = {0};
    int rc = buffers_new(&mine, &t[c], 42 + (uint64_t)c);
    if (rc) return nd__fail(err, rc, "kernel check: out of memory");
    if ((rc = meet_contract(kind, &mine)) || (rc = reference_of(kind, &mine, ref))) {
      reference_free(ref);
      buffers_free(&mine);
      return nd__fail(err, rc, "kernel check: out of memory");
    }
    mine.a.user = im->user[dev];
    nd_error why = {0};
    stage(im, nd_task_kind_name(kind), dev);
    rc = call(dev, im->fn[dev], &mine, &why);
    double e = rc ? NAN : out_err(&mine, ref);
    reference_free(ref);
    buffers_free(&mine);
    if (rc < 0 && why.msg[0]) return nd__fail(err, rc, "%s", why.msg); /* no device: not the kernel's doing */
    if (rc) return returned(im, nd_task_kind_name(kind), quick ? "validation call" : "check", rc, err);
    int pass = e < ND__TOL;
    failed += !pass;
    if (out) {
      char what[128];
      nd_kind_sizes(&t[c], what, sizeof what);
      fprintf(out, "%s %s (%s)%s: rel err %.2e vs fp64: %s\n", nd_task_kind_name(kind), im->name, what, on, e,
              pass ? "ok" : "FAIL");
    }
  }
  return failed ? 1 : 0;
}

static double rel(const float *x, const float *ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) return NAN;
    num += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]);
    den += (double)ref[i] * ref[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The activation's kernels on backend dev against its CPU results y = f(x)
 * and dinp = f'(x) * dout. Returns 0 pass, 1 fail, or a negative ND_E*. */
static int activation_on(const nd__kernel_impl *im, int dev, int64_t n, const float *x, const float *dout,
                         const float *y, const float *dinp, FILE *out, nd_error *err) {
  size_t sz = (size_t)n * sizeof(float);
  float *xc = malloc(sz), *dc = malloc(sz), *yd = calloc((size_t)n, sizeof(float)),
        *gd = calloc((size_t)n, sizeof(float));
  int rc = 0;
  if (!xc || !dc || !yd || !gd) {
    rc = nd__fail(err, ND_ENOMEM, "kernel check: out of memory");
    goto cleanup;
  }
  memcpy(xc, x, sz);
  memcpy(dc, dout, sz);
  const nd_backend_ops *ops = nd__backend(dev);
  nd_tensor_desc d[3];
  nd_task t = {.kind = ND_TASK_ACT_FWD, .a.ew.n = n};
  nd_kernel_args a;
  nd__kernel_layout(&t, NULL, NULL, NULL, d, &a, NULL);
  a.user = im->user[dev];
  d[0].data = yd, d[1].data = xc;
  nd_error why = {0};
  stage(im, "activation_fwd", dev);
  if ((rc = ops->check_call(im->fn[dev], d, 2, &a, &why))) goto failed;
  t.kind = ND_TASK_ACT_BWD;
  nd__kernel_layout(&t, NULL, NULL, NULL, d, &a, NULL);
  a.user = im->user[dev];
  d[0].data = gd, d[1].data = xc, d[2].data = dc;
  stage(im, "activation_bwd", dev);
  if ((rc = ops->check_call(im->fn2[dev], d, 3, &a, &why))) goto failed;
  double ef = rel(yd, y, n), eb = rel(gd, dinp, n);
  int pass_f = ef < ND__TOL, pass_b = eb < ND__TOL;
  if (out) {
    fprintf(out, "activation %s forward (n %lld) on %s: rel err %.2e vs cpu: %s\n", im->name, (long long)n,
            nd_device_name(dev), ef, pass_f ? "ok" : "FAIL");
    fprintf(out, "activation %s backward (n %lld) on %s: rel err %.2e vs cpu: %s\n", im->name, (long long)n,
            nd_device_name(dev), eb, pass_b ? "ok" : "FAIL");
  }
  rc = !pass_f || !pass_b;
  goto cleanup;
failed:
  if (rc < 0 && why.msg[0])
    rc = nd__fail(err, rc, "%s", why.msg);
  else
    rc = returned(im, "activation", "check", rc, err);
cleanup:
  free(xc), free(dc), free(yd), free(gd);
  return rc;
}

/* The activation on one point set: forward values and the backward against
 * central differences of the forward; then its kernels on other backends
 * against the CPU's. */
static int check_activation(const nd__kernel_impl *im, int64_t n, int quick, FILE *out, nd_error *err) {
  int rc = 0, failed = 0;
  size_t sz = (size_t)n * sizeof(float);
  float *x = malloc(sz), *y = malloc(sz), *yp = malloc(sz), *ym = malloc(sz), *xp = malloc(sz), *xm = malloc(sz),
        *dout = malloc(sz), *dinp = malloc(sz);
  if (!x || !y || !yp || !ym || !xp || !xm || !dout || !dinp) {
    rc = nd__fail(err, ND_ENOMEM, "kernel check: out of memory");
    goto cleanup;
  }
  rng_state = 7 + (uint64_t)n;
  for (int64_t i = 0; i < n; i++) {
    x[i] = uniform(-4.0f, 4.0f);
    dout[i] = uniform(-1.0f, 1.0f);
    float h = 1e-2f * fmaxf(1.0f, fabsf(x[i]));
    xp[i] = x[i] + h;
    xm[i] = x[i] - h;
  }
  nd_tensor_desc d[3];
  nd_task t = {.kind = ND_TASK_ACT_FWD, .a.ew.n = n};
  nd_kernel_args a;
  nd__kernel_layout(&t, NULL, NULL, NULL, d, &a, NULL);
  a.user = im->user[ND_BACKEND_CPU];
  float *fwd_out[3] = {y, yp, ym}, *fwd_in[3] = {x, xp, xm};
  stage(im, "activation_fwd", ND_BACKEND_CPU);
  for (int k = 0; k < 3; k++) {
    d[0].data = fwd_out[k];
    d[1].data = fwd_in[k];
    if ((rc = im->fn[ND_BACKEND_CPU](d, 2, &a))) {
      rc = returned(im, "activation_fwd", quick ? "validation call" : "check", rc, err);
      goto cleanup;
    }
  }
  t.kind = ND_TASK_ACT_BWD;
  nd__kernel_layout(&t, NULL, NULL, NULL, d, &a, NULL);
  a.user = im->user[ND_BACKEND_CPU];
  d[0].data = dinp;
  d[1].data = x;
  d[2].data = dout;
  stage(im, "activation_bwd", ND_BACKEND_CPU);
  if ((rc = im->fn2[ND_BACKEND_CPU](d, 3, &a))) {
    rc = returned(im, "activation_bwd", quick ? "validation call" : "check", rc, err);
    goto cleanup;
  }
  int finite = 1;
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    finite &= isfinite(y[i]) && isfinite(dinp[i]);
    double fd = ((double)yp[i] - ym[i]) / ((double)xp[i] - xm[i]) * dout[i];
    num += (dinp[i] - fd) * (dinp[i] - fd);
    den += fd * fd;
  }
  double e = finite ? (den > 0 ? sqrt(num / den) : sqrt(num)) : NAN;
  int pass_f = finite, pass_b = e < ND__TOL_FD;
  failed = !pass_f || !pass_b;
  if (out) {
    fprintf(out, "activation %s forward (n %lld): values %s: %s\n", im->name, (long long)n,
            finite ? "finite" : "NOT finite", pass_f ? "ok" : "FAIL");
    fprintf(out, "activation %s backward (n %lld): rel err %.2e vs finite differences: %s\n", im->name, (long long)n, e,
            pass_b ? "ok" : "FAIL");
  }
  rc = failed;
  for (int dev = 0; dev < ND_BACKEND_COUNT && !quick && rc >= 0; dev++) {
    if (dev == ND_BACKEND_CPU || !im->fn[dev] || !nd__backend(dev) || !nd__backend(dev)->check_call) continue;
    int r = activation_on(im, dev, n, x, dout, y, dinp, out, err);
    rc = r < 0 ? r : rc | r;
  }
cleanup:
  free(x), free(y), free(yp), free(ym), free(xp), free(xm), free(dout), free(dinp);
  return rc;
}

int nd__kernel_check(enum nd_task_kind kind, const nd__kernel_impl *impl, int quick, FILE *out, nd_error *err) {
  if (kind != ND_TASK_ACT_FWD && kind != ND_TASK_ACT_BWD) {
    int failed = 0;
    for (int dev = 0; dev < (quick ? 1 : ND_BACKEND_COUNT); dev++) {
      if (!impl->fn[dev]) continue;
      if (!nd__backend(dev)) {
        if (out)
          fprintf(out, "%s %s on %s: skipped (not in this build)\n", nd_task_kind_name(kind), impl->name,
                  nd_device_name(dev));
        continue;
      }
      int rc = check_kind(kind, impl, dev, quick, out, err);
      if (rc < 0) return rc;
      failed |= rc;
    }
    return failed;
  }
  if (!impl->fn[ND_BACKEND_CPU]) return 0; /* activations are checked on the CPU */
  const nd_kind_row *row = nd_kind(ND_TASK_ACT_FWD);
  int failed = 0;
  for (int i = 0; i < (quick ? 1 : row->n_samples); i++) {
    int rc = check_activation(impl, row->samples[i].ew.n, quick, out, err);
    if (rc < 0) return rc;
    failed |= rc;
  }
  return failed;
}
