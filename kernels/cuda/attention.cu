/* Causal self-attention, grouped-query when NKV < NH (each key and value
 * head serves group = NH / NKV query heads): per batch element and per query
 * head g of a group, the GEMMs of the heads g, g + group, ... as one strided
 * batch of cuBLAS calls over the NKV key/value heads, on strided views of q,
 * k, v; the masked softmax and its backward as row kernels. GPT-2's fused qkv
 * is the case NKV = NH (group 1: one batch over all heads). The CUDA twin of
 * kernels/cpu/attention.c, whose order it keeps where heads add into one key
 * or value gradient (the group's first query head overwrites, the rest add in
 * turn). */
#include <math.h>

#include "kernels/cuda/common.cuh"

__global__ static void causal_softmax(float *att, int T) {
  // one row t of a (T, T) block of att (B*NH blocks): columns 0..t softmax, the rest 0
  float *row = att + (int64_t)blockIdx.x * T;
  int t = blockIdx.x % T;
  float mx = -INFINITY;
  for (int u = threadIdx.x; u <= t; u += blockDim.x) mx = fmaxf(mx, row[u]);
  mx = nd_block_max(mx);
  float sum = 0.0f;
  for (int u = threadIdx.x; u <= t; u += blockDim.x) sum += expf(row[u] - mx);
  float inv = 1.0f / nd_block_sum(sum);
  for (int u = threadIdx.x; u < T; u += blockDim.x) row[u] = u <= t ? expf(row[u] - mx) * inv : 0.0f;
}

__global__ static void softmax_bwd(float *datt, const float *att, int T) {
  // one row: datt = att * (datt - sum(att * datt)), masked to 0
  const float *a = att + (int64_t)blockIdx.x * T;
  float *d = datt + (int64_t)blockIdx.x * T;
  int t = blockIdx.x % T;
  float dot = 0.0f;
  for (int u = threadIdx.x; u <= t; u += blockDim.x) dot += a[u] * d[u];
  dot = nd_block_sum(dot);
  for (int u = threadIdx.x; u < T; u += blockDim.x) d[u] = u <= t ? a[u] * (d[u] - dot) : 0.0f;
}

/* Row-major strided batch over the NH heads of one batch element. */
static int heads(cublasHandle_t h, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 long long sa, const float *B, int ldb, long long sb, float beta, float *C, int ldc, long long sc,
                 int NH) {
  return (int)cublasSgemmStridedBatched(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
                                        &alpha, B, ldb, sb, A, lda, sa, &beta, C, ldc, sc, NH);
}

static unsigned row_threads(int T) { return T >= 256 ? 256 : 32 * ((T + 31) / 32); }

int nd_cuda_attention_gqa_forward(cublasHandle_t h, cudaStream_t s, float *out, float *att, const float *q,
                                  const float *k, const float *v, int qs, int kvs, int B, int T, int NH, int NKV,
                                  int hs) {
  // out (B, T, C), att (B, NH, T, T); q (B, T, NH, hs) with row stride qs, k and v (B, T, NKV, hs) with kvs; C = NH hs
  const int C = NH * hs, group = NH / NKV;
  const float scale = 1.0f / sqrtf((float)hs);
  const long long TT = (long long)T * T, gTT = group * TT, ghs = (long long)group * hs;
  if (T <= 0 || hs <= 0 || B <= 0) return 0;
  for (int b = 0; b < B; b++)
    for (int g = 0; g < group; g++) {
      const float *qg = q + (int64_t)b * T * qs + g * hs, *kb = k + (int64_t)b * T * kvs;
      int rc = heads(h, 0, 1, T, T, hs, scale, qg, qs, ghs, kb, kvs, hs, 0.0f, att + (b * NH + g) * TT, T, gTT, NKV);
      if (rc) return rc;
    }
  causal_softmax<<<(unsigned)(B * NH * T), row_threads(T), 0, s>>>(att, T);
  if (int rc = nd_cuda_launched()) return rc;
  for (int b = 0; b < B; b++)
    for (int g = 0; g < group; g++) {
      const float *vb = v + (int64_t)b * T * kvs;
      int rc = heads(h, 0, 0, T, hs, T, 1.0f, att + (b * NH + g) * TT, T, gTT, vb, kvs, hs, 0.0f,
                     out + (int64_t)b * T * C + g * hs, C, ghs, NKV);
      if (rc) return rc;
    }
  return 0;
}

