/* Internal: the CUDA backend's kernels, one launcher per CPU kernel of
 * kernels/cpu/kernels.h, with the same arguments (device pointers) plus the
 * StarPU worker's stream (and cuBLAS handle for the GEMMs; the handle is
 * already bound to that stream by StarPU). Launchers only enqueue: they
 * return 0, or the CUDA / cuBLAS error of the launch, and the codelets are
 * STARPU_CUDA_ASYNC. Sums run in the CPU kernels' order where the result
 * must be reproducible run to run (embedding scatter, collectives, norms). */
#ifndef ND_KERNELS_CUDA_KERNELS_H
#define ND_KERNELS_CUDA_KERNELS_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

/* common/rope.h's frequencies run on the device too */
#ifdef __CUDACC__
#define ND_ROPE_FN __host__ __device__ static inline
#endif
#include "common/rope.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Row-major C (M, N) = alpha op(A) op(B) + beta C on the handle's stream;
 * lda/ldb/ldc are row strides. tf32 lets cuBLAS use TF32 tensor cores. */
int nd_cuda_sgemm(cublasHandle_t h, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc);
/* Sets the handle's math mode: 1 TF32 tensor cores, 0 plain fp32 (runtime.tf32). */
int nd_cuda_set_tf32(cublasHandle_t h, int tf32);

int nd_cuda_matmul_forward(cublasHandle_t h, cudaStream_t s, float *out, const float *inp, const float *weight,
                           const float *bias, int M, int K, int N, int trans_w);
int nd_cuda_matmul_backward_input(cublasHandle_t h, float *dinp, const float *dout, const float *weight, int M, int K,
                                  int N, int trans_w, float beta);
int nd_cuda_matmul_backward_weight(cublasHandle_t h, cudaStream_t s, float *dweight, float *dbias, const float *dout,
                                   const float *inp, int M, int K, int N, int trans_w, float beta);

/* train.precision bf16 (void pointers for bf16 data, 2 bytes an element:
 * this header stays C): inp (n) rounded to bf16 into out (the cast_bf16 task,
 * bf16.cu), and the three GEMMs on bf16 operands with fp32 outputs,
 * cublasGemmEx with CUBLAS_COMPUTE_32F. The kernels whose output only GEMMs
 * read (the norms, GeLU, SwiGLU) take out_bf16: out is then bf16, computed
 * in fp32 (statistics included) and rounded at the store, as the CPU does. */
int nd_cuda_cast_bf16(cudaStream_t s, void *out, const float *inp, int64_t n);
int nd_cuda_matmul_forward_bf16(cublasHandle_t h, cudaStream_t s, float *out, const void *inp, const void *weight,
                                const void *bias, int M, int K, int N, int trans_w);
int nd_cuda_matmul_backward_input_bf16(cublasHandle_t h, float *dinp, const void *dout, const void *weight, int M,
                                       int K, int N, int trans_w, float beta);
int nd_cuda_matmul_backward_weight_bf16(cublasHandle_t h, cudaStream_t s, float *dweight, float *dbias,
                                        const void *dout, const void *inp, int M, int K, int N, int trans_w,
                                        float beta);

int nd_cuda_layernorm_forward(cudaStream_t s, void *out, int out_bf16, float *mean, float *rstd, const float *inp,
                              const float *weight, const float *bias, int N, int C);
int nd_cuda_layernorm_backward_input(cudaStream_t s, float *dinp, const float *dskip, const float *dout,
                                     const float *inp, const float *weight, const float *mean, const float *rstd, int N,
                                     int C);
int nd_cuda_layernorm_backward_weight(cudaStream_t s, float *dweight, float *dbias, const float *dout, const float *inp,
                                      const float *mean, const float *rstd, int N, int C, float beta);

/* Fused causal attention (kernels/cuda/attention.cu): the scores are never
 * stored; lse (B, NH, T) is each query row's log-sum-exp, what the backward
 * recomputes the probabilities from. Grouped-query: q (B, T, NH, hs) with row
 * stride qs, k and v (B, T, NKV, hs) with row stride kvs; the fused forms
 * below are NKV = NH on qkv. hs at most 256. */
