/* Initial values of GPT-2's parameters. */
#ifndef ND_TRAIN_INIT_H
#define ND_TRAIN_INIT_H

#include <stdint.h>

/* Fills the whole tensor `hf_name` (n elements): normal(0, 0.02) for matrices
 * and embeddings, scaled by 1/sqrt(2 n_layer) for the two residual output
 * projections, LayerNorm weights 1, biases 0. The values depend on the seed and
 * the name only, never on the layout or the order of the calls. */
void nd_init_tensor(float *out, const char *hf_name, int64_t n, int n_layer, uint64_t seed);

#endif
