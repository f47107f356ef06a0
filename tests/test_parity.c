/* Every data x tensor x pipeline layout reproduces the single-rank reference:
 * the loss at each of 5 steps within 1e-4 relative, and the whole gradient of
 * the first step, gathered into the single-rank layout, within 1e-5 relative.
 * Groups of 3 and 4 (dp 3 and 4, tp 4) too, against a reference of the
 * same global batch. */
#include <math.h>

#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define STEPS 5

/* Settings of every run besides the layout: none for GPT-2; tests/test_parity_llama.c
 * defines PARITY_MODEL to train the Llama architecture instead. */
#ifndef PARITY_MODEL
#define PARITY_MODEL NULL
#endif
/* The widest tensor-parallel group the model splits into (Llama: its key/value heads). */
#ifndef PARITY_MAX_TP
#define PARITY_MAX_TP 4
#endif
/* The first gradient's tolerance: fp32 sums in another order differ by about
 * 1e-6; under bf16 such a difference can move a GEMM input across a rounding
 * boundary of bf16 (a unit of 2^-8), tests/test_parity_bf16.c. */
#ifndef PARITY_GRAD_TOL
#define PARITY_GRAD_TOL 1e-5
#endif
static const char *const model[] = {PARITY_MODEL, NULL};

/* The layout's overrides with the model's settings, STEPS steps. */
static int train(const char *const *overrides, run_result *out) {
  const char *all[32];
  int n = 0;
  for (const char *const *kv = overrides; *kv && n < 16; kv++) all[n++] = *kv;
  for (const char *const *kv = model; *kv && n < 31; kv++) all[n++] = *kv;
  all[n] = NULL;
  return run_collect(all, STEPS, 0, out);
}

/* One layout against its single-rank reference: losses and the first gradient. */
static void check_layout(const char *name, const char *const *ov, const run_result *ref) {
  run_result r;
  if (!ok(train(ov, &r) == 0, "%s: trains", name)) {
    run_result_free(&r);
    return;
  }
  double worst = 0;
  for (int s = 0; s < STEPS; s++) worst = fmax(worst, fabs(r.loss[s] - ref->loss[s]) / ref->loss[s]);
  ok(worst < 1e-4, "%s: losses of %d steps within %.2e relative (need 1e-4)", name, STEPS, worst);
  double ge = run_grad_err(&r, ref);
  ok(ge < PARITY_GRAD_TOL, "%s: first gradient within %.2e relative (need %.0e)", name, ge, PARITY_GRAD_TOL);
  run_result_free(&r);
}

/* A layout {dp, tp, pp, micro-batches} of `seqs` sequences per step. */
static void check_wide(const int l[4], int seqs, const run_result *ref) {
  char kv[6][64], name[96];
  if (l[1] > PARITY_MAX_TP) return; /* the model has fewer heads to split than this group */
  snprintf(kv[0], sizeof kv[0], "parallelism.data_parallel_size=%d", l[0]);
  snprintf(kv[1], sizeof kv[1], "parallelism.tensor_parallel_size=%d", l[1]);
  snprintf(kv[2], sizeof kv[2], "parallelism.pipeline_parallel_size=%d", l[2]);
  snprintf(kv[3], sizeof kv[3], "parallelism.micro_batches=%d", l[3]);
  snprintf(kv[4], sizeof kv[4], "train.micro_batch_size=%d", seqs / (l[0] * l[3]));
  snprintf(kv[5], sizeof kv[5], "parallelism.activation_slots=%d", l[3] > 1 ? 2 : 1);
  const char *ov[] = {kv[0], kv[1], kv[2], kv[3], kv[4], kv[5], NULL};
  snprintf(name, sizeof name, "dp %d tp %d pp %d micro-batches %d (%d sequences)", l[0], l[1], l[2], l[3], seqs);
  check_layout(name, ov, ref);
}

int main(void) {
  run_result ref;
  if (!ok(train(single_rank, &ref) == 0, "single-rank reference trains")) return done_testing();
  ok(ref.loss[STEPS - 1] < ref.loss[0], "reference loss falls (%.4f -> %.4f)", ref.loss[0], ref.loss[STEPS - 1]);

  char kv[8][64];
  for (int dp = 1; dp <= 2; dp++)
    for (int tp = 1; tp <= 2; tp++)
      for (int pp = 1; pp <= 2; pp++)
        for (int mb = 1; mb <= 4; mb *= 4)
          for (int uneven = 0; uneven <= (pp == 2 && dp == 1 && tp == 1 && mb == 4); uneven++) {
            snprintf(kv[0], sizeof kv[0], "parallelism.data_parallel_size=%d", dp);
            snprintf(kv[1], sizeof kv[1], "parallelism.tensor_parallel_size=%d", tp);
            snprintf(kv[2], sizeof kv[2], "parallelism.pipeline_parallel_size=%d", pp);
            snprintf(kv[3], sizeof kv[3], "parallelism.micro_batches=%d", mb);
            snprintf(kv[4], sizeof kv[4], "train.micro_batch_size=%d", 8 / (dp * mb));
            snprintf(kv[5], sizeof kv[5], "parallelism.activation_slots=%d", mb > 1 ? 2 : 1);
            snprintf(kv[6], sizeof kv[6], "parallelism.stage_layers=%s", uneven ? "[1,2]" : "[]");
            const char *ov[] = {kv[0], kv[1], kv[2], kv[3], kv[4], kv[5], kv[6], NULL};
            char name[96];
            snprintf(name, sizeof name, "dp %d tp %d pp %d micro-batches %d%s", dp, tp, pp, mb,
                     uneven ? " stage_layers [1,2]" : "");
            check_layout(name, ov, &ref);
          }

  /* groups of 3 and 4: the all-reduces over data and tensor ranks have more
   * than 2 parts, where a sum of the first two, or in another order, shows */
  static const int wide[][4] = {{4, 1, 1, 1}, {1, 4, 1, 1}, {2, 4, 2, 2}, {4, 2, 1, 2}};
  for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) check_wide(wide[i], 8, &ref);
  run_result ref6;
  const char *single6[] = {"parallelism.data_parallel_size=1",
                           "parallelism.tensor_parallel_size=1",
                           "parallelism.pipeline_parallel_size=1",
                           "parallelism.micro_batches=1",
                           "parallelism.activation_slots=1",
                           "train.micro_batch_size=6",
                           NULL};
  if (ok(train(single6, &ref6) == 0, "single-rank reference of 6 sequences per step trains")) {
    static const int three[][4] = {{3, 1, 1, 1}, {3, 2, 1, 2}, {3, 4, 2, 1}};
    for (size_t i = 0; i < sizeof three / sizeof three[0]; i++) check_wide(three[i], 6, &ref6);
  }
  run_result_free(&ref6);
  run_result_free(&ref);
  return done_testing();
}