int nd_cuda_attention_gqa_forward(cudaStream_t s, float *out, float *lse, const float *q, const float *k,
                                  const float *v, int qs, int kvs, int B, int T, int NH, int NKV, int hs);
int nd_cuda_attention_gqa_backward(cudaStream_t s, float *dq, float *dk, float *dv, const float *dout, const float *q,
                                   const float *k, const float *v, const float *out, const float *lse, int qs, int kvs,
                                   int B, int T, int NH, int NKV, int hs);
int nd_cuda_attention_forward(cudaStream_t s, float *out, float *lse, const float *qkv, int B, int T, int NH, int hs);
int nd_cuda_attention_backward(cudaStream_t s, float *dqkv, const float *dout, const float *qkv, const float *out,
                               const float *lse, int B, int T, int NH, int hs);

int nd_cuda_rmsnorm_forward(cudaStream_t s, void *out, int out_bf16, float *rstd, const float *inp, const float *weight,
                            int N, int C, float eps);
int nd_cuda_rmsnorm_backward_input(cudaStream_t s, float *dinp, const float *dskip, const float *dout, const float *inp,
                                   const float *weight, const float *rstd, int N, int C);
int nd_cuda_rmsnorm_backward_weight(cudaStream_t s, float *dweight, const float *dout, const float *inp,
                                    const float *rstd, int N, int C, float beta);

int nd_cuda_rope_forward(cudaStream_t s, float *out, const float *inp, int B, int T, int H, int hs, nd_rope rope);
int nd_cuda_rope_backward(cudaStream_t s, float *dinp, const float *dout, int B, int T, int H, int hs, nd_rope rope);

/* generation: kernels/cpu/kernels.h's nd_kv_attention on the stream */
int nd_cuda_kv_attention(cudaStream_t s, float *out, float *kcache, float *vcache, const float *q, const float *k,
                         const float *v, int qstride, int kvstride, int T, int pos, int NH, int NKV, int hs,
                         const nd_rope *rope);

int nd_cuda_swiglu_forward(cudaStream_t s, void *out, int out_bf16, const float *gate, const float *up, int64_t n);
int nd_cuda_swiglu_backward(cudaStream_t s, float *dgate, float *dup, const float *gate, const float *up,
                            const float *dout, int64_t n);

int nd_cuda_gelu_forward(cudaStream_t s, void *out, int out_bf16, const float *inp, int64_t n);
int nd_cuda_gelu_backward(cudaStream_t s, float *dinp, const float *inp, const float *dout, int64_t n);
int nd_cuda_residual_forward(cudaStream_t s, float *out, const float *a, const float *b, int64_t n);

int nd_cuda_embedding_forward(cudaStream_t s, float *out, const int32_t *tokens, const float *wte_shard,
                              const float *wpe, int B, int T, int C, int v0, int Vs);
int nd_cuda_embedding_backward(cudaStream_t s, float *dwte_shard, float *dwpe, const float *dout, const int32_t *tokens,
                               int B, int T, int C, int v0, int Vs, float beta);

int nd_cuda_crossentropy_stats(cudaStream_t s, float *stats, const float *logits, const int32_t *targets, int N, int Vs,
                               int v0);
int nd_cuda_crossentropy_lse(cudaStream_t s, float *lse, const float *stats, int N);
int nd_cuda_crossentropy_backward(cudaStream_t s, float *dlogits, const float *logits, const float *lse,
                                  const int32_t *targets, int N, int Vs, int v0, float scale);

int nd_cuda_adamw(cudaStream_t s, float *param, float *m, float *v, const float *grad, int64_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, float grad_scale, int t);
/* *out (a device double) = sum of squares of x (n), in one fixed order,
 * added to *out when add (the gradient norm over several tensors, in order). */
int nd_cuda_sumsq(cudaStream_t s, double *out, const float *x, int64_t n, int add);
/* out (n) += x (n): the ordered sum of parts is one call per part, in order. */
int nd_cuda_accumulate(cudaStream_t s, float *out, const float *x, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
