/* Linear layers on cuBLAS (row-major through the column-major API: C^T =
 * B^T A^T), bias rows and column sums as small kernels: the CUDA twin of
 * kernels/cpu/matmul.c. */
#include "kernels/cuda/common.cuh"

#include <cuda_bf16.h>

int nd_cuda_set_tf32(cublasHandle_t h, int tf32) {
  return (int)cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
}

int nd_cuda_sgemm(cublasHandle_t h, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc) {
  if (M == 0 || N == 0) return 0;
  return (int)cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
                          &alpha, B, ldb, A, lda, &beta, C, ldc);
}

__global__ static void bias_rows(float *out, const float *bias, int64_t M, int N) {
  // out (M, N) rows set to bias (N)
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < M * N; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = bias[i % N];
}

__global__ static void colsum(float *dbias, const float *dout, int M, int N, float beta) {
  // dbias (N) = beta * dbias + column sums of dout (M, N), rows in order as on the CPU
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < N; j += gridDim.x * blockDim.x) {
    float s = beta == 0.0f ? 0.0f : beta * dbias[j];
    for (int i = 0; i < M; i++) s += dout[(int64_t)i * N + j];
    dbias[j] = s;
  }
}

int nd_cuda_matmul_forward(cublasHandle_t h, cudaStream_t s, float *out, const float *inp, const float *weight,
                           const float *bias, int M, int K, int N, int trans_w) {
  // out (M, N), inp (M, K), weight (K, N) or (N, K) when trans_w, bias (N) or NULL
  if (bias) {
    bias_rows<<<nd_cuda_blocks((int64_t)M * N), ND_CUDA_THREADS, 0, s>>>(out, bias, M, N);
    if (int rc = nd_cuda_launched()) return rc;
  }
  return nd_cuda_sgemm(h, 0, trans_w, M, N, K, 1.0f, inp, K, weight, trans_w ? K : N, bias ? 1.0f : 0.0f, out, N);
}

int nd_cuda_matmul_backward_input(cublasHandle_t h, float *dinp, const float *dout, const float *weight, int M,
                                  int K, int N, int trans_w, float beta) {
  // dinp (M, K) = beta dinp + dout (M, N) . W^T
  return nd_cuda_sgemm(h, 0, !trans_w, M, K, N, 1.0f, dout, N, weight, trans_w ? K : N, beta, dinp, K);
}

int nd_cuda_matmul_backward_weight(cublasHandle_t h, cudaStream_t s, float *dweight, float *dbias,
                                   const float *dout, const float *inp, int M, int K, int N, int trans_w,
                                   float beta) {
  // dweight (K, N) = beta dweight + inp^T . dout, or (N, K) = beta dweight + dout^T . inp
  int rc = trans_w ? nd_cuda_sgemm(h, 1, 0, N, K, M, 1.0f, dout, N, inp, K, beta, dweight, K)
                   : nd_cuda_sgemm(h, 1, 0, K, N, M, 1.0f, inp, K, dout, N, beta, dweight, N);
  if (rc || !dbias) return rc;
  colsum<<<nd_cuda_blocks(N), ND_CUDA_THREADS, 0, s>>>(dbias, dout, M, N, beta);
  return nd_cuda_launched();
}

/* ---- train.precision bf16: cublasGemmEx on bf16 operands, fp32 output and
 * accumulation (CUBLAS_COMPUTE_32F). Untested on a GPU until a session has one
 * (docs/cuda.md). The bias and the bias gradient read the rounded values, as
 * the CPU does (kernels/cpu/backend.c, matmul_call). */

static int gemm_bf16(cublasHandle_t h, int trans_a, int trans_b, int M, int N, int K, const void *A, int lda,
                     const void *B, int ldb, float beta, float *C, int ldc) {
  if (M == 0 || N == 0) return 0;
  const float alpha = 1.0f;
  return (int)cublasGemmEx(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                           B, CUDA_R_16BF, ldb, A, CUDA_R_16BF, lda, &beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT);
}

__global__ static void bias_rows_bf16(float *out, const __nv_bfloat16 *bias, int64_t M, int N) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < M * N; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = __bfloat162float(bias[i % N]);
}

__global__ static void colsum_bf16(float *dbias, const __nv_bfloat16 *dout, int M, int N, float beta) {
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < N; j += gridDim.x * blockDim.x) {
    float s = beta == 0.0f ? 0.0f : beta * dbias[j];
    for (int i = 0; i < M; i++) s += __bfloat162float(dout[(int64_t)i * N + j]);
    dbias[j] = s;
  }
}

int nd_cuda_matmul_forward_bf16(cublasHandle_t h, cudaStream_t s, float *out, const void *inp, const void *weight,
                                const void *bias, int M, int K, int N, int trans_w) {
  if (bias) {
    bias_rows_bf16<<<nd_cuda_blocks((int64_t)M * N), ND_CUDA_THREADS, 0, s>>>(out, (const __nv_bfloat16 *)bias, M, N);
    if (int rc = nd_cuda_launched()) return rc;
  }
  return gemm_bf16(h, 0, trans_w, M, N, K, inp, K, weight, trans_w ? K : N, bias ? 1.0f : 0.0f, out, N);
}

int nd_cuda_matmul_backward_input_bf16(cublasHandle_t h, float *dinp, const void *dout, const void *weight, int M,
                                       int K, int N, int trans_w, float beta) {
  return gemm_bf16(h, 0, !trans_w, M, K, N, dout, N, weight, trans_w ? K : N, beta, dinp, K);
}

int nd_cuda_matmul_backward_weight_bf16(cublasHandle_t h, cudaStream_t s, float *dweight, float *dbias,
                                        const void *dout, const void *inp, int M, int K, int N, int trans_w,
                                        float beta) {
  int rc = trans_w ? gemm_bf16(h, 1, 0, N, K, M, dout, N, inp, K, beta, dweight, K)
                   : gemm_bf16(h, 1, 0, K, N, M, inp, K, dout, N, beta, dweight, N);
  if (rc || !dbias) return rc;
  colsum_bf16<<<nd_cuda_blocks(N), ND_CUDA_THREADS, 0, s>>>(dbias, (const __nv_bfloat16 *)dout, M, N, beta);
  return nd_cuda_launched();
}
