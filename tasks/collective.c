/* Collectives as tasks. The CPU algorithm of the all-reduce is a sum in rank
 * order into the first part followed by copies: deterministic, whatever the
 * schedule. The interface is the IR's (a group and its buffers), so a GPU
 * backend can map the same task onto NCCL, one task per rank. */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "kernels/registry.h"
#include "tasks/codelets.h"

/* buffers: the n parts, each read and written */
static void allreduce_cpu(void *buffers[], void *arg) {
  const struct nd_coll_args *a = &ND_CTX(arg)->task->a.coll;
  if (a->dtype == ND_F64) {
    double *out = ND_F64(0);
    for (int p = 1; p < a->nparts; p++)
      for (int64_t i = 0; i < a->n; i++) out[i] += ND_F64(p)[i];
  } else {
    /* as many parts as the group has ranks: no fixed bound */
    const float **parts = malloc((size_t)a->nparts * sizeof *parts);
    if (!parts) {
      nd__kernel_report(ND_TASK_ALLREDUCE, ND_ENOMEM);
      return;
    }
    for (int p = 0; p < a->nparts; p++) parts[p] = ND_F32(p);
    nd_sum_ordered(ND_F32(0), parts, a->nparts, a->n);
    free(parts);
  }
  size_t bytes = (size_t)a->n * (a->dtype == ND_F64 ? 8 : 4);
  for (int p = 1; p < a->nparts; p++) memcpy((void *)STARPU_VECTOR_GET_PTR(buffers[p]), (void *)STARPU_VECTOR_GET_PTR(buffers[0]), bytes);
}
#ifdef ND_HAVE_OPENCL
/* f32 only (nd_exec_runs_on_opencl): the same rank-ordered sum, then copies */
static void allreduce_ocl(void *buffers[], void *arg) {
  const struct nd_coll_args *a = &ND_CTX(arg)->task->a.coll;
  size_t n = (size_t)a->n;
  cl_mem out = ND_MEM(0);
  int rc = 0;
  for (int p = 1; p < a->nparts && !rc; p++) {
    cl_mem part = ND_MEM(p);
    nd_ocl_arg args[] = {ND_OCL_ARG(out), ND_OCL_ARG(part)};
    rc = nd_ocl_run(ND_OCL_accumulate, 1, &n, 2, args);
  }
  for (int p = 1; p < a->nparts && !rc; p++) rc = nd_ocl_copy(ND_MEM(p), out, n * sizeof(float));
  ND_OCL_CHECK(ND_TASK_ALLREDUCE, rc);
}
#endif
ND_CODELET_OCL(allreduce, allreduce_cpu, allreduce_ocl);

/* buffers: source, destination (the next or previous pipeline stage) */
static void sendrecv_cpu(void *buffers[], void *arg) {
  memcpy(ND_F32(1), ND_F32(0), (size_t)ND_CTX(arg)->task->a.ew.n * sizeof(float));
}
#ifdef ND_HAVE_OPENCL
static void sendrecv_ocl(void *buffers[], void *arg) {
  ND_OCL_CHECK(ND_TASK_SENDRECV, nd_ocl_copy(ND_MEM(1), ND_MEM(0), (size_t)ND_CTX(arg)->task->a.ew.n * sizeof(float)));
}
#endif
ND_CODELET_OCL(sendrecv, sendrecv_cpu, sendrecv_ocl);
