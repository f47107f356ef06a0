/* RMSNorm over the last dimension (Llama's LlamaRMSNorm), forward and backward. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"

void nd_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps) {
  // out (N, C), rstd (N), inp (N, C), weight (C)
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float *y = out + (size_t)i * C;
    float ss = 0.0f;
    for (int j = 0; j < C; j++) ss += x[j] * x[j];
    float s = 1.0f / sqrtf(ss / (float)C + eps);
    for (int j = 0; j < C; j++) y[j] = weight[j] * (x[j] * s);
    rstd[i] = s;
  }
}

void nd_rmsnorm_backward_input(float *dinp, const float *dskip, const float *dout, const float *inp,
                               const float *weight, const float *rstd, int N, int C) {
  // dinp (N, C), dskip (N, C) or NULL (may be dinp), dout (N, C), inp (N, C), weight (C), rstd (N)
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
    const float *ds = dskip ? dskip + (size_t)i * C : NULL;
    float *dx = dinp + (size_t)i * C;
    float s = rstd[i];
    // d(x s)/dx = s (I - xhat xhat^T / C): the row mean of g . xhat is the one reduction
    float dot = 0.0f;
    for (int j = 0; j < C; j++) dot += dy[j] * weight[j] * x[j] * s;
    dot /= (float)C;
    for (int j = 0; j < C; j++) {
      float g = s * (dy[j] * weight[j] - x[j] * s * dot);
      dx[j] = ds ? ds[j] + g : g;
    }
  }
}

void nd_rmsnorm_backward_weight(float *dweight, const float *dout, const float *inp, const float *rstd, int N, int C,
                                float beta) {
  // dweight (C), dout (N, C), inp (N, C), rstd (N)
  if (beta == 0.0f)
    memset(dweight, 0, (size_t)C * sizeof(float));
  else if (beta != 1.0f)
    for (int j = 0; j < C; j++) dweight[j] *= beta;
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
    for (int j = 0; j < C; j++) dweight[j] += dy[j] * x[j] * rstd[i];
  }
}
