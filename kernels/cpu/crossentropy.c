/* Cross-entropy over a vocabulary split in shards: per-shard stats; over
 * all shards, in shard order, the loss and (for the backward) each row's
 * log-sum-exp; per-shard backward. */
#include "kernels/cpu/clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lanes.h"
#include "kernels/cpu/simd_exp.h"

#include <math.h>
#include <stddef.h>

ND_VECTOR_CLONES
void nd_crossentropy_stats(float *stats, const float *logits, const int32_t *targets, int N, int Vs, int v0) {
  // stats (N, 3) = {max, sum exp(logit - max), target logit or 0}; logits (N, Vs); targets (N)
  for (int i = 0; i < N; i++) {
    const float *row = logits + (size_t)i * Vs;
    float mx = -INFINITY;
    for (int j = 0; j < Vs; j++) mx = row[j] > mx ? row[j] : mx;
    double sum[ND_LANES] = {0}; /* in double: a large vocabulary adds many small terms */
#define ND_TERM(j) (double)nd__expf_simd(row[j] - mx)
    ND_LANES_ACCUMULATE(sum, Vs, ND_TERM);
#undef ND_TERM
    int64_t r = (int64_t)targets[i] - v0;
    stats[3 * i + 0] = mx;
    stats[3 * i + 1] = (float)ND_LANES_TOTAL(sum);
    stats[3 * i + 2] = (r >= 0 && r < Vs) ? row[r] : 0.0f;
  }
}

/* row i's log-sum-exp over every shard, in shard order */
static double row_lse(const float *const *shard_stats, int nshards, int i) {
  double mx = -INFINITY;
  for (int s = 0; s < nshards; s++) {
    double m = shard_stats[s][3 * i];
    mx = m > mx ? m : mx;
  }
  double sum = 0.0;
  for (int s = 0; s < nshards; s++) {
    const float *st = shard_stats[s] + 3 * i;
    if (st[1] > 0.0f) sum += (double)st[1] * exp((double)st[0] - mx);
  }
  return mx + log(sum);
}

void nd_crossentropy_lse(float *lse, const float *const *shard_stats, int nshards, int N) {
  // lse (N); shard_stats[s] (N, 3) for s in 0..nshards-1
  for (int i = 0; i < N; i++) lse[i] = (float)row_lse(shard_stats, nshards, i);
}

double nd_crossentropy_combine(const float *const *shard_stats, int nshards, int N) {
  // shard_stats[s] (N, 3) for s in 0..nshards-1
  double loss = 0.0;
  for (int i = 0; i < N; i++) {
    double target = 0.0;
    for (int s = 0; s < nshards; s++) target += shard_stats[s][3 * i + 2];
    loss += row_lse(shard_stats, nshards, i) - target;
  }
  return loss;
}

ND_VECTOR_CLONES
void nd_crossentropy_backward(float *dlogits, const float *logits, const float *lse, const int32_t *targets, int N,
                              int Vs, int v0, float scale) {
  // dlogits (N, Vs), may be logits; logits (N, Vs); lse (N); targets (N)
  for (int i = 0; i < N; i++) {
    const float *row = logits + (size_t)i * Vs;
    float *drow = dlogits + (size_t)i * Vs;
    float l = lse[i];
#pragma omp simd
    for (int j = 0; j < Vs; j++) drow[j] = scale * nd__expf_simd(row[j] - l);
    int64_t r = (int64_t)targets[i] - v0;
    if (r >= 0 && r < Vs) drow[r] -= scale;
  }
}
