/* Element-wise kernels: GeLU (tanh form, the CPU's expf-based tanh), the
 * gated SiLU of Llama's MLP, residual, accumulation (the ordered sum of a
 * collective's parts) and AdamW. The CUDA twins of kernels/cpu/gelu.c,
 * swiglu.c, residual.c, reduce.c and adamw.c. GeLU's and SwiGLU's forwards
 * store fp32 or, under train.precision bf16, bf16 (common.cuh, nd_store). */
#include <math.h>

#include "kernels/cuda/common.cuh"

#define ND_GELU_S 0.7978845608028654f
#define ND_GELU_A 0.044715f
#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__device__ static float fast_tanh(float u) { return 1.0f - 2.0f / (expf(2.0f * u) + 1.0f); }

template <typename Out> __global__ static void gelu_fwd(Out *out, const float *inp, int64_t n) {
  GRID_STRIDE(i, n) {
    float x = inp[i];
    nd_store(&out[i], 0.5f * x * (1.0f + fast_tanh(ND_GELU_S * (x + ND_GELU_A * x * x * x))));
  }
}

__global__ static void gelu_bwd(float *dinp, const float *inp, const float *dout, int64_t n) {
  GRID_STRIDE(i, n) {
    float x = inp[i], th = fast_tanh(ND_GELU_S * (x + ND_GELU_A * x * x * x));
    float du = ND_GELU_S * (1.0f + 3.0f * ND_GELU_A * x * x);
    dinp[i] = (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du) * dout[i];
  }
}

template <typename Out> __global__ static void swiglu_fwd(Out *out, const float *gate, const float *up, int64_t n) {
  GRID_STRIDE(i, n) {
    float g = gate[i];
    nd_store(&out[i], g / (1.0f + expf(-g)) * up[i]);
  }
}

__global__ static void swiglu_bwd(float *dgate, float *dup, const float *gate, const float *up, const float *dout,
                                  int64_t n) {
  GRID_STRIDE(i, n) {
    float g = gate[i], sig = 1.0f / (1.0f + expf(-g));
    dup[i] = dout[i] * g * sig;
    dgate[i] = dout[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
  }
}

__global__ static void add(float *out, const float *a, const float *b, int64_t n) {
  GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}

__global__ static void adamw(float *param, float *m, float *v, const float *grad, int64_t n, float lr, float beta1,
                             float beta2, float eps, float wd, float grad_scale, float c1, float c2) {
  GRID_STRIDE(i, n) {
    float g = grad[i] * grad_scale;
    float mi = beta1 * m[i] + (1.0f - beta1) * g, vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi, v[i] = vi;
    param[i] -= lr * (mi * c1 / (sqrtf(vi * c2) + eps) + wd * param[i]);
  }
}

int nd_cuda_gelu_forward(cudaStream_t s, void *out, int out_bf16, const float *inp, int64_t n) {
  if (out_bf16)
    gelu_fwd<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>((nd_bf16 *)out, inp, n);
  else
    gelu_fwd<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>((float *)out, inp, n);
  return nd_cuda_launched();
}

int nd_cuda_gelu_backward(cudaStream_t s, float *dinp, const float *inp, const float *dout, int64_t n) {
  gelu_bwd<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>(dinp, inp, dout, n);
  return nd_cuda_launched();
}

int nd_cuda_swiglu_forward(cudaStream_t s, void *out, int out_bf16, const float *gate, const float *up, int64_t n) {
  // out (n, fp32 or bf16), gate, up (n)
  if (out_bf16)
    swiglu_fwd<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>((nd_bf16 *)out, gate, up, n);
  else
    swiglu_fwd<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>((float *)out, gate, up, n);
  return nd_cuda_launched();
}

int nd_cuda_swiglu_backward(cudaStream_t s, float *dgate, float *dup, const float *gate, const float *up,
                            const float *dout, int64_t n) {
  // dgate, dup, gate, up, dout (n)
  swiglu_bwd<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>(dgate, dup, gate, up, dout, n);
  return nd_cuda_launched();
}

int nd_cuda_residual_forward(cudaStream_t s, float *out, const float *a, const float *b, int64_t n) {
  add<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>(out, a, b, n);
  return nd_cuda_launched();
}

int nd_cuda_accumulate(cudaStream_t s, float *out, const float *x, int64_t n) {
  add<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>(out, out, x, n);
  return nd_cuda_launched();
}

int nd_cuda_adamw(cudaStream_t s, float *param, float *m, float *v, const float *grad, int64_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, float grad_scale, int t) {
  // bias corrections in double on the host, as the CPU kernel computes them
  const float c1 = (float)(1.0 / (1.0 - pow(beta1, t))), c2 = (float)(1.0 / (1.0 - pow(beta2, t)));
  adamw<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>(param, m, v, grad, n, lr, beta1, beta2, eps, weight_decay,
                                                      grad_scale, c1, c2);
  return nd_cuda_launched();
}
