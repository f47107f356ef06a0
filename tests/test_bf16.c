/* The one fp32 -> bf16 rounding (common/bf16.h) on values whose answer is
 * known: to nearest, ties to even, as the GPU's conversion; NaN stays
 * NaN (a signalling one too, which plain rounding would turn into an
 * infinity), infinities stay, finite values past the largest bf16 overflow
 * to infinity; and the GEMM operands the CPU widens (kernels/cpu/bf16.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/bf16.h"
#include "kernels/cpu/kernels.h"
#include "tests/tap.h"

static float bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

int main(void) {
  static const struct {
    uint32_t in;
    uint16_t out;
    const char *what;
  } cases[] = {
      {0x3f800000u, 0x3f80, "1 is exact"},
      {0xbfc00000u, 0xbfc0, "-1.5 is exact"},
      {0x3f807fffu, 0x3f80, "below half an ulp rounds down"},
      {0x3f808001u, 0x3f81, "above half an ulp rounds up"},
      {0x3f808000u, 0x3f80, "a tie rounds to the even 0x3f80"},
      {0x3f818000u, 0x3f82, "a tie rounds to the even 0x3f82"},
      {0xbf818000u, 0xbf82, "a negative tie rounds to even in magnitude"},
      {0x00008000u, 0x0000, "a subnormal tie rounds to even zero"},
      {0x00018000u, 0x0002, "a subnormal tie rounds to even 2"},
      {0x80000000u, 0x8000, "-0 keeps its sign"},
      {0x7f800000u, 0x7f80, "+inf stays"},
      {0xff800000u, 0xff80, "-inf stays"},
      {0x7fc00000u, 0x7fc0, "a quiet NaN stays"},
      {0x7f800001u, 0x7fc0, "a signalling NaN with only low bits stays a NaN, not inf"},
      {0xff800001u, 0xffc0, "a negative NaN keeps its sign"},
      {0x7f7f7fffu, 0x7f7f, "just below the largest bf16 plus half rounds to the largest"},
      {0x7f7f8000u, 0x7f80, "the tie past the largest bf16 overflows to inf"},
      {0x7f7fffffu, 0x7f80, "FLT_MAX overflows to inf"},
      {0xff7fffffu, 0xff80, "-FLT_MAX overflows to -inf"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t got = nd_bf16_from_f32(bits(cases[i].in));
    ok(got == cases[i].out, "0x%08x -> 0x%04x: %s (got 0x%04x)", cases[i].in, cases[i].out, cases[i].what, got);
  }
  ok(nd_bf16_to_f32(0x3f80) == 1.0f && nd_bf16_to_f32(0xc040) == -3.0f, "widening is exact");
  ok(isnan(nd_bf16_round(NAN)) && nd_bf16_round(3.0f) == 3.0f, "nd_bf16_round of NaN and of an exact value");

  /* the CPU's GEMM operands: fp32 rounded, bf16 widened, the same values */
  float x[4] = {bits(0x3f808000u), bits(0x3f808001u), -2.0f, bits(0x7f7fffffu)};
  uint16_t h[4];
  nd_cast_bf16(h, x, 4);
  float *from_f32 = nd_bf16_operand(x, 0, 4), *from_bf16 = nd_bf16_operand(h, 1, 4);
  int same = from_f32 && from_bf16;
  for (int i = 0; same && i < 4; i++) same = memcmp(&from_f32[i], &from_bf16[i], sizeof(float)) == 0;
  ok(same && from_f32[0] == 1.0f && from_f32[1] == bits(0x3f810000u) && isinf(from_f32[3]),
     "an operand rounded from fp32 equals the cast one widened");
  free(from_f32);
  free(from_bf16);
  return done_testing();
}
