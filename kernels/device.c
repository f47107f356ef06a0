/* The glue shared by the device backends (kernels/device.h). */
#include "kernels/device.h"

#include <math.h>
#include <starpu.h>

#include "kernels/cpu/kernels.h"

int nd__device_allreduce(const nd_device_prims *d, const nd_kcall *c) {
  const struct nd_coll_args *a = &c->task->a.coll;
  int rc = 0;
  for (int p = 1; p < a->nparts && !rc; p++) rc = d->accumulate(c->t[0].data, c->t[p].data, a->n);
  for (int p = 1; p < a->nparts && !rc; p++) rc = d->copy(c->t[p].data, c->t[0].data, (size_t)a->n * sizeof(float));
  return rc;
}

int nd__device_sendrecv(const nd_device_prims *d, const nd_kcall *c) {
  return d->copy(c->t[1].data, c->t[0].data, (size_t)c->task->a.ew.n * sizeof(float));
}

int nd__device_adamw_factors(const nd_device_prims *d, const nd_kcall *c, float *clip_scale, float *weight_decay) {
  const nd_step *s = c->step;
  double normsq = 0;
  int rc = d->read(&normsq, c->t[4].data, sizeof normsq);
  *clip_scale = nd_clip_scale(sqrt(normsq), s->grad_clip);
  *weight_decay = c->task->a.adamw.decay ? s->weight_decay : 0.0f;
  return rc;
}

int nd__device_supports(const nd_task *t) {
  if (t->kind == ND_TASK_ALLREDUCE) return t->a.coll.dtype == ND_F32;
  if (t->kind == ND_TASK_SENDRECV) return t->a.send.offset == 0; /* a slice further in: on the host */
  if (t->kind == ND_TASK_CE_LSE) return t->a.ce.nshards == 1;    /* a kernel takes a fixed number of buffers */
  /* the device kernels update from the first element: a data-parallel shard further in runs on the CPU */
  if (t->kind == ND_TASK_ADAMW) return t->a.adamw.offset == 0;
  return 1;
}

int nd__device_worker(void) { return starpu_worker_get_devid(starpu_worker_get_id()); }
