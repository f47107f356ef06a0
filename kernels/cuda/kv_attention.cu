/* Generation's attention over a key/value cache: the CUDA twin of
 * kernels/cpu/kv_attention.c (same arguments plus the stream). The new
 * tokens' keys and values go into the cache first (one thread an element),
 * then one thread per (new token, head) runs its softmax over the cache in
 * one pass (running maximum), writing its output row as it goes. */
#define ND_ROPE_FN __host__ __device__ static inline /* common/rope.h's frequencies on the device */
#include "common/rope.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/kernels.h"

/* element i of head x (hs elements) rotated at position t, or x[i] without rotary */
__device__ static float rotated(const float *x, int i, int hs, int t, nd_rope r, int rotary) {
  if (!rotary) return x[i];
  const int half = hs / 2, j = i < half ? i : i - half;
  float ang = (float)t * nd_rope_inv_freq(r, j, hs), c = cosf(ang), s = sinf(ang);
  return i < half ? x[i] * c - x[i + half] * s : x[i] * c + x[i - half] * s;
}

__global__ static void store(float *kc, float *vc, const float *k, const float *v, int kvstride, int T, int pos,
                             int NKV, int hs, nd_rope r, int rotary) {
  const int64_t n = (int64_t)T * NKV * hs;
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n; p += (int64_t)gridDim.x * blockDim.x) {
    int d = (int)(p % hs), g = (int)(p / hs % NKV), i = (int)(p / ((int64_t)hs * NKV));
    size_t at = ((size_t)(pos + i) * NKV + g) * hs + d, from = (size_t)i * kvstride + (size_t)g * hs;
    kc[at] = rotated(k + from, d, hs, pos + i, r, rotary);
    vc[at] = v[from + d];
  }
}

__global__ static void attend(float *out, const float *kc, const float *vc, const float *q, int qstride, int T,
                              int pos, int NH, int NKV, int hs, nd_rope r, int rotary) {
  const int64_t n = (int64_t)T * NH;
  const float scale = 1.0f / sqrtf((float)hs);
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n; p += (int64_t)gridDim.x * blockDim.x) {
    int h = (int)(p % NH), i = (int)(p / NH), g = h / (NH / NKV);
    const float *qi = q + (size_t)i * qstride + (size_t)h * hs;
    float *o = out + ((size_t)i * NH + h) * hs, max = -INFINITY, sum = 0.0f;
    for (int d = 0; d < hs; d++) o[d] = 0.0f;
    for (int j = 0; j <= pos + i; j++) {
      const float *kj = kc + ((size_t)j * NKV + g) * hs, *vj = vc + ((size_t)j * NKV + g) * hs;
      float s = 0.0f;
      for (int d = 0; d < hs; d++) s += rotated(qi, d, hs, pos + i, r, rotary) * kj[d];
      s *= scale;
      /* rescale what was summed when the maximum grows */
      float m = fmaxf(max, s), old = expf(max - m), w = expf(s - m);
      sum = sum * old + w;
      for (int d = 0; d < hs; d++) o[d] = o[d] * old + w * vj[d];
      max = m;
    }
    for (int d = 0; d < hs; d++) o[d] /= sum;
  }
}

int nd_cuda_kv_attention(cudaStream_t s, float *out, float *kcache, float *vcache, const float *q, const float *k,
                         const float *v, int qstride, int kvstride, int T, int pos, int NH, int NKV, int hs,
                         const nd_rope *rope) {
  nd_rope r = rope ? *rope : nd_rope{0, 1, 1, 4, 8192};
  const int64_t kv = (int64_t)T * NKV * hs, heads = (int64_t)T * NH;
  if (kv == 0) return 0;
  store<<<nd_cuda_blocks(kv), ND_CUDA_THREADS, 0, s>>>(kcache, vcache, k, v, kvstride, T, pos, NKV, hs, r, rope != 0);
  int rc = nd_cuda_launched();
  if (rc) return rc;
  attend<<<nd_cuda_blocks(heads), ND_CUDA_THREADS, 0, s>>>(out, kcache, vcache, q, qstride, T, pos, NH, NKV, hs, r,
                                                            rope != 0);
  return nd_cuda_launched();
}
