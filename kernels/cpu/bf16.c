/* train.precision bf16 on the CPU: the weights' casts, and GEMM operands as
 * the GPU sees them. A product of two bf16 values is exact in fp32, so
 * widening every operand to fp32 (rounding an fp32 one to bf16 first) and
 * calling sgemm computes what a bf16 GEMM with fp32 accumulation does, with
 * the fp32 path's blocking and so its determinism across layouts and cores
 * (OpenBLAS's cblas_sbgemm would pick its own kernels). */
#include <stdlib.h>

#include "common/bf16.h"
#include "kernels/cpu/kernels.h"

void nd_cast_bf16(uint16_t *out, const float *inp, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = nd_bf16_from_f32(inp[i]);
}

float *nd_bf16_operand(const void *data, int is_bf16, int64_t n) {
  float *w = malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
  if (!w) return NULL;
  if (is_bf16) {
    const uint16_t *h = data;
    for (int64_t i = 0; i < n; i++) w[i] = nd_bf16_to_f32(h[i]);
  } else {
    const float *f = data;
    for (int64_t i = 0; i < n; i++) w[i] = nd_bf16_round(f[i]);
  }
  return w;
}
