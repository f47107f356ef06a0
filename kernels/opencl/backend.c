/* The OpenCL backend: the kernels of kernels.cl and CLBlast behind the
 * descriptor interface (a descriptor's data is the buffer's cl_mem), run on
 * the calling StarPU worker's queue. Kernel argument lists follow kernels.cl. */
#include <math.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/backend.h"
#include "kernels/device.h"
#include "kernels/opencl/opencl.h"

#define M(i) ((cl_mem)c->t[i].data)

static int matmul_fwd(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  return nd_ocl_matmul_forward(M(0), M(1), M(2), M(3), m->M, m->K, m->N, m->trans_w);
}

static int matmul_bwd_input(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  return nd_ocl_matmul_backward_input(M(0), M(1), M(2), m->M, m->K, m->N, m->trans_w, m->beta);
}

static int matmul_bwd_weight(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  return nd_ocl_matmul_backward_weight(M(0), M(1), M(2), M(3), m->M, m->K, m->N, m->trans_w, m->beta);
}

static int layernorm_fwd(const nd_kcall *c) {
  const struct nd_ln_args *l = &c->task->a.ln;
  cl_mem out = M(0), mean = M(1), rstd = M(2), inp = M(3), w = M(4), b = M(5);
  size_t n = (size_t)l->N;
  nd_ocl_arg a[] = {ND_OCL_ARG(out), ND_OCL_ARG(mean), ND_OCL_ARG(rstd), ND_OCL_ARG(inp),
                    ND_OCL_ARG(w),   ND_OCL_ARG(b),    ND_OCL_ARG(l->C)};
  return nd_ocl_run(ND_OCL_ln_fwd, 1, &n, 7, a);
}

static int layernorm_bwd_input(const nd_kcall *c) {
  const struct nd_ln_args *l = &c->task->a.ln;
  cl_mem dinp = M(0), dout = M(2), inp = M(3), w = M(4), mean = M(5), rstd = M(6);
  cl_mem dskip = l->has_skip ? M(1) : dinp; /* not read without a skip */
  size_t n = (size_t)l->N;
  nd_ocl_arg a[] = {ND_OCL_ARG(dinp), ND_OCL_ARG(dskip), ND_OCL_ARG(l->has_skip), ND_OCL_ARG(dout), ND_OCL_ARG(inp),
                    ND_OCL_ARG(w),    ND_OCL_ARG(mean),  ND_OCL_ARG(rstd),        ND_OCL_ARG(l->C)};
  return nd_ocl_run(ND_OCL_ln_bwd_in, 1, &n, 9, a);
}

static int layernorm_bwd_weight(const nd_kcall *c) {
  const struct nd_ln_args *l = &c->task->a.ln;
  cl_mem dw = M(0), db = M(1), dout = M(2), inp = M(3), mean = M(4), rstd = M(5);
  size_t n = (size_t)l->C;
  nd_ocl_arg a[] = {ND_OCL_ARG(dw),   ND_OCL_ARG(db),   ND_OCL_ARG(dout), ND_OCL_ARG(inp),    ND_OCL_ARG(mean),
                    ND_OCL_ARG(rstd), ND_OCL_ARG(l->N), ND_OCL_ARG(l->C), ND_OCL_ARG(l->beta)};
  return nd_ocl_run(ND_OCL_ln_bwd_w, 1, &n, 9, a);
}

/* q, k, v of attention as kernels.cl takes them: buffers, element offsets, row strides */
struct qkv {
  cl_mem q, k, v;
  int qo, ko, vo, qs, kvs;
};

static struct qkv fused(cl_mem qkv, const struct nd_gqa_args *a) {
  int C = a->NH * a->hs;
  return (struct qkv){qkv, qkv, qkv, 0, C, 2 * C, 3 * C, 3 * C};
}

static struct qkv separate(cl_mem q, cl_mem k, cl_mem v, const struct nd_gqa_args *a) {
  return (struct qkv){q, k, v, 0, 0, 0, a->NH * a->hs, a->NKV * a->hs};
}

/* The (B, NH, T, T) probabilities, scratch of one call: the graph keeps only
 * each row's log-sum-exp. */
static cl_mem scores_scratch(const struct nd_gqa_args *a, cl_int *rc) {
  return nd_ocl_alloc((size_t)a->B * a->NH * a->T * a->T * sizeof(float), rc);
}

