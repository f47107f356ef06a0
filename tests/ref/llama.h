/* A double-precision Llama forward for tests: the loss of one sequence, in
 * plain loops, written from Hugging Face's LlamaForCausalLM (RMSNorm,
 * rotate_half rotary embeddings, grouped-query causal attention, SiLU-gated
 * MLP, no biases) rather than from ndgraph's graph. Weights are Hugging Face
 * tensors, [out, in] row-major. */
#ifndef ND_TESTS_REF_LLAMA_H
#define ND_TESTS_REF_LLAMA_H

#include <stdint.h>

typedef struct nd_ref_llama_layer {
  const double *attn_norm, *q, *k, *v, *o;   /* [C], [C, C], [KV*hs, C] x 2, [C, C] */
  const double *mlp_norm, *gate, *up, *down; /* [C], [I, C] x 2, [C, I] */
} nd_ref_llama_layer;

typedef struct nd_ref_llama {
  int V, C, L, NH, KV, I;
  double eps, theta;
  const double *embed, *norm, *head; /* [V, C], [C], [V, C] */
  const nd_ref_llama_layer *layers;  /* [L] */
} nd_ref_llama;

/* Mean cross-entropy of predicting tokens[1..T] from tokens[0..T-1];
 * a negative value when out of memory. */
double nd_ref_llama_loss(const nd_ref_llama *m, const int32_t *tokens, int T);

#endif