int nd_cuda_attention_gqa_backward(cublasHandle_t h, cudaStream_t s, float *dq, float *dk, float *dv, float *datt,
                                   const float *dout, const float *q, const float *k, const float *v, const float *att,
                                   int qs, int kvs, int B, int T, int NH, int NKV, int hs) {
  // dq, dk, dv overwritten, strides as q, k, v; datt (B, NH, T, T) scratch; dout (B, T, C);
  // q, k, v, att as the forward's; C = NH hs
  const int C = NH * hs, group = NH / NKV;
  const float scale = 1.0f / sqrtf((float)hs);
  const long long TT = (long long)T * T, gTT = group * TT, ghs = (long long)group * hs;
  if (T <= 0 || hs <= 0 || B <= 0) return 0;
  for (int b = 0; b < B; b++)
    for (int g = 0; g < group; g++) {
      const float *vb = v + (int64_t)b * T * kvs, *dy = dout + (int64_t)b * T * C + g * hs;
      const float *a = att + (b * NH + g) * TT;
      const float beta = g ? 1.0f : 0.0f; // the group's first query head overwrites
      float *dvb = dv + (int64_t)b * T * kvs, *da = datt + (b * NH + g) * TT;
      int rc = heads(h, 0, 1, T, T, hs, 1.0f, dy, C, ghs, vb, kvs, hs, 0.0f, da, T, gTT, NKV);      // datt = dout . v^T
      if (!rc) rc = heads(h, 1, 0, T, hs, T, 1.0f, a, T, gTT, dy, C, ghs, beta, dvb, kvs, hs, NKV); // dv += att^T dout
      if (rc) return rc;
    }
  softmax_bwd<<<(unsigned)(B * NH * T), row_threads(T), 0, s>>>(datt, att, T);
  if (int rc = nd_cuda_launched()) return rc;
  for (int b = 0; b < B; b++)
    for (int g = 0; g < group; g++) {
      const float *qg = q + (int64_t)b * T * qs + g * hs, *kb = k + (int64_t)b * T * kvs;
      const float *da = datt + (b * NH + g) * TT;
      const float beta = g ? 1.0f : 0.0f;
      float *dqg = dq + (int64_t)b * T * qs + g * hs, *dkb = dk + (int64_t)b * T * kvs;
      int rc = heads(h, 0, 0, T, hs, T, scale, da, T, gTT, kb, kvs, hs, 0.0f, dqg, qs, ghs, NKV);      // dq = s da . k
      if (!rc) rc = heads(h, 1, 0, T, hs, T, scale, da, T, gTT, qg, qs, ghs, beta, dkb, kvs, hs, NKV); // dk += s da^T q
      if (rc) return rc;
    }
  return 0;
}

int nd_cuda_attention_forward(cublasHandle_t h, cudaStream_t s, float *out, float *att, const float *qkv, int B, int T,
                              int NH, int hs) {
  // qkv (B, T, 3C): q, k, v side by side in each row
  const int C = NH * hs;
  return nd_cuda_attention_gqa_forward(h, s, out, att, qkv, qkv + C, qkv + 2 * C, 3 * C, 3 * C, B, T, NH, NH, hs);
}

int nd_cuda_attention_backward(cublasHandle_t h, cudaStream_t s, float *dqkv, float *datt, const float *dout,
                               const float *qkv, const float *att, int B, int T, int NH, int hs) {
  const int C = NH * hs;
  return nd_cuda_attention_gqa_backward(h, s, dqkv, dqkv + C, dqkv + 2 * C, datt, dout, qkv, qkv + C, qkv + 2 * C, att,
                                        3 * C, 3 * C, B, T, NH, NH, hs);
}
