/* Internal to the .cu files of kernels/cuda: launch geometry, block
 * reductions, errors, the bf16 store. */
#ifndef ND_KERNELS_CUDA_COMMON_CUH
#define ND_KERNELS_CUDA_COMMON_CUH

#include "kernels/cuda/kernels.h"

#define ND_BF16_FN __host__ __device__ static inline /* common/bf16.h's rounding on the device */
#include "common/bf16.h"

#define ND_CUDA_THREADS 256

/* blocks for n elements, one per thread, capped (kernels grid-stride) */
static inline unsigned nd_cuda_blocks(int64_t n) {
  int64_t b = (n + ND_CUDA_THREADS - 1) / ND_CUDA_THREADS;
  return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

/* the launch's error (0: none); the kernel itself runs later, on the stream */
static inline int nd_cuda_launched(void) { return (int)cudaGetLastError(); }

/* Block-wide sum of v over blockDim.x (a multiple of 32, at most 1024)
 * threads; every thread gets the total. Fixed tree order: reproducible. */
template <typename T> __device__ T nd_block_sum(T v) {
  __shared__ T part[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads(); /* part[] may still be read by a previous call */
  if (lane == 0) part[warp] = v;
  __syncthreads();
  T t = lane < (int)(blockDim.x >> 5) ? part[lane] : (T)0;
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
  return t;
}

template <typename T> __device__ T nd_block_max(T v) {
  __shared__ T part[32];
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  T t = lane < (int)(blockDim.x >> 5) ? part[lane] : part[0];
  for (int o = 16; o > 0; o >>= 1) t = max(t, __shfl_xor_sync(0xffffffffu, t, o));
  return t;
}

/* A kernel's store of a value computed in fp32: as it is, or (train.precision
 * bf16, an output only GEMMs read) rounded as the CPU rounds it. Kernels that
 * write either are templates on the output type. */
__device__ static inline void nd_store(float *p, float v) { *p = v; }
__device__ static inline void nd_store(nd_bf16 *p, float v) { *p = nd_bf16_from_f32(v); }

#endif
