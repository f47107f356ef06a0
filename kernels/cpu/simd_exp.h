/* e^x in plain C that compilers vectorize (under `#pragma omp simd`), for
 * the element-wise kernels: libm's expf is a call per element, and at 5-8 ns
 * each it made GeLU cost a third as much as its layer's matmuls. */
#ifndef ND_KERNELS_CPU_SIMD_EXP_H
#define ND_KERNELS_CPU_SIMD_EXP_H

#include <stdint.h>
#include <string.h>

/* Within 2.5e-7 relative of e^x for |x| <= 87. Beyond, x is clamped to
 * +-87 (e^-87 is 1.6e-38, e^87 6e37: a tanh, a sigmoid or a softmax has
 * saturated long before); a NaN comes out as NaN. The clamp and the NaN test
 * work on the bits, because float compares would keep the loop from being
 * vectorized under the default -ftrapping-math. */
static inline float nd__expf_simd(float x) {
  int32_t in, mag, lim = 0x42ae0000; /* 87.0f */
  memcpy(&in, &x, sizeof x);
  mag = in & INT32_MAX;
  int32_t clamped = (in & INT32_MIN) | (mag < lim ? mag : lim);
  memcpy(&x, &clamped, sizeof x);
  /* x = n ln2 + r, |r| <= ln2 / 2: adding 1.5 * 2^23 rounds x / ln2 to the
   * nearest integer n, left in the low bits of t; ln2 in two parts keeps r exact */
  float t = x * 1.44269504f + 12582912.0f, n = t - 12582912.0f;
  float r = x - n * 0.693145752f - n * 1.42860677e-6f;
  /* e^r by its Taylor series to r^6 (error under 1.2e-7 for |r| <= ln2 / 2) */
  float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
  /* times 2^n: n added to p's exponent field */
  uint32_t tn, pb;
  memcpy(&tn, &t, sizeof t);
  memcpy(&pb, &p, sizeof p);
  pb += (tn - 0x4b400000u) << 23;
  int32_t nan = -(int32_t)(mag > 0x7f800000); /* all ones for a NaN */
  int32_t out = (in & nan) | ((int32_t)pb & ~nan);
  memcpy(&p, &out, sizeof p);
  return p;
}

#endif
