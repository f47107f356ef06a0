/* The table from IR task kinds to codelets. */
#include "tasks/codelets.h"

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

struct starpu_codelet *nd__codelet(enum nd_task_kind kind) {
  /* in the order of ND_TASK_KINDS */
#define ND__ADDRESS(name) &nd__cl_##name,
  static struct starpu_codelet *const table[ND_TASK_KIND_COUNT] = {ND__CODELETS(ND__ADDRESS)};
#undef ND__ADDRESS
  return (unsigned)kind < ND_TASK_KIND_COUNT ? table[kind] : NULL;
}
