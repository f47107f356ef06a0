/* bfloat16: the upper half of an fp32 (8 exponent bits, 7 mantissa bits).
 * The one rounding of the project, fp32 to bf16 to nearest, ties to even,
 * as the GPU backend's conversion does, so that the CPU and OpenCL backends
 * compute the GPU's bf16 graph: a NaN stays a (quiet) NaN of the
 * same sign, an infinity stays one, a finite value past the largest bf16
 * (plus half its unit) becomes an infinity. A GPU backend compiles this very
 * function (ND_BF16_FN below), so the GPU stores the CPU's bits, NaNs
 * included: the GPU toolkit's own conversion rounds finite values and
 * infinities alike but makes every NaN one canonical NaN (0x7fff). */
#ifndef ND_COMMON_BF16_H
#define ND_COMMON_BF16_H

#include <stdint.h>
#include <string.h>

/* a backend whose compiler needs qualifiers for code that runs on the
 * device and the host defines ND_BF16_FN first */
#ifndef ND_BF16_FN
#define ND_BF16_FN static inline
#endif

typedef uint16_t nd_bf16;

ND_BF16_FN nd_bf16 nd_bf16_from_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (nd_bf16)((u >> 16) | 0x40u); /* NaN: set the quiet bit */
  u += 0x7fffu + ((u >> 16) & 1u);                                          /* half an ulp, ties to even */
  return (nd_bf16)(u >> 16);
}

ND_BF16_FN float nd_bf16_to_f32(nd_bf16 h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* f rounded to the nearest bf16, as an fp32 (exact: bf16 is a subset) */
ND_BF16_FN float nd_bf16_round(float f) { return nd_bf16_to_f32(nd_bf16_from_f32(f)); }

#endif
