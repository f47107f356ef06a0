/* LayerNorm over the last dimension (eps 1e-5), forward and backward. */
#include "kernels/cpu/kernels.h"

#include <math.h>
#include <string.h>

#define ND_LN_EPS 1e-5f

void nd_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                          const float *bias, int N, int C) {
  // out (N, C), mean (N), rstd (N), inp (N, C), weight (C), bias (C)
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float *y = out + (size_t)i * C;
    float m = 0.0f;
    for (int j = 0; j < C; j++) m += x[j];
    m /= (float)C;
    float var = 0.0f;
    for (int j = 0; j < C; j++) {
      float d = x[j] - m;
      var += d * d;
    }
    var /= (float)C;
    float s = 1.0f / sqrtf(var + ND_LN_EPS);
    for (int j = 0; j < C; j++) y[j] = (x[j] - m) * s * weight[j] + bias[j];
    mean[i] = m;
    rstd[i] = s;
  }
}

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
    float dnorm_mean = 0.0f, dnorm_xhat_mean = 0.0f;
    for (int j = 0; j < C; j++) {
      float xhat = (x[j] - m) * s;
      float dnorm = dy[j] * weight[j];
      dnorm_mean += dnorm;
      dnorm_xhat_mean += dnorm * xhat;
    }
    dnorm_mean /= (float)C;
    dnorm_xhat_mean /= (float)C;
    for (int j = 0; j < C; j++) {
      float xhat = (x[j] - m) * s;
      float g = s * (dy[j] * weight[j] - dnorm_mean - xhat * dnorm_xhat_mean);
      dx[j] = ds ? ds[j] + g : g; // ds[j] is read before dx[j] is written
    }
  }
}

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
    for (int j = 0; j < C; j++) {
      dweight[j] += dy[j] * (x[j] - m) * s;
      dbias[j] += dy[j];
    }
  }
}
