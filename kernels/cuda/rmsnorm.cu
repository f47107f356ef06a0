/* RMSNorm (Llama's LlamaRMSNorm), one block per row: the CUDA twin of
 * kernels/cpu/rmsnorm.c (row sums in a tree, not in a line: equal within the
 * tolerance of the kernel checks; the weight gradient sums rows in the CPU's
 * order). */
#include "kernels/cuda/common.cuh"

template <typename Out>
__global__ static void rms_fwd(Out *out, float *rstd, const float *inp, const float *weight, int C, float eps) {
  // one row of out (N, C) in fp32 or bf16, rstd (N), inp (N, C); weight (C)
  const float *x = inp + (int64_t)blockIdx.x * C;
  Out *y = out + (int64_t)blockIdx.x * C;
  float ss = 0.0f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) ss += x[j] * x[j];
  float r = 1.0f / sqrtf(nd_block_sum(ss) / (float)C + eps);
  for (int j = threadIdx.x; j < C; j += blockDim.x) nd_store(&y[j], weight[j] * (x[j] * r));
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

__global__ static void rms_bwd_in(float *dinp, const float *dskip, const float *dout, const float *inp,
                                  const float *weight, const float *rstd, int C) {
  // one row: dinp (N, C) = dskip + d(RMSNorm)/d(inp) . dout; dskip may be NULL or dinp
  int64_t row = (int64_t)blockIdx.x * C;
  const float *x = inp + row, *dy = dout + row;
  float r = rstd[blockIdx.x], dot = 0.0f;
  for (int j = threadIdx.x; j < C; j += blockDim.x) dot += dy[j] * weight[j] * x[j] * r;
  dot = nd_block_sum(dot) / (float)C;
  for (int j = threadIdx.x; j < C; j += blockDim.x) {
    float g = r * (dy[j] * weight[j] - x[j] * r * dot);
    dinp[row + j] = dskip ? dskip[row + j] + g : g;
  }
}

__global__ static void rms_bwd_w(float *dweight, const float *dout, const float *inp, const float *rstd, int N, int C,
                                 float beta) {
  // dweight (C) = beta * previous + the sum over the N rows, in row order
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < C; j += gridDim.x * blockDim.x) {
    float w = beta == 0.0f ? 0.0f : beta * dweight[j];
    for (int i = 0; i < N; i++) w += dout[(int64_t)i * C + j] * inp[(int64_t)i * C + j] * rstd[i];
    dweight[j] = w;
  }
}

static unsigned row_threads(int C) { return C >= 1024 ? 1024 : C >= 256 ? 256 : 32 * ((C + 31) / 32); }

int nd_cuda_rmsnorm_forward(cudaStream_t s, void *out, int out_bf16, float *rstd, const float *inp, const float *weight,
                            int N, int C, float eps) {
  if (N == 0) return 0;
  if (out_bf16)
    rms_fwd<<<N, row_threads(C), 0, s>>>((nd_bf16 *)out, rstd, inp, weight, C, eps);
  else
    rms_fwd<<<N, row_threads(C), 0, s>>>((float *)out, rstd, inp, weight, C, eps);
  return nd_cuda_launched();
}

int nd_cuda_rmsnorm_backward_input(cudaStream_t s, float *dinp, const float *dskip, const float *dout, const float *inp,
                                   const float *weight, const float *rstd, int N, int C) {
  if (N == 0) return 0;
  rms_bwd_in<<<N, row_threads(C), 0, s>>>(dinp, dskip, dout, inp, weight, rstd, C);
  return nd_cuda_launched();
}

int nd_cuda_rmsnorm_backward_weight(cudaStream_t s, float *dweight, const float *dout, const float *inp,
                                    const float *rstd, int N, int C, float beta) {
  rms_bwd_w<<<nd_cuda_blocks(C), ND_CUDA_THREADS, 0, s>>>(dweight, dout, inp, rstd, N, C, beta);
  return nd_cuda_launched();
}
