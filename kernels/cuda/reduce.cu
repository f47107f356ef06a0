/* Squared norms for gradient clipping: one block of 1024 threads, each
 * summing a fixed stride of x in double, then a fixed tree: the same bits
 * every run (the CPU's nd_sumsq sums in a line; equal within tolerance). */
#include "kernels/cuda/common.cuh"

__global__ static void sumsq(double *out, const float *x, int64_t n, int add) {
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += (double)x[i] * x[i];
  s = nd_block_sum(s);
  if (threadIdx.x == 0) *out = add ? *out + s : s;
}

int nd_cuda_sumsq(cudaStream_t s, double *out, const float *x, int64_t n, int add) {
  sumsq<<<1, 1024, 0, s>>>(out, x, n, add);
  return nd_cuda_launched();
}
