/* Choosing the next token from its logits (train/generate.c). */
#ifndef ND_TRAIN_SAMPLE_H
#define ND_TRAIN_SAMPLE_H

#include <stdint.h>

/* temperature 0: the largest logit, the lowest id among equal ones; else an
 * id drawn from softmax(logits / temperature) over the top_k largest logits
 * (0: all; ties kept by lower id), with *rng the state of a seeded
 * generator, so that a seed gives the same ids. */
int nd__sample(const float *logits, int V, double temperature, int top_k, uint64_t *rng);

#endif
