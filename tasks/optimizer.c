/* The optimizer: a rank's share of the squared gradient norm, and AdamW with
 * the clipping factor taken from the global norm. */
#include <math.h>

#include "kernels/cpu/kernels.h"
#include "tasks/codelets.h"

/* buffers: normsq (1, f64), then the rank's primary gradients */
static void grad_sumsq_cpu(void *buffers[], void *arg) {
  const nd__task_ctx *c = ND_CTX(arg);
  const nd_access *acc = nd_task_access(c->graph, c->task);
  double sum = 0.0;
  for (int p = 1; p < c->task->n_access; p++)
    sum += nd_sumsq(ND_F32(p), c->graph->tensors[acc[p].tensor].bytes / 4);
  *ND_F64(0) = sum;
}
ND_CODELET(grad_sumsq, grad_sumsq_cpu);

/* buffers: param, m, v, grad (n each), normsq (1, f64) of the whole model */
static void adamw_cpu(void *buffers[], void *arg) {
  const nd__task_ctx *c = ND_CTX(arg);
  const struct nd_adamw_args *a = &c->task->a.adamw;
  const nd_step *s = c->step;
  float scale = nd_clip_scale(sqrt(*ND_F64(4)), s->grad_clip);
  nd_adamw(ND_F32(0), ND_F32(1), ND_F32(2), ND_F32(3), a->n, s->lr, s->beta1, s->beta2, s->eps,
           a->decay ? s->weight_decay : 0.0f, scale, s->adam_t);
}
#ifdef ND_HAVE_OPENCL
static void adamw_ocl(void *buffers[], void *arg) {
  const nd__task_ctx *c = ND_CTX(arg);
  const struct nd_adamw_args *a = &c->task->a.adamw;
  const nd_step *s = c->step;
  double normsq = 0;
  int rc = nd_ocl_read(&normsq, ND_MEM(4), sizeof normsq);
  float scale = nd_clip_scale(sqrt(normsq), s->grad_clip), wd = a->decay ? s->weight_decay : 0.0f;
  float c1 = (float)(1.0 / (1.0 - pow(s->beta1, s->adam_t))), c2 = (float)(1.0 / (1.0 - pow(s->beta2, s->adam_t)));
  cl_mem p = ND_MEM(0), m = ND_MEM(1), v = ND_MEM(2), g = ND_MEM(3);
  size_t n = (size_t)a->n;
  nd_ocl_arg args[] = {ND_OCL_ARG(p),     ND_OCL_ARG(m),     ND_OCL_ARG(v),      ND_OCL_ARG(g),
                       ND_OCL_ARG(s->lr), ND_OCL_ARG(s->beta1), ND_OCL_ARG(s->beta2), ND_OCL_ARG(s->eps),
                       ND_OCL_ARG(wd),    ND_OCL_ARG(scale), ND_OCL_ARG(c1),     ND_OCL_ARG(c2)};
  if (!rc) rc = nd_ocl_run(ND_OCL_adamw, 1, &n, 12, args);
  ND_OCL_CHECK(ND_TASK_ADAMW, rc);
}
#endif
ND_CODELET_OCL(adamw, adamw_cpu, adamw_ocl);
