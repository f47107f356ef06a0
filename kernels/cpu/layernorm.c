/* LayerNorm over the last dimension (eps 1e-5), forward and backward. */
#include "kernels/cpu/clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lanes.h"

#include <math.h>
#include <string.h>

#define ND_LN_EPS 1e-5f

/* One element's input gradient, given its row's two means of the normalization's gradient */
static inline float ln_grad_input(float x, float dy, float w, float m, float s, float dnorm_mean,
                                  float dnorm_xhat_mean) {
  return s * (dy * w - dnorm_mean - (x - m) * s * dnorm_xhat_mean);
}

ND_VECTOR_CLONES
void nd_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                          const float *bias, int N, int C) {
  // out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C)
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float *y = out + (size_t)i * C;
    float m = nd__sum(x, C) / (float)C;
    float var = nd__sum_sq_dev(x, m, C) / (float)C;
    float s = 1.0f / sqrtf(var + ND_LN_EPS);
#pragma omp simd
    for (int j = 0; j < C; j++) y[j] = (x[j] - m) * s * weight[j] + bias[j];
    mean[i] = m;
    rstd[i] = s;
  }
}

ND_VECTOR_CLONES
void nd_layernorm_backward_input(float *dinp, const float *dskip, const float *dout, const float *inp,
                                 const float *weight, const float *mean, const float *rstd, int N, int C) {
  // dinp (N, C), dskip (N, C) or NULL (may be dinp), dout (N, C), inp (N, C),
  // weight (C), mean (N), rstd (N)
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    const float *dy = dout + (size_t)i * C;
    float *dx = dinp + (size_t)i * C;
    const float *ds = dskip ? dskip + (size_t)i * C : NULL;
    float m = mean[i], s = rstd[i];
    // the two row means the gradient of the normalization needs
    float dnorm_mean = nd__dot(dy, weight, C) / (float)C;
    float dnorm_xhat_mean = nd__dot_dev(dy, weight, x, m, C) * s / (float)C;
    // two loops, since a branch in the loop keeps it from being vectorized; ds[j] is read before dx[j] is written
    if (ds) {
#pragma omp simd
      for (int j = 0; j < C; j++)
        dx[j] = ds[j] + ln_grad_input(x[j], dy[j], weight[j], m, s, dnorm_mean, dnorm_xhat_mean);
    } else {
#pragma omp simd
      for (int j = 0; j < C; j++) dx[j] = ln_grad_input(x[j], dy[j], weight[j], m, s, dnorm_mean, dnorm_xhat_mean);
    }
  }
}

ND_VECTOR_CLONES
void nd_layernorm_backward_weight(float *dweight, float *dbias, const float *dout, const float *inp, const float *mean,
                                  const float *rstd, int N, int C, float beta) {
  // dweight (C), dbias (C), dout (N, C), inp (N, C), mean (N), rstd (N)
  if (beta == 0.0f) {
    memset(dweight, 0, (size_t)C * sizeof(float));
    memset(dbias, 0, (size_t)C * sizeof(float));
  } else if (beta != 1.0f) {
    for (int j = 0; j < C; j++) {
      dweight[j] *= beta;
      dbias[j] *= beta;
    }
  }
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    const float *dy = dout + (size_t)i * C;
    float m = mean[i], s = rstd[i];
#pragma omp simd
    for (int j = 0; j < C; j++) {
      dweight[j] += dy[j] * (x[j] - m) * s;
      dbias[j] += dy[j];
    }
  }
}
