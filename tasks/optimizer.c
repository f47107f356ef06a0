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
ND_CODELET(adamw, adamw_cpu);