/* att = the scaled scores q . k^T (0 above the diagonal) */
static int scores(cl_mem att, const struct qkv *x, const struct nd_gqa_args *a) {
  float scale = 1.0f / sqrtf((float)a->hs);
  size_t tt[] = {(size_t)a->B * a->NH, (size_t)a->T, (size_t)a->T};
  nd_ocl_arg s[] = {ND_OCL_ARG(att),   ND_OCL_ARG(x->q),   ND_OCL_ARG(x->qo),  ND_OCL_ARG(x->qs),
                    ND_OCL_ARG(x->k),  ND_OCL_ARG(x->ko),  ND_OCL_ARG(x->kvs), ND_OCL_ARG(a->T),
                    ND_OCL_ARG(a->NH), ND_OCL_ARG(a->NKV), ND_OCL_ARG(a->hs),  ND_OCL_ARG(scale)};
  return nd_ocl_run(ND_OCL_att_scores, 3, tt, 12, s);
}

static int attention_forward(cl_mem out, cl_mem lse, const struct qkv *x, const struct nd_gqa_args *a) {
  // out (B, T, NH, hs), lse (B, NH, T)
  size_t rows = (size_t)a->B * a->NH * a->T;
  size_t td[] = {(size_t)a->B * a->NH, (size_t)a->T, (size_t)a->hs};
  cl_int rc;
  cl_mem att = scores_scratch(a, &rc);
  if (!att) return rc;
  nd_ocl_arg m[] = {ND_OCL_ARG(att), ND_OCL_ARG(lse), ND_OCL_ARG(a->T)};
  nd_ocl_arg o[] = {ND_OCL_ARG(out),  ND_OCL_ARG(att),   ND_OCL_ARG(x->v),   ND_OCL_ARG(x->vo), ND_OCL_ARG(x->kvs),
                    ND_OCL_ARG(a->T), ND_OCL_ARG(a->NH), ND_OCL_ARG(a->NKV), ND_OCL_ARG(a->hs)};
  rc = scores(att, x, a);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_softmax, 1, &rows, 3, m);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_out, 3, td, 9, o);
  clReleaseMemObject(att);
  return rc;
}

static int attention_backward(const struct qkv *dx, cl_mem dout, const struct qkv *x, cl_mem out, cl_mem lse,
                              const struct nd_gqa_args *a) {
  // dq, dk, dv (layouts as q, k, v) overwritten; dout and out (B, T, NH, hs); lse (B, NH, T)
  float scale = 1.0f / sqrtf((float)a->hs);
  size_t tt[] = {(size_t)a->B * a->NH, (size_t)a->T, (size_t)a->T};
  size_t rows = (size_t)a->B * a->NH * a->T;
  size_t tq[] = {(size_t)a->B * a->NH, (size_t)a->T, (size_t)a->hs};
  size_t tkv[] = {(size_t)a->B * a->NKV, (size_t)a->T, (size_t)a->hs};
  cl_int rc;
  cl_mem att = scores_scratch(a, &rc), datt = att ? scores_scratch(a, &rc) : NULL; // probabilities, their gradient
  if (!datt) {
    if (att) clReleaseMemObject(att);
    return rc;
  }
  nd_ocl_arg p[] = {ND_OCL_ARG(att), ND_OCL_ARG(lse), ND_OCL_ARG(a->T)};
  nd_ocl_arg d[] = {ND_OCL_ARG(datt), ND_OCL_ARG(dout),  ND_OCL_ARG(x->v),   ND_OCL_ARG(x->vo), ND_OCL_ARG(x->kvs),
                    ND_OCL_ARG(a->T), ND_OCL_ARG(a->NH), ND_OCL_ARG(a->NKV), ND_OCL_ARG(a->hs)};
  nd_ocl_arg m[] = {ND_OCL_ARG(datt), ND_OCL_ARG(att),  ND_OCL_ARG(dout), ND_OCL_ARG(out),
                    ND_OCL_ARG(a->T), ND_OCL_ARG(a->NH), ND_OCL_ARG(a->hs)};
  nd_ocl_arg q[] = {ND_OCL_ARG(dx->q), ND_OCL_ARG(dx->qo), ND_OCL_ARG(dx->qs), ND_OCL_ARG(datt),
                    ND_OCL_ARG(x->k),  ND_OCL_ARG(x->ko),  ND_OCL_ARG(x->kvs), ND_OCL_ARG(a->T),
                    ND_OCL_ARG(a->NH), ND_OCL_ARG(a->NKV), ND_OCL_ARG(a->hs),  ND_OCL_ARG(scale)};
  nd_ocl_arg kv[] = {ND_OCL_ARG(dx->k),   ND_OCL_ARG(dx->ko), ND_OCL_ARG(dx->v), ND_OCL_ARG(dx->vo),
                     ND_OCL_ARG(dx->kvs), ND_OCL_ARG(datt),   ND_OCL_ARG(att),   ND_OCL_ARG(dout),
                     ND_OCL_ARG(x->q),    ND_OCL_ARG(x->qo),  ND_OCL_ARG(x->qs), ND_OCL_ARG(a->T),
                     ND_OCL_ARG(a->NH),   ND_OCL_ARG(a->NKV), ND_OCL_ARG(a->hs), ND_OCL_ARG(scale)};
  rc = scores(att, x, a);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_probs, 1, &rows, 3, p);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_dscores, 3, tt, 9, d);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_softmax_bwd, 1, &rows, 7, m);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_dq, 3, tq, 12, q);
  if (!rc) rc = nd_ocl_run(ND_OCL_att_dkv, 3, tkv, 16, kv);
  clReleaseMemObject(datt);
  clReleaseMemObject(att);
  return rc;
}

