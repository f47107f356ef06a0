/* RoPE's frequencies, shared by the graph (task arguments) and every
 * backend's rotation (the CPU's and a device compiler's through this
 * header; OpenCL's kernels.cl is its twin): theta, and Llama 3's scaling of
 * the long wavelengths (factor 1: none, the default RoPE). Plain C. */
#ifndef ND_COMMON_ROPE_H
#define ND_COMMON_ROPE_H

#include <math.h>

/* a backend whose compiler needs qualifiers for code that runs on the
 * device and the host defines ND_ROPE_FN first */
#ifndef ND_ROPE_FN
#define ND_ROPE_FN static inline
#endif

typedef struct nd_rope {
  float theta;
  /* llama3 (Hugging Face's rope_type): wavelengths longer than
   * context / low are divided by factor, those shorter than context / high
   * kept, those between blended; context is original_max_position_embeddings */
  float factor, low, high, context;
} nd_rope;

/* The default RoPE of base theta. */
#define ND_ROPE_DEFAULT(theta) ((nd_rope){(theta), 1.0f, 1.0f, 4.0f, 8192.0f})

/* The angle per position of pair i of a head of hs: theta^(-2i/hs), in
 * single precision as Hugging Face computes it, then Llama 3's scaling. */
ND_ROPE_FN float nd_rope_inv_freq(nd_rope r, int i, int hs) {
  float inv = 1.0f / powf(r.theta, (float)(2 * i) / (float)hs);
  if (r.factor == 1.0f) return inv;
  /* a wavelength in positions: the longest ones were never seen whole in
   * the original context, and are stretched by factor */
  float wavelen = 6.283185307179586f / inv;
  if (wavelen > r.context / r.low) return inv / r.factor;
  if (wavelen < r.context / r.high) return inv;
  float smooth = (r.context / wavelen - r.low) / (r.high - r.low);
  return (1.0f - smooth) * inv / r.factor + smooth * inv;
}

#endif
