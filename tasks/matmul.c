/* Linear layers: forward, input gradient (B) and weight gradient (W), run by
 * the implementation the kernel table selects (built-in: CBLAS). */
#include "tasks/codelets.h"

#ifdef ND_HAVE_OPENCL
static void matmul_fwd_ocl(void *buffers[], void *arg) {
  const struct nd_mm_args *m = &ND_CTX(arg)->task->a.mm;
  ND_OCL_CHECK(ND_TASK_MATMUL_FWD, nd_ocl_matmul_forward(ND_MEM(0), ND_MEM(1), ND_MEM(2), m->has_bias ? ND_MEM(3) : NULL,
                                                        m->M, m->K, m->N, m->trans_w));
}
static void matmul_bwd_in_ocl(void *buffers[], void *arg) {
  const struct nd_mm_args *m = &ND_CTX(arg)->task->a.mm;
  ND_OCL_CHECK(ND_TASK_MATMUL_BWD_IN,
               nd_ocl_matmul_backward_input(ND_MEM(0), ND_MEM(1), ND_MEM(2), m->M, m->K, m->N, m->trans_w, m->beta));
}
static void matmul_bwd_w_ocl(void *buffers[], void *arg) {
  const struct nd_mm_args *m = &ND_CTX(arg)->task->a.mm;
  int hb = m->has_bias;
  ND_OCL_CHECK(ND_TASK_MATMUL_BWD_W, nd_ocl_matmul_backward_weight(ND_MEM(0), hb ? ND_MEM(1) : NULL, ND_MEM(1 + hb),
                                                                  ND_MEM(2 + hb), m->M, m->K, m->N, m->trans_w,
                                                                  m->beta));
}
#endif

/* buffers: out (M, N), inp (M, K), weight, [bias (N)] */
ND_CODELET_OCL(matmul_fwd, nd__dispatch_cpu, matmul_fwd_ocl);

/* buffers: dinp (M, K), dout (M, N), weight */
ND_CODELET_OCL(matmul_bwd_in, nd__dispatch_cpu, matmul_bwd_in_ocl);

/* buffers: dweight, [dbias (N)], dout (M, N), inp (M, K) */
ND_CODELET_OCL(matmul_bwd_w, nd__dispatch_cpu, matmul_bwd_w_ocl);