static int attention_fwd(const nd_kcall *c) {
  const struct nd_attn_args *at = &c->task->a.attn;
  struct nd_gqa_args a = {at->B, at->T, at->NH, at->hs, at->NH};
  struct qkv x = fused(M(2), &a);
  return attention_forward(M(0), M(1), &x, &a);
}

static int attention_bwd(const nd_kcall *c) {
  // dqkv, dout, qkv, out, lse
  const struct nd_attn_args *at = &c->task->a.attn;
  struct nd_gqa_args a = {at->B, at->T, at->NH, at->hs, at->NH};
  struct qkv dx = fused(M(0), &a), x = fused(M(2), &a);
  return attention_backward(&dx, M(1), &x, M(3), M(4), &a);
}

static int gqa_fwd(const nd_kcall *c) {
  const struct nd_gqa_args *a = &c->task->a.gqa;
  struct qkv x = separate(M(2), M(3), M(4), a);
  return attention_forward(M(0), M(1), &x, a);
}

static int gqa_bwd(const nd_kcall *c) {
  // dq, dk, dv, dout, q, k, v, out, lse
  const struct nd_gqa_args *a = &c->task->a.gqa;
  struct qkv dx = separate(M(0), M(1), M(2), a), x = separate(M(4), M(5), M(6), a);
  return attention_backward(&dx, M(3), &x, M(7), M(8), a);
}

static int gelu_fwd(const nd_kcall *c) {
  size_t n = (size_t)c->task->a.ew.n;
  cl_mem out = M(0), inp = M(1);
  nd_ocl_arg a[] = {ND_OCL_ARG(out), ND_OCL_ARG(inp)};
  return nd_ocl_run(ND_OCL_gelu_fwd, 1, &n, 2, a);
}

static int gelu_bwd(const nd_kcall *c) {
  size_t n = (size_t)c->task->a.ew.n;
  cl_mem dinp = M(0), inp = M(1), dout = M(2);
  nd_ocl_arg a[] = {ND_OCL_ARG(dinp), ND_OCL_ARG(inp), ND_OCL_ARG(dout)};
  return nd_ocl_run(ND_OCL_gelu_bwd, 1, &n, 3, a);
}

static int residual_fwd(const nd_kcall *c) {
  size_t n = (size_t)c->task->a.ew.n;
  cl_mem out = M(0), a = M(1), b = M(2);
  nd_ocl_arg args[] = {ND_OCL_ARG(out), ND_OCL_ARG(a), ND_OCL_ARG(b)};
  return nd_ocl_run(ND_OCL_residual, 1, &n, 3, args);
}

