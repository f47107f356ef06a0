/* Cross-entropy over a vocabulary shard: per-row statistics (one block per
 * row), the log-sum-exp of one shard's rows and the backward (one element
 * per thread). The loss and the log-sum-exp over several shards stay on
 * the CPU (a few values per row, the loss in double). The CUDA twin
 * of kernels/cpu/crossentropy.c. */
#include <math.h>

#include "kernels/cuda/common.cuh"

__global__ static void ce_stats(float *stats, const float *logits, const int32_t *targets, int Vs, int v0) {
  // one row i: stats (N, 3) = {max, sum exp(logit - max), target logit or 0}
  const float *row = logits + (int64_t)blockIdx.x * Vs;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < Vs; j += blockDim.x) mx = fmaxf(mx, row[j]);
  mx = nd_block_max(mx);
  double sum = 0.0;
  for (int j = threadIdx.x; j < Vs; j += blockDim.x) sum += expf(row[j] - mx);
  sum = nd_block_sum(sum);
  if (threadIdx.x == 0) {
    int64_t r = (int64_t)targets[blockIdx.x] - v0;
    stats[3 * blockIdx.x] = mx;
    stats[3 * blockIdx.x + 1] = (float)sum;
    stats[3 * blockIdx.x + 2] = r >= 0 && r < Vs ? row[r] : 0.0f;
  }
}

__global__ static void ce_lse(float *lse, const float *stats, int N) {
  // one shard: lse (N) = max + log(sum exp(logit - max)) from stats (N, 3)
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) {
    float sum = stats[3 * i + 1];
    lse[i] = stats[3 * i] + logf(sum > 0.0f ? sum : 0.0f);
  }
}

__global__ static void ce_bwd(float *dlogits, const float *logits, const float *lse, const int32_t *targets,
                              int64_t n, int Vs, int v0, float scale) {
  // dlogits (N, Vs) = scale (softmax - onehot(target)); may be logits
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t row = i / Vs, j = i % Vs;
    float d = scale * expf(logits[i] - lse[row]);
    dlogits[i] = (int64_t)targets[row] - v0 == j ? d - scale : d;
  }
}

int nd_cuda_crossentropy_stats(cudaStream_t s, float *stats, const float *logits, const int32_t *targets, int N,
                               int Vs, int v0) {
  if (N == 0) return 0;
  ce_stats<<<N, 256, 0, s>>>(stats, logits, targets, Vs, v0);
  return nd_cuda_launched();
}

int nd_cuda_crossentropy_lse(cudaStream_t s, float *lse, const float *stats, int N) {
  if (N == 0) return 0;
  ce_lse<<<nd_cuda_blocks(N), ND_CUDA_THREADS, 0, s>>>(lse, stats, N);
  return nd_cuda_launched();
}

int nd_cuda_crossentropy_backward(cudaStream_t s, float *dlogits, const float *logits, const float *lse,
                                  const int32_t *targets, int N, int Vs, int v0, float scale) {
  int64_t n = (int64_t)N * Vs;
  if (n == 0) return 0;
  ce_bwd<<<nd_cuda_blocks(n), ND_CUDA_THREADS, 0, s>>>(dlogits, logits, lse, targets, n, Vs, v0, scale);
  return nd_cuda_launched();
}
