/* LayerNorm (eps 1e-5), one block per row: the CUDA twin of
 * kernels/cpu/layernorm.c (sums in a tree, not in a line: equal within
 * the tolerance of the kernel checks). */
#include "kernels/cuda/common.cuh"

#define ND_LN_EPS 1e-5f

template <typename Out>
__global__ static void ln_fwd(Out *out, float *mean, float *rstd, const float *inp, const float *weight,
                              const float *bias, int C) {
  // one row of out (N, C) in fp32 or bf16, mean (N), rstd (N), inp (N, C); weight, bias (C)
  const float *x = inp + (int64_t)blockIdx.x * C;
  Out *y = out + (int64_t)blockIdx.x * C;
  float s = 0.0f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) s += x[j];
  float m = nd_block_sum(s) / (float)C;
  float v = 0.0f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) v += (x[j] - m) * (x[j] - m);
  float r = 1.0f / sqrtf(nd_block_sum(v) / (float)C + ND_LN_EPS);
  for (int j = threadIdx.x; j < C; j += blockDim.x) nd_store(&y[j], (x[j] - m) * r * weight[j] + bias[j]);
  if (threadIdx.x == 0) mean[blockIdx.x] = m, rstd[blockIdx.x] = r;
}

__global__ static void ln_bwd_in(float *dinp, const float *dskip, const float *dout, const float *inp,
                                 const float *weight, const float *mean, const float *rstd, int C) {
  // one row: dinp (N, C) = dskip + d(LN)/d(inp) . dout; dskip may be NULL or dinp
  int64_t row = (int64_t)blockIdx.x * C;
  const float *x = inp + row, *dy = dout + row;
  float m = mean[blockIdx.x], r = rstd[blockIdx.x], a = 0.0f, b = 0.0f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) {
    float dn = dy[j] * weight[j];
    a += dn;
    b += dn * (x[j] - m) * r;
  }
  a = nd_block_sum(a) / (float)C;
  b = nd_block_sum(b) / (float)C;
  for (int j = threadIdx.x; j < C; j += blockDim.x) {
    float g = r * (dy[j] * weight[j] - a - (x[j] - m) * r * b);
    dinp[row + j] = dskip ? dskip[row + j] + g : g;
  }
}

__global__ static void ln_bwd_w(float *dweight, float *dbias, const float *dout, const float *inp,
                                const float *mean, const float *rstd, int N, int C, float beta) {
  // dweight, dbias (C) = beta * previous + sums over the N rows, in row order
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < C; j += gridDim.x * blockDim.x) {
    float w = beta == 0.0f ? 0.0f : beta * dweight[j], b = beta == 0.0f ? 0.0f : beta * dbias[j];
    for (int i = 0; i < N; i++) {
      float dy = dout[(int64_t)i * C + j];
      w += dy * (inp[(int64_t)i * C + j] - mean[i]) * rstd[i];
      b += dy;
    }
    dweight[j] = w, dbias[j] = b;
  }
}

static unsigned row_threads(int C) { return C >= 1024 ? 1024 : C >= 256 ? 256 : 32 * ((C + 31) / 32); }

int nd_cuda_layernorm_forward(cudaStream_t s, void *out, int out_bf16, float *mean, float *rstd, const float *inp,
                              const float *weight, const float *bias, int N, int C) {
  if (N == 0) return 0;
  if (out_bf16)
    ln_fwd<<<N, row_threads(C), 0, s>>>((nd_bf16 *)out, mean, rstd, inp, weight, bias, C);
  else
    ln_fwd<<<N, row_threads(C), 0, s>>>((float *)out, mean, rstd, inp, weight, bias, C);
  return nd_cuda_launched();
}

int nd_cuda_layernorm_backward_input(cudaStream_t s, float *dinp, const float *dskip, const float *dout,
                                     const float *inp, const float *weight, const float *mean, const float *rstd,
                                     int N, int C) {
  if (N == 0) return 0;
  ln_bwd_in<<<N, row_threads(C), 0, s>>>(dinp, dskip, dout, inp, weight, mean, rstd, C);
  return nd_cuda_launched();
}

int nd_cuda_layernorm_backward_weight(cudaStream_t s, float *dweight, float *dbias, const float *dout,
                                      const float *inp, const float *mean, const float *rstd, int N, int C,
                                      float beta) {
  ln_bwd_w<<<nd_cuda_blocks(C), ND_CUDA_THREADS, 0, s>>>(dweight, dbias, dout, inp, mean, rstd, N, C, beta);
  return nd_cuda_launched();
}
