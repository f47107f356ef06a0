/* GPT-2's initial parameters, drawn from the seed so that every layout
 * starts from the same values. */
#include "train/init.h"

#include <math.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* A uniform in (0, 1) from the top 53 bits. */
static double uniform(uint64_t *state) { return ((double)(splitmix64(state) >> 11) + 0.5) / 9007199254740992.0; }

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

void nd_init_tensor(float *out, const char *hf_name, int64_t n, int n_layer, uint64_t seed) {
  if (ends_with(hf_name, ".bias")) {
    memset(out, 0, (size_t)n * sizeof *out);
    return;
  }
  /* LayerNorm (GPT-2) and RMSNorm (Llama) weights */
  if (strstr(hf_name, "ln_") || ends_with(hf_name, "layernorm.weight") || ends_with(hf_name, "model.norm.weight")) {
    for (int64_t i = 0; i < n; i++) out[i] = 1.0f;
    return;
  }
  double std = 0.02;
  if (ends_with(hf_name, "attn.c_proj.weight") || ends_with(hf_name, "mlp.c_proj.weight")) std /= sqrt(2.0 * n_layer);
  /* a stream per tensor: FNV-1a of the name mixed with the seed */
  uint64_t state = 1469598103934665603ULL;
  for (const char *p = hf_name; *p; p++) state = (state ^ (uint8_t)*p) * 1099511628211ULL;
  state ^= seed * 0x9e3779b97f4a7c15ULL;
  for (int64_t i = 0; i < n; i += 2) { /* Box-Muller: two normals per pair of uniforms */
    double r = sqrt(-2.0 * log(uniform(&state))), a = 2.0 * M_PI * uniform(&state);
    out[i] = (float)(std * r * cos(a));
    if (i + 1 < n) out[i + 1] = (float)(std * r * sin(a));
  }
}
