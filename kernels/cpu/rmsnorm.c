/* RMSNorm over the last dimension (Llama's LlamaRMSNorm), forward and backward. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lanes.h"

ND_VECTOR_CLONES
void nd_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps) {
  // out (N, C), rstd (N), inp (N, C), weight (C)
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float *y = out + (size_t)i * C;
    float s = 1.0f / sqrtf(nd__dot(x, x, C) / (float)C + eps);
#pragma omp simd
    for (int j = 0; j < C; j++) y[j] = weight[j] * (x[j] * s);
    rstd[i] = s;
  }
}

/* One element's input gradient, given its row's mean of the gradient times xhat */
static inline float rms_grad_input(float x, float dy, float w, float s, float dot) {
  return s * (dy * w - x * s * dot);
}

ND_VECTOR_CLONES
void nd_rmsnorm_backward_input(float *dinp, const float *dskip, const float *dout, const float *inp,
                               const float *weight, const float *rstd, int N, int C) {
  // dinp (N, C), dskip (N, C) or NULL (may be dinp), dout (N, C), inp (N, C), weight (C), rstd (N)
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
    const float *ds = dskip ? dskip + (size_t)i * C : NULL;
    float *dx = dinp + (size_t)i * C;
    float s = rstd[i];
    // d(x s)/dx = s (I - xhat xhat^T / C): the row mean of g . xhat is the one reduction
    float dot = nd__dot_dev(dy, weight, x, 0.0f, C) * s / (float)C;
    // two loops, since a branch in the loop keeps it from being vectorized; ds[j] is read before dx[j] is written
    if (ds) {
#pragma omp simd
      for (int j = 0; j < C; j++) dx[j] = ds[j] + rms_grad_input(x[j], dy[j], weight[j], s, dot);
    } else {
#pragma omp simd
      for (int j = 0; j < C; j++) dx[j] = rms_grad_input(x[j], dy[j], weight[j], s, dot);
    }
  }
}

ND_VECTOR_CLONES
void nd_rmsnorm_backward_weight(float *dweight, const float *dout, const float *inp, const float *rstd, int N, int C,
                                float beta) {
  // dweight (C), dout (N, C), inp (N, C), rstd (N)
  if (beta == 0.0f)
    memset(dweight, 0, (size_t)C * sizeof(float));
  else if (beta != 1.0f)
    for (int j = 0; j < C; j++) dweight[j] *= beta;
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
#pragma omp simd
    for (int j = 0; j < C; j++) dweight[j] += dy[j] * x[j] * rstd[i];
  }
}
