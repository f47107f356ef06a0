/* Rotary position embedding, Hugging Face's rotate_half convention: the CUDA
 * twin of kernels/cpu/rope.c, inv_freq and the angle in single precision as
 * there (precise powf/cosf/sinf: nvcc is not given --use_fast_math). */
#define ND_ROPE_FN __host__ __device__ static inline /* common/rope.h's frequencies on the device */
#include "common/rope.h"
#include "kernels/cuda/common.cuh"

__global__ static void rotate(float *out, const float *inp, int64_t pairs, int T, int H, int hs, nd_rope rope,
                              float sign) {
  // out, inp (B, T, H, hs); one thread per (row of B*T*H, i < hs/2) pair; sign -1 is the backward
  const int half = hs / 2;
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < pairs; p += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = p / half;
    int i = (int)(p % half), t = (int)(r / H % T);
    float inv_freq = nd_rope_inv_freq(rope, i, hs);
    float ang = (float)t * inv_freq, c = cosf(ang), s = sign * sinf(ang);
    const float *x = inp + r * hs;
    float x0 = x[i], x1 = x[i + half];
    out[r * hs + i] = x0 * c - x1 * s;
    out[r * hs + i + half] = x1 * c + x0 * s;
  }
}

static int launch(cudaStream_t s, float *out, const float *inp, int B, int T, int H, int hs, nd_rope rope, float sign) {
  const int64_t pairs = (int64_t)B * T * H * (hs / 2);
  if (pairs == 0) return 0;
  rotate<<<nd_cuda_blocks(pairs), ND_CUDA_THREADS, 0, s>>>(out, inp, pairs, T, H, hs, rope, sign);
  return nd_cuda_launched();
}

int nd_cuda_rope_forward(cudaStream_t s, float *out, const float *inp, int B, int T, int H, int hs, nd_rope rope) {
  return launch(s, out, inp, B, T, H, hs, rope, 1.0f);
}

int nd_cuda_rope_backward(cudaStream_t s, float *dinp, const float *dout, int B, int T, int H, int hs, nd_rope rope) {
  return launch(s, dinp, dout, B, T, H, hs, rope, -1.0f);
}
