/* The generic codelet of every task kind: StarPU buffers to descriptors, then
 * the implementation the run's kernel table selected for the worker's
 * backend. Built from the kind table (graph/kinds.c) at the first start. */
#include "tasks/codelets.h"

#include <pthread.h>
#include <stdio.h>

#include "kernels/guard.h"

/* The task's buffers on backend dev as descriptors, and the call. */
void nd__codelet_call(void *buffers[], const nd__task_ctx *c, int dev) {
  const nd_task *t = c->task;
  /* A step whose data could not be read (nd_dataset_read) is not applied:
   * every load_batch precedes every update (they read the global gradient
   * norm), so the parameters and Adam's moments stay those of the steps
   * done, which the run can still save. */
  if (t->kind == ND_TASK_ADAMW && c->step && c->step->data && nd_dataset_failed(c->step->data)) return;
  const nd_backend_ops *ops = nd__backend(dev);
  int n = t->n_access;
  void *ptr[n + 1];
  int64_t count[n + 1];
  uint8_t bf16[n + 1];
  const nd_access *acc = c->graph ? nd_task_access(c->graph, t) : NULL;
  for (int i = 0; i < n; i++) {
    ptr[i] = ops->buffer_data(buffers[i]);
    count[i] = (int64_t)STARPU_VECTOR_GET_NX(buffers[i]);
    bf16[i] = t->bf16 && acc && c->graph->tensors[acc[i].tensor].dtype == ND_BF16;
  }
  nd_tensor_desc d[nd__layout_max(t)];
  nd_kcall call = {d, 0, t, c->graph, c->step, acc, {0}};
  call.n = nd__kernel_layout(t, ptr, count, bf16, d, &call.a, NULL);
  const nd__kernel_slot *s = nd__kernels_slot(c->kernels, dev, t->kind);
  if (ops->queue) call.a.queue = ops->queue(&call.a.device);
  call.a.user = s->user;
  nd__guard_enter(s, t->kind);
  int rc = s->impl ? s->impl(&call) : s->fn(d, call.n, &call.a);
  nd__guard_leave();
  if (rc) nd__kernel_report(c->kernels, t->kind, dev, rc);
}

static void run_cpu(void *buffers[], void *arg) { nd__codelet_call(buffers, arg, ND_BACKEND_CPU); }
/* on a device worker: its backend's buffers */
static void run_device(void *buffers[], void *arg) {
  nd__codelet_call(buffers, arg, nd__worker_backend(starpu_worker_get_id_check()));
}

int nd__codelet_runs(const nd__task_ctx *c, int dev) { return nd__kernels_runs(c->kernels, dev, c->task); }

/* A worker runs a task when its backend has an implementation selected for the task's kind. */
static int can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl) {
  (void)nimpl;
  const nd__task_ctx *c = task->cl_arg;
  return c && nd__codelet_runs(c, nd__worker_backend((int)workerid));
}

static struct starpu_perfmodel models[ND_TASK_KIND_COUNT];
static struct starpu_codelet codelets[ND_TASK_KIND_COUNT];
static char symbols[ND_TASK_KIND_COUNT][48];

/* A history-based performance model per kind (StarPU keeps one history per
 * architecture, so CPU workers and each device kind are calibrated apart). */
static void build(void) {
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++) {
    const char *name = nd_task_kind_name((enum nd_task_kind)k);
    snprintf(symbols[k], sizeof symbols[k], "ndgraph_%s", name);
    models[k] = (struct starpu_perfmodel){.type = STARPU_HISTORY_BASED, .symbol = symbols[k]};
    struct starpu_codelet *cl = &codelets[k];
    starpu_codelet_init(cl);
    cl->cpu_funcs[0] = run_cpu;
    cl->cpu_funcs_name[0] = "run_cpu";
    for (int b = 0; b < ND_BACKEND_COUNT; b++)
      if (nd__backend(b) && nd__backend(b)->attach) nd__backend(b)->attach(cl, run_device);
    cl->can_execute = can_execute;
    cl->nbuffers = STARPU_VARIABLE_NBUFFERS;
    cl->model = &models[k];
    cl->name = name;
  }
}

struct starpu_codelet *nd__codelet(enum nd_task_kind kind) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, build);
  return (unsigned)kind < ND_TASK_KIND_COUNT ? &codelets[kind] : NULL;
}
