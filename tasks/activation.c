/* The MLP's activation: model.activation (GeLU, tanh approximation, unless a
 * plugin adds another), through the kernel table. */
#include "tasks/codelets.h"

#ifdef ND_HAVE_OPENCL
/* the built-in GeLU only: nd__can_execute keeps a plugin's activation on the CPU */
static void activation_fwd_ocl(void *buffers[], void *arg) {
  size_t n = (size_t)ND_CTX(arg)->task->a.ew.n;
  cl_mem out = ND_MEM(0), inp = ND_MEM(1);
  nd_ocl_arg a[] = {ND_OCL_ARG(out), ND_OCL_ARG(inp)};
  ND_OCL_CHECK(ND_TASK_ACT_FWD, nd_ocl_run(ND_OCL_gelu_fwd, 1, &n, 2, a));
}
static void activation_bwd_ocl(void *buffers[], void *arg) {
  size_t n = (size_t)ND_CTX(arg)->task->a.ew.n;
  cl_mem dinp = ND_MEM(0), inp = ND_MEM(1), dout = ND_MEM(2);
  nd_ocl_arg a[] = {ND_OCL_ARG(dinp), ND_OCL_ARG(inp), ND_OCL_ARG(dout)};
  ND_OCL_CHECK(ND_TASK_ACT_BWD, nd_ocl_run(ND_OCL_gelu_bwd, 1, &n, 3, a));
}
#endif

/* buffers: out (n), inp (n) */
ND_CODELET_OCL(activation_fwd, nd__dispatch_cpu, activation_fwd_ocl);

/* buffers: dinp (n), inp (n), dout (n) */
ND_CODELET_OCL(activation_bwd, nd__dispatch_cpu, activation_bwd_ocl);
