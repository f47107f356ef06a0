/* LayerNorm: forward, input gradient (B) and weight gradient (W), run by the
 * implementation the kernel table selects. */
#include "tasks/codelets.h"

#ifdef ND_HAVE_OPENCL
static void layernorm_fwd_ocl(void *buffers[], void *arg) {
  const struct nd_ln_args *l = &ND_CTX(arg)->task->a.ln;
  cl_mem out = ND_MEM(0), mean = ND_MEM(1), rstd = ND_MEM(2), inp = ND_MEM(3), w = ND_MEM(4), b = ND_MEM(5);
  size_t n = (size_t)l->N;
  nd_ocl_arg a[] = {ND_OCL_ARG(out), ND_OCL_ARG(mean), ND_OCL_ARG(rstd), ND_OCL_ARG(inp),
                    ND_OCL_ARG(w),   ND_OCL_ARG(b),    ND_OCL_ARG(l->C)};
  ND_OCL_CHECK(ND_TASK_LN_FWD, nd_ocl_run(ND_OCL_ln_fwd, 1, &n, 7, a));
}
static void layernorm_bwd_in_ocl(void *buffers[], void *arg) {
  const struct nd_ln_args *l = &ND_CTX(arg)->task->a.ln;
  cl_mem dinp = ND_MEM(0), dout = ND_MEM(1), inp = ND_MEM(2), w = ND_MEM(3), mean = ND_MEM(4), rstd = ND_MEM(5);
  cl_mem dskip = l->has_skip ? ND_MEM(6) : dinp; /* not read without a skip */
  size_t n = (size_t)l->N;
  nd_ocl_arg a[] = {ND_OCL_ARG(dinp), ND_OCL_ARG(dskip), ND_OCL_ARG(l->has_skip), ND_OCL_ARG(dout), ND_OCL_ARG(inp),
                    ND_OCL_ARG(w),    ND_OCL_ARG(mean),  ND_OCL_ARG(rstd),        ND_OCL_ARG(l->C)};
  ND_OCL_CHECK(ND_TASK_LN_BWD_IN, nd_ocl_run(ND_OCL_ln_bwd_in, 1, &n, 9, a));
}
static void layernorm_bwd_w_ocl(void *buffers[], void *arg) {
  const struct nd_ln_args *l = &ND_CTX(arg)->task->a.ln;
  cl_mem dw = ND_MEM(0), db = ND_MEM(1), dout = ND_MEM(2), inp = ND_MEM(3), mean = ND_MEM(4), rstd = ND_MEM(5);
  size_t n = (size_t)l->C;
  nd_ocl_arg a[] = {ND_OCL_ARG(dw),   ND_OCL_ARG(db),   ND_OCL_ARG(dout), ND_OCL_ARG(inp),  ND_OCL_ARG(mean),
                    ND_OCL_ARG(rstd), ND_OCL_ARG(l->N), ND_OCL_ARG(l->C), ND_OCL_ARG(l->beta)};
  ND_OCL_CHECK(ND_TASK_LN_BWD_W, nd_ocl_run(ND_OCL_ln_bwd_w, 1, &n, 9, a));
}
#endif

/* buffers: out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C) */
ND_CODELET_OCL(layernorm_fwd, nd__dispatch_cpu, layernorm_fwd_ocl);

/* buffers: dinp (N, C), dout (N, C), inp (N, C), weight (C), mean (N), rstd (N), [dskip (N, C)] */
ND_CODELET_OCL(layernorm_bwd_in, nd__dispatch_cpu, layernorm_bwd_in_ocl);

/* buffers: dweight (C), dbias (C), dout (N, C), inp (N, C), mean (N), rstd (N) */
ND_CODELET_OCL(layernorm_bwd_w, nd__dispatch_cpu, layernorm_bwd_w_ocl);
