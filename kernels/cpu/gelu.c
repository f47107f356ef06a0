/* GeLU, tanh approximation (GPT-2's gelu_new). */
#include "kernels/cpu/clones.h"
#include "kernels/cpu/kernels.h"

#include <stddef.h>

#include "kernels/cpu/simd_exp.h"

#define ND_GELU_S 0.7978845608028654f // sqrt(2 / pi)
#define ND_GELU_A 0.044715f

/* tanh through one exponential: libm's tanhf is a call per element, and
 * its absolute error here (a few 1e-7) is below what GeLU's (1 + tanh) can
 * see in float. A saturated e^2u (clamped at e^87) still gives exactly 1. */
static inline float fast_tanh(float u) { return 1.0f - 2.0f / (nd__expf_simd(2.0f * u) + 1.0f); }

ND_VECTOR_CLONES
void nd_gelu_forward(float *out, const float *inp, int64_t n) {
  // out (n), inp (n)
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    float x = inp[i];
    float u = ND_GELU_S * (x + ND_GELU_A * x * x * x);
    out[i] = 0.5f * x * (1.0f + fast_tanh(u));
  }
}

ND_VECTOR_CLONES
void nd_gelu_backward(float *dinp, const float *inp, const float *dout, int64_t n) {
  // dinp (n), inp (n), dout (n)
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    float x = inp[i];
    float u = ND_GELU_S * (x + ND_GELU_A * x * x * x);
    float th = fast_tanh(u);
    float du = ND_GELU_S * (1.0f + 3.0f * ND_GELU_A * x * x);
    float g = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
    dinp[i] = g * dout[i];
  }
}
