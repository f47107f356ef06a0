/* Internal: the OpenCL backend's kernels. OpenCL C kernels (kernels.cl,
 * embedded at build time) are compiled once per device when StarPU starts,
 * through StarPU's program loader; GEMMs go to CLBlast. Every function runs
 * on the calling StarPU OpenCL worker's queue and returns when the device is
 * done (0, or an OpenCL / CLBlast error code). Buffers are whole cl_mem
 * objects (StarPU gives each vector its own, at offset 0). */
#ifndef ND_KERNELS_OPENCL_OPENCL_H
#define ND_KERNELS_OPENCL_OPENCL_H

#include "ndconfig.h"

#ifdef ND_HAVE_OPENCL
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>

#include "common/error.h"
#include "ndgraph/kernel.h"

/* X-macro: the kernels of kernels.cl (clang-format reflows a list of macro
 * calls differently on each pass, so it is fenced off) */
// clang-format off
#define ND_OCL_KERNELS(X)                                                                   \
  X(scale) X(bias_rows) X(colsum) X(residual) X(accumulate)                                 \
  X(gelu_fwd) X(gelu_bwd) X(ln_fwd) X(ln_bwd_in) X(ln_bwd_w)                                \
  X(att_scores) X(att_softmax) X(att_probs) X(att_out) X(att_dscores) X(att_softmax_bwd)    \
  X(att_dq) X(att_dkv) X(embed_fwd) X(embed_bwd_wte) X(embed_bwd_wpe) X(ce_stats) X(ce_lse) \
  X(ce_bwd)                                                                                 \
  X(adamw) X(rms_fwd) X(rms_bwd_in) X(rms_bwd_w) X(rope) X(swiglu_fwd) X(swiglu_bwd)
// clang-format on

enum nd_ocl_kernel {
#define ND__OCL_ENUM(name) ND_OCL_##name,
  ND_OCL_KERNELS(ND__OCL_ENUM)
#undef ND__OCL_ENUM
      ND_OCL_KERNEL_COUNT
};

/* Compiles kernels.cl for every OpenCL device StarPU started (after starpu_init). */
int nd_ocl_load(nd_error *err);
/* Releases the kernels and the program (before starpu_shutdown). */
void nd_ocl_unload(void);

/* A kernel argument: its size and where its value is. */
typedef struct nd_ocl_arg {
  size_t size;
  const void *value;
} nd_ocl_arg;
#define ND_OCL_ARG(x) ((nd_ocl_arg){sizeof(x), &(x)})

/* Runs kernel k over the global range (dims 1 to 3). */
int nd_ocl_run(enum nd_ocl_kernel k, int dims, const size_t *global, int nargs, const nd_ocl_arg *args);
/* Element-wise helpers over n floats. */
int nd_ocl_scale(cl_mem v, size_t n, float beta); /* beta 0: zeros */
int nd_ocl_copy(cl_mem dst, cl_mem src, size_t bytes);
int nd_ocl_read(void *dst, cl_mem src, size_t bytes);
/* A buffer of the calling worker's device, for scratch (NULL and *rc set on failure). */
cl_mem nd_ocl_alloc(size_t bytes, cl_int *rc);

/* Row-major C (m, n) = alpha * op(A) . op(B) + beta * C through CLBlast;
 * beta 0 overwrites (C is zeroed first, so garbage in C is never read). */
int nd_ocl_sgemm(int trans_a, int trans_b, size_t m, size_t n, size_t k, float alpha, cl_mem a, size_t lda, cl_mem b,
                 size_t ldb, float beta, cl_mem c, size_t ldc);

/* The linear layer, as kernels/cpu/kernels.h defines it. bias and dbias may be NULL. */
int nd_ocl_matmul_forward(cl_mem out, cl_mem inp, cl_mem weight, cl_mem bias, int M, int K, int N, int trans_w);
int nd_ocl_matmul_backward_input(cl_mem dinp, cl_mem dout, cl_mem weight, int M, int K, int N, int trans_w, float beta);
int nd_ocl_matmul_backward_weight(cl_mem dweight, cl_mem dbias, cl_mem dout, cl_mem inp, int M, int K, int N,
                                  int trans_w, float beta);

/* kernel-check on OpenCL (nd_backend_ops.check_call): fn on copies of the
 * host descriptors d in a context of the first OpenCL device found, outside
 * StarPU; the copies come back into d. */
int nd_ocl_check_call(nd_kernel_fn fn, nd_tensor_desc *d, int n, nd_kernel_args *a, nd_error *err);

/* The name of the OpenCL device of the calling worker, for messages. */
const char *nd_ocl_device_name(int devid);
#endif

#endif
