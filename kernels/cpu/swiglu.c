/* The gated SiLU of Llama's MLP: silu(gate) * up, forward and backward. */
#include "kernels/cpu/clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/simd_exp.h"

ND_VECTOR_CLONES
void nd_swiglu_forward(float *out, const float *gate, const float *up, int64_t n) {
  // out, gate, up (n)
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    float g = gate[i];
    out[i] = g / (1.0f + nd__expf_simd(-g)) * up[i];
  }
}

ND_VECTOR_CLONES
void nd_swiglu_backward(float *dgate, float *dup, const float *gate, const float *up, const float *dout, int64_t n) {
  // dgate, dup, gate, up, dout (n)
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    float g = gate[i], sig = 1.0f / (1.0f + nd__expf_simd(-g));
    dup[i] = dout[i] * g * sig;
    dgate[i] = dout[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
  }
}