static int embedding_fwd(const nd_kcall *c) {
  const struct nd_emb_args *a = &c->task->a.emb;
  cl_mem out = M(0), tok = M(1), wte = M(2), wpe = a->wpe ? M(3) : wte;
  size_t g[] = {(size_t)a->B * a->T, (size_t)a->C};
  nd_ocl_arg args[] = {ND_OCL_ARG(out),  ND_OCL_ARG(tok),  ND_OCL_ARG(wte),   ND_OCL_ARG(wpe),  ND_OCL_ARG(a->wpe),
                       ND_OCL_ARG(a->T), ND_OCL_ARG(a->C), ND_OCL_ARG(a->v0), ND_OCL_ARG(a->Vs)};
  return nd_ocl_run(ND_OCL_embed_fwd, 2, g, 9, args);
}

static int embedding_bwd(const nd_kcall *c) {
  const struct nd_emb_args *a = &c->task->a.emb;
  cl_mem dtable = M(0), dout = M(1), tok = M(2);
  if (a->wpe) {
    size_t g[] = {(size_t)a->T, (size_t)a->C};
    nd_ocl_arg args[] = {ND_OCL_ARG(dtable), ND_OCL_ARG(dout), ND_OCL_ARG(a->B), ND_OCL_ARG(a->T), ND_OCL_ARG(a->beta)};
    return nd_ocl_run(ND_OCL_embed_bwd_wpe, 2, g, 5, args);
  }
  int bt = a->B * a->T;
  size_t cols = (size_t)a->C;
  nd_ocl_arg args[] = {ND_OCL_ARG(dtable), ND_OCL_ARG(dout),  ND_OCL_ARG(tok),  ND_OCL_ARG(bt),
                       ND_OCL_ARG(a->C),   ND_OCL_ARG(a->v0), ND_OCL_ARG(a->Vs)};
  int rc = nd_ocl_scale(dtable, (size_t)a->Vs * cols, a->beta);
  return rc ? rc : nd_ocl_run(ND_OCL_embed_bwd_wte, 1, &cols, 7, args);
}

static int crossentropy_stats(const nd_kcall *c) {
  const struct nd_ce_args *a = &c->task->a.ce;
  cl_mem stats = M(0), logits = M(1), targets = M(2);
  size_t n = (size_t)a->N;
  nd_ocl_arg args[] = {ND_OCL_ARG(stats), ND_OCL_ARG(logits), ND_OCL_ARG(targets), ND_OCL_ARG(a->Vs),
                       ND_OCL_ARG(a->v0)};
  return nd_ocl_run(ND_OCL_ce_stats, 1, &n, 5, args);
}

static int crossentropy_lse(const nd_kcall *c) {
  cl_mem lse = M(0), stats = M(1);
  size_t n = (size_t)c->task->a.ce.N;
  nd_ocl_arg args[] = {ND_OCL_ARG(lse), ND_OCL_ARG(stats)};
  return nd_ocl_run(ND_OCL_ce_lse, 1, &n, 2, args);
}

static int crossentropy_bwd(const nd_kcall *c) {
  const struct nd_ce_args *a = &c->task->a.ce;
  cl_mem logits = M(0), lse = M(1), targets = M(2);
  float scale = c->step->loss_scale;
  size_t g[] = {(size_t)a->N, (size_t)a->Vs};
  nd_ocl_arg args[] = {ND_OCL_ARG(logits), ND_OCL_ARG(lse), ND_OCL_ARG(targets), ND_OCL_ARG(a->v0), ND_OCL_ARG(scale)};
  return nd_ocl_run(ND_OCL_ce_bwd, 2, g, 5, args);
}

/* the shared glue's primitives (kernels/device.h) */
static int accumulate(void *out, void *x, int64_t n) {
  size_t g = (size_t)n;
  cl_mem o = out, p = x;
  nd_ocl_arg args[] = {ND_OCL_ARG(o), ND_OCL_ARG(p)};
  return nd_ocl_run(ND_OCL_accumulate, 1, &g, 2, args);
}
static int copy(void *dst, void *src, size_t bytes) { return nd_ocl_copy(dst, src, bytes); }
static int read_back(void *host, void *src, size_t bytes) { return nd_ocl_read(host, src, bytes); }
static const nd_device_prims prims = {accumulate, copy, read_back};

