/* The residual add. Its backward is the identity, expressed by the graph. */
#include "tasks/codelets.h"

#ifdef ND_HAVE_OPENCL
static void residual_fwd_ocl(void *buffers[], void *arg) {
  size_t n = (size_t)ND_CTX(arg)->task->a.ew.n;
  cl_mem out = ND_MEM(0), a = ND_MEM(1), b = ND_MEM(2);
  nd_ocl_arg args[] = {ND_OCL_ARG(out), ND_OCL_ARG(a), ND_OCL_ARG(b)};
  ND_OCL_CHECK(ND_TASK_RESIDUAL_FWD, nd_ocl_run(ND_OCL_residual, 1, &n, 3, args));
}
#endif

/* buffers: out (n), a (n), b (n) */
ND_CODELET_OCL(residual_fwd, nd__dispatch_cpu, residual_fwd_ocl);
