/* Helpers for tests that train through the public API. */
#ifndef ND_TESTS_RUNTIME_HARNESS_H
#define ND_TESTS_RUNTIME_HARNESS_H

#include <math.h>
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

/* What a run gave for comparison with a reference: each step's loss, the
 * first step's whole gradients (gathered into the single-rank layout) and,
 * when asked for, the evaluation loss after the steps. */
#define RUN_MAX_STEPS 16
typedef struct run_result {
  double loss[RUN_MAX_STEPS], val;
  int n;            /* tensors */
  float **grad;     /* [n] whole gradients after step 1 */
  long long *numel; /* [n] */
} run_result;

static inline void run_result_free(run_result *r) {
  for (int i = 0; i < r->n; i++) free(r->grad[i]);
  free(r->grad);
  free(r->numel);
}

/* Opens a trainer on the tiny model with `overrides`, trains `steps` steps
 * (at most RUN_MAX_STEPS) gathering every gradient after the first, then
 * evaluates `eval_batches` batches when that is not 0. Returns 0 or the error
 * (told on stderr); out is to be freed either way. */
static inline int run_collect(const char *const *overrides, int steps, long long eval_batches, run_result *out) {
  memset(out, 0, sizeof *out);
  nd_config *cfg = tiny_config(overrides);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  int rc = -1;
  if (!cfg || steps < 1 || steps > RUN_MAX_STEPS || nd_trainer_open(&tr, cfg, &err)) {
    fprintf(stderr, "# open: %s\n", err.msg);
    goto done;
  }
  while (nd_trainer_tensor_name(tr, out->n, NULL)) out->n++;
  out->grad = calloc((size_t)out->n, sizeof *out->grad);
  out->numel = calloc((size_t)out->n, sizeof *out->numel);
  if (train_losses(tr, 1, out->loss)) goto done;
  for (int i = 0; i < out->n; i++) {
    const char *name = nd_trainer_tensor_name(tr, i, &out->numel[i]);
    out->grad[i] = malloc((size_t)out->numel[i] * sizeof(float));
    if (nd_trainer_gather(tr, name, ND_GATHER_GRAD, out->grad[i], out->numel[i])) goto done;
  }
  rc = train_losses(tr, steps - 1, out->loss + 1);
  long long tokens = 0;
  if (!rc && eval_batches && (rc = nd_trainer_eval(tr, NULL, eval_batches, &out->val, &tokens, &err)))
    fprintf(stderr, "# eval: %s\n", err.msg);
done:
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

/* ||g - g_ref|| / ||g_ref|| over the whole model; infinite when the two
 * runs name a different number of tensors. */
static inline double run_grad_err(const run_result *a, const run_result *ref) {
  if (a->n != ref->n) return INFINITY;
  double num = 0, den = 0;
  for (int i = 0; i < ref->n; i++)
    for (long long k = 0; k < ref->numel[i]; k++) {
      double d = (double)a->grad[i][k] - ref->grad[i][k];
      num += d * d;
      den += (double)ref->grad[i][k] * ref->grad[i][k];
    }
  return sqrt(num / den);
}

#endif
