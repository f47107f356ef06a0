/* Checking a kernel implementation on random inputs: a replacement, on each
 * backend it has a kernel for, against the built-in CPU kernel of its kind;
 * an activation's backward against finite differences of its forward. Used
 * by `ndgraph kernel-check` and by the validation call before training. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "kernels/backend.h"
#include "kernels/registry.h"

#define ND__TOL    1e-4 /* float kernels summing in another order */
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

/* Descriptors of task t with random contents (seeded: a and a copy agree). */
static int buffers_new(buffers *b, const nd_task *t, uint64_t seed) {
  memset(b, 0, sizeof *b);
  nd_tensor_desc shapes[ND_KIND_MAX_BUFFERS];
  b->n = nd__kernel_layout(t, NULL, NULL, shapes, &b->a, b->role);
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
static double out_err(const buffers *x, const buffers *ref) {
  double num = 0, den = 0;
  for (int i = 0; i < ref->n; i++) {
    if (ref->role[i] != ND_ROLE_OUT || !ref->d[i].data) continue;
    const float *p = x->d[i].data, *q = ref->d[i].data;
    for (int64_t k = 0; k < ref->numel[i]; k++) {
      if (!isfinite(p[k])) return NAN;
      num += ((double)p[k] - q[k]) * ((double)p[k] - q[k]);
      den += (double)q[k] * q[k];
    }
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
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
  if (dev != ND_BACKEND_CPU) snprintf(on, sizeof on, " on %s", nd__backend_name(dev));
  for (int c = 0; c < n; c++) {
    buffers ref, mine;
    int rc = buffers_new(&ref, &t[c], 42 + (uint64_t)c);
    if (!rc && (rc = buffers_new(&mine, &t[c], 42 + (uint64_t)c))) buffers_free(&ref);
    if (rc) return nd__fail(err, rc, "kernel check: out of memory");
    nd__backend(ND_BACKEND_CPU)->kernel[kind](ref.d, ref.n, &ref.a);
    mine.a.user = im->user[dev];
    nd_error why = {0};
    rc = call(dev, im->fn[dev], &mine, &why);
    double e = rc ? NAN : out_err(&mine, &ref);
    buffers_free(&ref);
    buffers_free(&mine);
    if (rc < 0 && why.msg[0]) return nd__fail(err, rc, "%s", why.msg); /* no device: not the kernel's doing */
    if (rc) return returned(im, nd_task_kind_name(kind), quick ? "validation call" : "check", rc, err);
    int pass = e < ND__TOL;
    failed += !pass;
    if (out) {
      char what[128];
      nd_kind_sizes(&t[c], what, sizeof what);
      fprintf(out, "%s %s (%s)%s: rel err %.2e vs builtin: %s\n", nd_task_kind_name(kind), im->name, what, on, e,
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
  nd__kernel_layout(&t, NULL, NULL, d, &a, NULL);
  a.user = im->user[dev];
  d[0].data = yd, d[1].data = xc;
  nd_error why = {0};
  if ((rc = ops->check_call(im->fn[dev], d, 2, &a, &why))) goto failed;
  t.kind = ND_TASK_ACT_BWD;
  nd__kernel_layout(&t, NULL, NULL, d, &a, NULL);
  a.user = im->user[dev];
  d[0].data = gd, d[1].data = xc, d[2].data = dc;
  if ((rc = ops->check_call(im->fn2[dev], d, 3, &a, &why))) goto failed;
  double ef = rel(yd, y, n), eb = rel(gd, dinp, n);
  int pass_f = ef < ND__TOL, pass_b = eb < ND__TOL;
  if (out) {
    fprintf(out, "activation %s forward (n %lld) on %s: rel err %.2e vs cpu: %s\n", im->name, (long long)n,
            nd__backend_name(dev), ef, pass_f ? "ok" : "FAIL");
    fprintf(out, "activation %s backward (n %lld) on %s: rel err %.2e vs cpu: %s\n", im->name, (long long)n,
            nd__backend_name(dev), eb, pass_b ? "ok" : "FAIL");
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
  nd__kernel_layout(&t, NULL, NULL, d, &a, NULL);
  a.user = im->user[ND_BACKEND_CPU];
  float *fwd_out[3] = {y, yp, ym}, *fwd_in[3] = {x, xp, xm};
  for (int k = 0; k < 3; k++) {
    d[0].data = fwd_out[k];
    d[1].data = fwd_in[k];
    if ((rc = im->fn[ND_BACKEND_CPU](d, 2, &a))) {
      rc = returned(im, "activation_fwd", quick ? "validation call" : "check", rc, err);
      goto cleanup;
    }
  }
  t.kind = ND_TASK_ACT_BWD;
  nd__kernel_layout(&t, NULL, NULL, d, &a, NULL);
  a.user = im->user[ND_BACKEND_CPU];
  d[0].data = dinp;
  d[1].data = x;
  d[2].data = dout;
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
                  nd__backend_name(dev));
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
