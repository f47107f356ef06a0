/* Helpers for tests that train through the public API. */
#ifndef ND_TESTS_RUNTIME_HARNESS_H
#define ND_TESTS_RUNTIME_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndgraph/ndgraph.h"

/* The tiny model of the parity tests: 3 layers, n_embd 32, 4 heads, seq_len 16,
 * global batch 8 sequences, byte vocabulary, built-in data. */
static const char *const tiny_model[] = {"model.n_layer=3",      "model.n_embd=32",      "model.n_head=4",
                                         "model.seq_len=16",     "model.vocab_size=256", "train.lr=1e-2",
                                         "train.warmup_steps=2", "train.steps=10",       "train.eval_every=0",
                                         "train.save_dir=",      "runtime.workers=2",    NULL};

/* The single-rank reference layout every parity test compares against:
 * one rank, one micro-batch of the whole global batch. */
static const char *const single_rank[] = {"parallelism.data_parallel_size=1",
                                          "parallelism.tensor_parallel_size=1",
                                          "parallelism.pipeline_parallel_size=1",
                                          "parallelism.micro_batches=1",
                                          "parallelism.activation_slots=1",
                                          "train.micro_batch_size=8",
                                          NULL};

/* A configuration from the tiny model plus overrides (NULL-terminated). */
static inline nd_config *tiny_config(const char *const *overrides) {
  nd_config *cfg;
  nd_error err = {0};
  if (nd_config_new(&cfg)) return NULL;
  for (const char *const *kv = tiny_model; *kv; kv++)
    if (nd_config_set_assignment(cfg, *kv, &err)) goto bad;
  for (const char *const *kv = overrides; kv && *kv; kv++)
    if (nd_config_set_assignment(cfg, *kv, &err)) goto bad;
  if (nd_config_validate(cfg, &err)) goto bad;
  return cfg;
bad:
  fprintf(stderr, "# config: %s\n", err.msg);
  nd_config_free(cfg);
  return NULL;
}

/* Trains `steps` steps; losses[i] gets step i + 1's loss. Returns 0 or the error. */
static inline int train_losses(nd_trainer *tr, int steps, double *losses) {
  nd_error err = {0};
  for (int i = 0; i < steps; i++) {
    nd_step_result r;
    int rc = nd_trainer_step(tr, &r, &err);
    if (rc) {
      fprintf(stderr, "# step: %s\n", err.msg);
      return rc;
    }
    losses[i] = r.loss;
  }
  return 0;
}

/* Opens a trainer on the tiny model with `overrides`, trains `steps` steps
 * into losses[], closes it. Returns 0 or the error (told on stderr). */
static inline int run_losses(const char *const *overrides, int steps, double *losses) {
  nd_config *cfg = tiny_config(overrides);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  int rc = -1;
  if (cfg && !(rc = nd_trainer_open(&tr, cfg, &err)))
    rc = train_losses(tr, steps, losses);
  else if (cfg)
    fprintf(stderr, "# open: %s\n", err.msg);
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

#endif
