/* Token + position embedding over a vocabulary shard, forward and backward.
 * The backward scatters rows in (b, t) order per column, as the CPU does:
 * repeated tokens add up in a fixed order, so runs repeat bit for bit. The
 * CUDA twin of kernels/cpu/embedding.c. */
#include "kernels/cuda/common.cuh"

__global__ static void embed_fwd(float *out, const int32_t *tokens, const float *wte, const float *wpe, int T,
                                 int C, int v0, int Vs, int64_t n) {
  // out (B*T, C): one element per thread
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t bt = i / C, c = i % C, r = (int64_t)tokens[bt] - v0;
    float o = r >= 0 && r < Vs ? wte[r * C + c] : 0.0f;
    out[i] = wpe ? o + wpe[(bt % T) * C + c] : o;
  }
}

__global__ static void embed_bwd_wte(float *dwte, const float *dout, const int32_t *tokens, int64_t BT, int C,
                                     int v0, int Vs, float beta) {
  // one column c per thread: scale, then the (b, t) rows in order
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
    for (int64_t r = 0; r < Vs; r++) dwte[r * C + c] = beta == 0.0f ? 0.0f : beta * dwte[r * C + c];
    for (int64_t bt = 0; bt < BT; bt++) {
      int64_t r = (int64_t)tokens[bt] - v0;
      if (r >= 0 && r < Vs) dwte[r * C + c] += dout[bt * C + c];
    }
  }
}

__global__ static void embed_bwd_wpe(float *dwpe, const float *dout, int B, int T, int C, float beta) {
  // one (t, c) per thread, batch in order
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)T * C;
       i += (int64_t)gridDim.x * blockDim.x) {
    float s = beta == 0.0f ? 0.0f : beta * dwpe[i];
    for (int b = 0; b < B; b++) s += dout[(int64_t)b * T * C + i];
    dwpe[i] = s;
  }
}

int nd_cuda_embedding_forward(cudaStream_t s, float *out, const int32_t *tokens, const float *wte_shard,
                              const float *wpe, int B, int T, int C, int v0, int Vs) {
  int64_t n = (int64_t)B * T * C;
  if (n == 0) return 0;
  embed_fwd<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>(out, tokens, wte_shard, wpe, T, C, v0, Vs, n);
  return nd_cuda_launched();
}

int nd_cuda_embedding_backward(cudaStream_t s, float *dwte_shard, float *dwpe, const float *dout,
                               const int32_t *tokens, int B, int T, int C, int v0, int Vs, float beta) {
  if (dwte_shard) {
    embed_bwd_wte<<<nd_cuda_blocks(C), ND_CUDA_THREADS, 0, s>>>(dwte_shard, dout, tokens, (int64_t)B * T, C, v0, Vs,
                                                                beta);
    if (int rc = nd_cuda_launched()) return rc;
  }
  if (dwpe) {
    embed_bwd_wpe<<<nd_cuda_blocks((int64_t)T * C), ND_CUDA_THREADS, 0, s>>>(dwpe, dout, B, T, C, beta);
    return nd_cuda_launched();
  }
  return 0;
}
