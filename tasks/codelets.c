/* The table from IR task kinds to codelets. */
#include "tasks/codelets.h"

#include <string.h>

#include "kernels/registry.h"

void nd__dispatch_cpu(void *buffers[], void *arg) {
  const nd_task *t = ND_CTX(arg)->task;
  void *ptrs[ND__KERNEL_MAX_TENSORS];
  for (int i = 0; i < t->n_access && i < ND__KERNEL_MAX_TENSORS; i++) ptrs[i] = (void *)STARPU_VECTOR_GET_PTR(buffers[i]);
  nd_tensor_desc d[ND__KERNEL_MAX_TENSORS];
  nd_kernel_args a;
  int n = nd__kernel_layout(t, ptrs, d, &a, NULL);
  const nd__kernel_slot *k = &nd__kernels[t->kind];
  a.user = k->user;
  int rc = k->fn(d, n, &a);
  if (rc) nd__kernel_report(t->kind, rc);
}

#define ND__DECLARE(name) extern struct starpu_codelet nd__cl_##name;
#define ND__CODELETS(X)                                                                  \
  X(load_batch) X(embedding_fwd) X(embedding_bwd) X(layernorm_fwd) X(layernorm_bwd_in)  \
  X(layernorm_bwd_w) X(matmul_fwd) X(matmul_bwd_in) X(matmul_bwd_w) X(attention_fwd)    \
  X(attention_bwd) X(activation_fwd) X(activation_bwd) X(residual_fwd)                  \
  X(crossentropy_stats) X(crossentropy_combine) X(crossentropy_bwd) X(allreduce)        \
  X(sendrecv) X(grad_sumsq) X(adamw)
ND__CODELETS(ND__DECLARE)

int nd_exec_runs_on_opencl(const nd_task *t) {
  const struct starpu_codelet *cl = nd__codelet(t->kind);
  if (!cl || !cl->opencl_funcs[0]) return 0;
  /* a plugin's kernel replaces the CPU one only: the OpenCL twin would compute something else */
  const nd__kernel_slot *k = &nd__kernels[t->kind];
  if (k->fn && k->origin && strcmp(k->origin, "builtin") != 0) return 0;
  if ((t->kind == ND_TASK_ACT_FWD || t->kind == ND_TASK_ACT_BWD) && k->name && strcmp(k->name, "gelu") != 0) return 0;
  return t->kind != ND_TASK_ALLREDUCE || t->a.coll.dtype == ND_F32;
}

#ifdef ND_HAVE_OPENCL
int nd__can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl) {
  (void)nimpl;
  if (starpu_worker_get_type((int)workerid) != STARPU_OPENCL_WORKER) return 1;
  return task->cl_arg && nd_exec_runs_on_opencl(ND_CTX(task->cl_arg)->task);
}
#endif

struct starpu_codelet *nd__codelet(enum nd_task_kind kind) {
  /* in the order of ND_TASK_KINDS */
#define ND__ADDRESS(name) &nd__cl_##name,
  static struct starpu_codelet *const table[ND_TASK_KIND_COUNT] = {ND__CODELETS(ND__ADDRESS)};
#undef ND__ADDRESS
  return (unsigned)kind < ND_TASK_KIND_COUNT ? table[kind] : NULL;
}
