/* Causal self-attention: per batch, the heads' GEMMs as one strided batch
 * of cuBLAS calls on strided views of qkv, the masked softmax and its
 * backward as row kernels. The CUDA twin of kernels/cpu/attention.c. */
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

int nd_cuda_attention_forward(cublasHandle_t h, cudaStream_t s, float *out, float *att, const float *qkv, int B,
                              int T, int NH, int hs) {
  // out (B, T, C), att (B, NH, T, T), qkv (B, T, 3C), C = NH hs
  const int C = NH * hs, C3 = 3 * C;
  const float scale = 1.0f / sqrtf((float)hs);
  const long long TT = (long long)T * T;
  if (T <= 0 || hs <= 0 || B <= 0) return 0;
  for (int b = 0; b < B; b++) {
    const float *q = qkv + (int64_t)b * T * C3, *k = q + C;
    int rc = heads(h, 0, 1, T, T, hs, scale, q, C3, hs, k, C3, hs, 0.0f, att + b * NH * TT, T, TT, NH);
    if (rc) return rc;
  }
  causal_softmax<<<(unsigned)(B * NH * T), row_threads(T), 0, s>>>(att, T);
  if (int rc = nd_cuda_launched()) return rc;
  for (int b = 0; b < B; b++) {
    const float *v = qkv + (int64_t)b * T * C3 + 2 * C;
    int rc = heads(h, 0, 0, T, hs, T, 1.0f, att + b * NH * TT, T, TT, v, C3, hs, 0.0f, out + (int64_t)b * T * C, C,
                   hs, NH);
    if (rc) return rc;
  }
  return 0;
}

int nd_cuda_attention_backward(cublasHandle_t h, cudaStream_t s, float *dqkv, float *datt, const float *dout,
                               const float *qkv, const float *att, int B, int T, int NH, int hs) {
  // dqkv (B, T, 3C) overwritten, datt (B, NH, T, T) scratch, dout (B, T, C), qkv, att as in the forward
  const int C = NH * hs, C3 = 3 * C;
  const float scale = 1.0f / sqrtf((float)hs);
  const long long TT = (long long)T * T;
  if (T <= 0 || hs <= 0 || B <= 0) return 0;
  for (int b = 0; b < B; b++) {
    const float *v = qkv + (int64_t)b * T * C3 + 2 * C, *dy = dout + (int64_t)b * T * C;
    float *dv = dqkv + (int64_t)b * T * C3 + 2 * C, *da = datt + b * NH * TT;
    const float *a = att + b * NH * TT;
    int rc = heads(h, 0, 1, T, T, hs, 1.0f, dy, C, hs, v, C3, hs, 0.0f, da, T, TT, NH); // datt = dout . v^T
    if (!rc) rc = heads(h, 1, 0, T, hs, T, 1.0f, a, T, TT, dy, C, hs, 0.0f, dv, C3, hs, NH); // dv = att^T . dout
    if (rc) return rc;
  }
  softmax_bwd<<<(unsigned)(B * NH * T), row_threads(T), 0, s>>>(datt, att, T);
  if (int rc = nd_cuda_launched()) return rc;
  for (int b = 0; b < B; b++) {
    const float *q = qkv + (int64_t)b * T * C3, *k = q + C, *da = datt + b * NH * TT;
    float *dq = dqkv + (int64_t)b * T * C3, *dk = dq + C;
    int rc = heads(h, 0, 0, T, hs, T, scale, da, T, TT, k, C3, hs, 0.0f, dq, C3, hs, NH); // dq = s da . k
    if (!rc) rc = heads(h, 1, 0, T, hs, T, scale, da, T, TT, q, C3, hs, 0.0f, dk, C3, hs, NH); // dk = s da^T . q
    if (rc) return rc;
  }
  return 0;
}
