/* GEMMs on OpenCL through CLBlast, and the linear layer built on them. */
#include "kernels/opencl/opencl.h"

#ifdef ND_HAVE_OPENCL
#include <clblast_c.h>
#include <starpu.h>

int nd_ocl_sgemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, cl_mem a, size_t lda, cl_mem b,
                 size_t ldb, float beta, cl_mem c, size_t ldc) {
  if (m == 0 || n == 0) return 0;
  if (beta == 0.0f) {
    /* CLBlast computes beta * C: a NaN left in a fresh device buffer would survive */
    int rc = nd_ocl_scale(c, m * ldc, 0.0f);
    if (rc) return rc;
  }
  if (k == 0) return beta == 0.0f ? 0 : nd_ocl_scale(c, m * ldc, beta);
  cl_command_queue queue;
  starpu_opencl_get_queue(starpu_worker_get_devid(starpu_worker_get_id()), &queue);
  cl_event ev = NULL;
  CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
                                      trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha, a, 0, lda, b,
                                      0, ldb, beta, c, 0, ldc, &queue, &ev);
  if (st != CLBlastSuccess) return st;
  cl_int rc = clWaitForEvents(1, &ev);
  clReleaseEvent(ev);
  return rc;
}

int nd_ocl_matmul_forward(cl_mem out, cl_mem inp, cl_mem weight, cl_mem bias, int M, int K, int N, int trans_w) {
  // out (M, N), inp (M, K), weight (K, N) or (N, K) if trans_w, bias (N) or NULL
  float beta = 0.0f;
  if (bias) {
    size_t n = (size_t)M * N;
    nd_ocl_arg a[] = {ND_OCL_ARG(out), ND_OCL_ARG(bias), ND_OCL_ARG(N)};
    int rc = nd_ocl_run(ND_OCL_bias_rows, 1, &n, 3, a);
    if (rc) return rc;
    beta = 1.0f;
  }
  return nd_ocl_sgemm(0, trans_w, (size_t)M, (size_t)N, (size_t)K, 1.0f, inp, (size_t)K, weight,
                      (size_t)(trans_w ? K : N), beta, out, (size_t)N);
}

int nd_ocl_matmul_backward_input(cl_mem dinp, cl_mem dout, cl_mem weight, int M, int K, int N, int trans_w,
                                 float beta) {
  // dinp (M, K) = beta * dinp + dout (M, N) . W^T
  return nd_ocl_sgemm(0, !trans_w, (size_t)M, (size_t)K, (size_t)N, 1.0f, dout, (size_t)N, weight,
                      (size_t)(trans_w ? K : N), beta, dinp, (size_t)K);
}

int nd_ocl_matmul_backward_weight(cl_mem dweight, cl_mem dbias, cl_mem dout, cl_mem inp, int M, int K, int N,
                                  int trans_w, float beta) {
  // dweight (K, N) = inp^T . dout, or (N, K) = dout^T . inp if trans_w; dbias (N) = column sums of dout
  int rc = trans_w ? nd_ocl_sgemm(1, 0, (size_t)N, (size_t)K, (size_t)M, 1.0f, dout, (size_t)N, inp, (size_t)K, beta,
                                  dweight, (size_t)K)
                   : nd_ocl_sgemm(1, 0, (size_t)K, (size_t)N, (size_t)M, 1.0f, inp, (size_t)K, dout, (size_t)N, beta,
                                  dweight, (size_t)N);
  if (rc || !dbias) return rc;
  size_t n = (size_t)N;
  nd_ocl_arg a[] = {ND_OCL_ARG(dbias), ND_OCL_ARG(dout), ND_OCL_ARG(M), ND_OCL_ARG(N), ND_OCL_ARG(beta)};
  return nd_ocl_run(ND_OCL_colsum, 1, &n, 5, a);
}
#endif