static int allreduce(const nd_kcall *c) { return nd__device_allreduce(&prims, c); }
static int sendrecv(const nd_kcall *c) { return nd__device_sendrecv(&prims, c); }

static int adamw(const nd_kcall *c) {
  const struct nd_adamw_args *a = &c->task->a.adamw;
  const nd_step *s = c->step;
  float scale, wd;
  int rc = nd__device_adamw_factors(&prims, c, &scale, &wd);
  float c1 = (float)(1.0 / (1.0 - pow(s->beta1, s->adam_t))), c2 = (float)(1.0 / (1.0 - pow(s->beta2, s->adam_t)));
  cl_mem p = M(0), m = M(1), v = M(2), g = M(3);
  size_t n = (size_t)a->n;
  nd_ocl_arg args[] = {ND_OCL_ARG(p),     ND_OCL_ARG(m),        ND_OCL_ARG(v),        ND_OCL_ARG(g),
                       ND_OCL_ARG(s->lr), ND_OCL_ARG(s->beta1), ND_OCL_ARG(s->beta2), ND_OCL_ARG(s->eps),
                       ND_OCL_ARG(wd),    ND_OCL_ARG(scale),    ND_OCL_ARG(c1),       ND_OCL_ARG(c2)};
  return rc ? rc : nd_ocl_run(ND_OCL_adamw, 1, &n, 12, args);
}

static int rmsnorm_fwd(const nd_kcall *c) {
  const struct nd_rms_args *l = &c->task->a.rms;
  cl_mem out = M(0), rstd = M(1), inp = M(2), w = M(3);
  size_t n = (size_t)l->N;
  nd_ocl_arg a[] = {ND_OCL_ARG(out), ND_OCL_ARG(rstd), ND_OCL_ARG(inp),
                    ND_OCL_ARG(w),   ND_OCL_ARG(l->C), ND_OCL_ARG(l->eps)};
  return nd_ocl_run(ND_OCL_rms_fwd, 1, &n, 6, a);
}

static int rmsnorm_bwd_input(const nd_kcall *c) {
  const struct nd_rms_args *l = &c->task->a.rms;
  cl_mem dinp = M(0), dout = M(2), inp = M(3), w = M(4), rstd = M(5);
  cl_mem dskip = l->has_skip ? M(1) : dinp; /* not read without a skip */
  size_t n = (size_t)l->N;
  nd_ocl_arg a[] = {ND_OCL_ARG(dinp), ND_OCL_ARG(dskip), ND_OCL_ARG(l->has_skip), ND_OCL_ARG(dout),
                    ND_OCL_ARG(inp),  ND_OCL_ARG(w),     ND_OCL_ARG(rstd),        ND_OCL_ARG(l->C)};
  return nd_ocl_run(ND_OCL_rms_bwd_in, 1, &n, 8, a);
}

static int rmsnorm_bwd_weight(const nd_kcall *c) {
  const struct nd_rms_args *l = &c->task->a.rms;
  cl_mem dw = M(0), dout = M(1), inp = M(2), rstd = M(3);
  size_t n = (size_t)l->C;
  nd_ocl_arg a[] = {ND_OCL_ARG(dw),   ND_OCL_ARG(dout), ND_OCL_ARG(inp),    ND_OCL_ARG(rstd),
                    ND_OCL_ARG(l->N), ND_OCL_ARG(l->C), ND_OCL_ARG(l->beta)};
  return nd_ocl_run(ND_OCL_rms_bwd_w, 1, &n, 7, a);
}

static int rope(const nd_kcall *c, float sign) {
  const struct nd_rope_args *r = &c->task->a.rope;
  cl_mem out = M(0), inp = M(1);
  size_t g[] = {(size_t)r->B * r->T * r->H, (size_t)r->hs / 2};
  nd_ocl_arg a[] = {ND_OCL_ARG(out),
                    ND_OCL_ARG(inp),
                    ND_OCL_ARG(r->T),
                    ND_OCL_ARG(r->H),
                    ND_OCL_ARG(r->hs),
                    ND_OCL_ARG(r->rope.theta),
                    ND_OCL_ARG(r->rope.factor),
                    ND_OCL_ARG(r->rope.low),
                    ND_OCL_ARG(r->rope.high),
                    ND_OCL_ARG(r->rope.context),
                    ND_OCL_ARG(sign)};
  return nd_ocl_run(ND_OCL_rope, 2, g, 11, a);
}

