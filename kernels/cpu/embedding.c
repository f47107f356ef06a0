/* Token + position embedding over one vocabulary shard [v0, v0 + Vs). */
#include "kernels/cpu/kernels.h"

#include <string.h>

void nd_embedding_forward(float *out, const int32_t *tokens, const float *wte_shard, const float *wpe, int B, int T,
                          int C, int v0, int Vs) {
  // out (B*T, C), tokens (B*T), wte_shard (Vs, C), wpe (T, C) or NULL
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      size_t bt = (size_t)b * T + t;
      float *o = out + bt * C;
      int64_t r = (int64_t)tokens[bt] - v0;
      if (r >= 0 && r < Vs) {
        memcpy(o, wte_shard + (size_t)r * C, (size_t)C * sizeof(float));
      } else {
        memset(o, 0, (size_t)C * sizeof(float));
      }
      if (wpe) {
        const float *p = wpe + (size_t)t * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] += p[c];
      }
    }
  }
}

static void scale_or_zero(float *v, size_t n, float beta) {
  if (beta == 0.0f) {
    memset(v, 0, n * sizeof(float));
  } else if (beta != 1.0f) {
    for (size_t i = 0; i < n; i++) v[i] *= beta;
  }
}

void nd_embedding_backward(float *dwte_shard, float *dwpe, const float *dout, const int32_t *tokens, int B, int T,
                           int C, int v0, int Vs, float beta) {
  // dwte_shard (Vs, C) or NULL, dwpe (T, C) or NULL, dout (B*T, C), tokens (B*T)
  if (dwte_shard) {
    scale_or_zero(dwte_shard, (size_t)Vs * C, beta);
    // scatter in (b, t) order, so repeated tokens add up in a fixed order
    for (size_t bt = 0; bt < (size_t)B * T; bt++) {
      int64_t r = (int64_t)tokens[bt] - v0;
      if (r < 0 || r >= Vs) continue;
      float *dw = dwte_shard + (size_t)r * C;
      const float *d = dout + bt * C;
#pragma omp simd
      for (int c = 0; c < C; c++) dw[c] += d[c];
    }
  }
  if (dwpe) {
    scale_or_zero(dwpe, (size_t)T * C, beta);
    for (int b = 0; b < B; b++) {
      for (int t = 0; t < T; t++) {
        float *dp = dwpe + (size_t)t * C;
        const float *d = dout + ((size_t)b * T + t) * C;
#pragma omp simd
        for (int c = 0; c < C; c++) dp[c] += d[c];
      }
    }
  }
}
