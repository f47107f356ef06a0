/* Rotary position embedding in Hugging Face's rotate_half convention, so that
 * Llama q/k projection weights need no permutation. */
#include <math.h>
#include <stddef.h>

#include "common/rope.h"
#include "kernels/cpu/kernels.h"

/* sign +1: the forward rotation; -1: its transpose (the backward). Token t
 * is at position t, or at rank `rank` of cp's (context parallelism). */
static void rotate(float *out, const float *inp, int B, int T, int H, int hs, nd_rope r, float sign, int cp, int rank) {
  // out, inp (B, T, H, hs)
  const int half = hs / 2;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      size_t row = ((size_t)b * T + t) * H * hs;
      float pos = (float)(cp > 1 ? nd_ring_position(T, cp, rank, t) : t);
      for (int h = 0; h < H; h++) {
        const float *x = inp + row + (size_t)h * hs;
        float *y = out + row + (size_t)h * hs;
        for (int i = 0; i < half; i++) {
          // as Hugging Face computes it: inv_freq and the angle in single precision
          float inv_freq = nd_rope_inv_freq(r, i, hs);
          float ang = pos * inv_freq, c = cosf(ang), s = sign * sinf(ang);
          float x0 = x[i], x1 = x[i + half];
          y[i] = x0 * c - x1 * s;
          y[i + half] = x1 * c + x0 * s;
        }
      }
    }
}

void nd_rope_forward(float *out, const float *inp, int B, int T, int H, int hs, nd_rope r) {
  rotate(out, inp, B, T, H, hs, r, 1.0f, 1, 0);
}

void nd_rope_backward(float *dinp, const float *dout, int B, int T, int H, int hs, nd_rope r) {
  rotate(dinp, dout, B, T, H, hs, r, -1.0f, 1, 0);
}

void nd_rope_forward_ring(float *out, const float *inp, int B, int T, int H, int hs, nd_rope r, int cp, int rank) {
  rotate(out, inp, B, T, H, hs, r, 1.0f, cp, rank);
}

void nd_rope_backward_ring(float *dinp, const float *dout, int B, int T, int H, int hs, nd_rope r, int cp, int rank) {
  rotate(dinp, dout, B, T, H, hs, r, -1.0f, cp, rank);
}
