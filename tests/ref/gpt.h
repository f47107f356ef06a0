/* A double-precision GPT-2 trainer for tests: one rank, no StarPU, plain
 * loops over the operators of ref.h, written from the README's rules rather
 * than from ndgraph's graph, so that a bug common to every layout of the real
 * trainer shows as a difference from this one. Pre-LayerNorm blocks, tanh
 * GeLU, lm head tied to wte; AdamW with the caller's betas and epsilon,
 * decoupled decay on matrices and embeddings only, gradients clipped by
 * global norm. */
#ifndef ND_TESTS_REF_GPT_H
#define ND_TESTS_REF_GPT_H

#include <stdint.h>

#define ND_REF_GPT_NAME_MAX 48

typedef struct nd_ref_gpt {
  int V, T, C, L, NH;
  int n; /* tensors, in Hugging Face order (wte, wpe, h.0.*, ..., ln_f.*) */
  char (*name)[ND_REF_GPT_NAME_MAX];
  int64_t *numel;
  int *decay; /* matrices and embeddings: 2-D tensors */
  double **param, **grad, **m, **v;
} nd_ref_gpt;

/* Allocates a model of zeros (fill param[] before stepping); 0 or -1. */
int nd_ref_gpt_init(nd_ref_gpt *g, int V, int T, int C, int L, int NH);
void nd_ref_gpt_free(nd_ref_gpt *g);
/* The index of a tensor by Hugging Face name, or -1. */
int nd_ref_gpt_find(const nd_ref_gpt *g, const char *name);

/* The learning rate of step n (1-based) as README documents it: linear
 * warm-up (step n <= warmup has lr * n / warmup),
 * then a cosine from lr down to lr / 10 at `steps`. */
double nd_ref_gpt_lr(double lr, int64_t warmup, int64_t steps, int64_t n);

/* One optimizer step number t (1-based) on B sequences: inputs (B, T),
 * targets (B, T). Returns the mean cross-entropy before the update; the
 * gradient's global norm (before clipping) in *grad_norm. */
double nd_ref_gpt_step(nd_ref_gpt *g, const int32_t *inputs, const int32_t *targets, int B, double lr, double beta1,
                       double beta2, double eps, double weight_decay, double grad_clip, int t, double *grad_norm);

#endif
