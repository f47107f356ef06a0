/* train.precision bf16's cast: the CUDA twin of kernels/cpu/bf16.c's
 * nd_cast_bf16, with the same function doing the rounding (common/bf16.h),
 * so a weight's bf16 copy has the CPU's bits. It also rounds a GEMM's fp32
 * operand (an output gradient, the attention output, a bias) into scratch. */
#include "kernels/cuda/common.cuh"

__global__ static void cast_bf16(nd_bf16 *out, const float *inp, int64_t n) {
  // out (n) = inp (n) rounded to nearest, ties to even
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    nd_store(&out[i], inp[i]);
}

int nd_cuda_cast_bf16(cudaStream_t s, void *out, const float *inp, int64_t n) {
  if (n <= 0) return 0;
  cast_bf16<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>((nd_bf16 *)out, inp, n);
  return nd_cuda_launched();
}