static int rope_fwd(const nd_kcall *c) { return rope(c, 1.0f); }
static int rope_bwd(const nd_kcall *c) { return rope(c, -1.0f); }

static int swiglu_fwd(const nd_kcall *c) {
  size_t n = (size_t)c->task->a.ew.n;
  cl_mem out = M(0), gate = M(1), up = M(2);
  nd_ocl_arg a[] = {ND_OCL_ARG(out), ND_OCL_ARG(gate), ND_OCL_ARG(up)};
  return nd_ocl_run(ND_OCL_swiglu_fwd, 1, &n, 3, a);
}

static int swiglu_bwd(const nd_kcall *c) {
  size_t n = (size_t)c->task->a.ew.n;
  cl_mem dg = M(0), du = M(1), gate = M(2), up = M(3), dout = M(4);
  nd_ocl_arg a[] = {ND_OCL_ARG(dg), ND_OCL_ARG(du), ND_OCL_ARG(gate), ND_OCL_ARG(up), ND_OCL_ARG(dout)};
  return nd_ocl_run(ND_OCL_swiglu_bwd, 1, &n, 5, a);
}

/* train.precision bf16's GEMMs, casts and bf16 writers have no OpenCL
 * kernels: they run on the CPU workers (docs/precision.md) */
static int supports(const nd_task *t) { return !t->bf16 && nd__device_supports(t); }

static void *queue(int *device) {
  cl_command_queue q;
  *device = nd__device_worker();
  starpu_opencl_get_queue(*device, &q);
  return q;
}

static void configure(struct starpu_conf *conf, int n, long spare_cores) {
  conf->nopencl = n;
  /* a CPU-type device runs on threads of its own: give it the cores the
   * CPU workers leave (at least one each), unless the user chose */
  char threads[24];
  snprintf(threads, sizeof threads, "%ld", spare_cores >= n ? spare_cores / n : 1);
  setenv("POCL_MAX_PTHREAD_COUNT", threads, 0);
}

static void attach(struct starpu_codelet *cl, nd_worker_fn fn) { cl->opencl_funcs[0] = fn; }

static void *buffer_data(void *buffer) { return (void *)STARPU_VECTOR_GET_DEV_HANDLE(buffer); }

const nd_backend_ops nd__opencl_backend = {
    .device = ND_BACKEND_OPENCL,
    .worker_type = STARPU_OPENCL_WORKER,
    .configure = configure,
    .shares_cores = 1, /* PoCL's threads */
    .missing_hint = "is an OpenCL platform such as PoCL installed? clinfo lists them",
    .attach = attach,
    .buffer_data = buffer_data,
    .start = nd_ocl_load,
    .stop = nd_ocl_unload,
    .queue = queue,
    .supports = supports,
    .impl = {ND_DEVICE_IMPLS, [ND_TASK_RMSNORM_FWD] = rmsnorm_fwd, [ND_TASK_RMSNORM_BWD_IN] = rmsnorm_bwd_input,
             [ND_TASK_RMSNORM_BWD_W] = rmsnorm_bwd_weight, [ND_TASK_ROPE_FWD] = rope_fwd, [ND_TASK_ROPE_BWD] = rope_bwd,
             [ND_TASK_SWIGLU_FWD] = swiglu_fwd, [ND_TASK_SWIGLU_BWD] = swiglu_bwd, [ND_TASK_GQA_FWD] = gqa_fwd,
             [ND_TASK_GQA_BWD] = gqa_bwd},
    .declined = {ND_DEVICE_DECLINED,
                 [ND_TASK_CAST_BF16] = "train.precision bf16 runs on the CPU workers for now (docs/precision.md)",
                 [ND_TASK_GRAD_SUMSQ] = "a sum in double, and OpenCL devices need not have fp64 (cl_khr_fp64)",
                 [ND_TASK_KV_ATTN] = "generation runs on CPU workers and CUDA devices",
                 [ND_TASK_KV_GQA] = "generation runs on CPU workers and CUDA devices",
                 [ND_TASK_POS_ADD] = "generation runs on CPU workers and CUDA devices", ND_RING_DECLINED},
    .check_call = nd_ocl_check_call,
};
