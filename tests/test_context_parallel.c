/* Context parallelism (parallelism.context_parallel_size) reproduces the
 * single rank at seq_len 256: GPT-2, cp 2 and cp 4 alone and cp 2 with
 * tensor, pipeline and data parallelism and with train.recompute; Llama, cp 2
 * and cp 4 alone and cp 2 with tensor and pipeline parallelism; the loss of each of 10 steps within
 * 1e-5 relative, the first step's whole gradient, gathered into the
 * single-rank layout, and the evaluation loss after the steps within 1e-5
 * relative. */
#include <math.h>

#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define STEPS 10

/* The model family's settings: none for GPT-2; Llama's grouped-query heads (2
 * key/value heads for 4) and MLP width, as tests/test_parity_llama. */
static const char *const gpt2[] = {NULL};
static const char *const llama[] = {"model.arch=llama", "model.n_kv_head=2", "model.intermediate_size=96", NULL};
static const char *const *family = gpt2;

/* The family at seq_len 256 and 2 layers with the layout's overrides: STEPS
 * steps, then the evaluation loss of 16 sequences. */
static int train(const char *const *layout, run_result *out) {
  const char *all[20];
  int n = 0;
  all[n++] = "model.seq_len=256";
  all[n++] = "model.n_layer=2";
  for (const char *const *kv = family; *kv; kv++) all[n++] = *kv;
  int mbs = 8; /* sequences per micro-batch */
  for (const char *const *kv = layout; *kv && n < 19; kv++) {
    sscanf(*kv, "train.micro_batch_size=%d", &mbs);
    all[n++] = *kv;
  }
  all[n] = NULL;
  return run_collect(all, STEPS, 16 / mbs, out);
}

static void check(const char *name, const char *const *layout, const run_result *ref) {
  run_result r;
  if (ok(train(layout, &r) == 0, "%s: trains", name)) {
    double worst = 0;
    for (int s = 0; s < STEPS; s++) worst = fmax(worst, fabs(r.loss[s] - ref->loss[s]) / ref->loss[s]);
    ok(worst < 1e-5, "%s: losses of %d steps within %.2e relative (need 1e-5)", name, STEPS, worst);
    double ge = run_grad_err(&r, ref);
    ok(ge < 1e-5, "%s: first gradient within %.2e relative (need 1e-5)", name, ge);
    double ve = fabs(r.val - ref->val) / ref->val;
    ok(ve < 1e-5, "%s: evaluation loss of 16 sequences within %.2e relative (need 1e-5)", name, ve);
  }
  run_result_free(&r);
}

int main(void) {
  run_result ref;
  if (!ok(train(single_rank, &ref) == 0, "single-rank reference trains")) return done_testing();
  ok(ref.loss[STEPS - 1] < ref.loss[0], "reference loss falls (%.4f -> %.4f)", ref.loss[0], ref.loss[STEPS - 1]);
#define ONE "parallelism.data_parallel_size=1", "parallelism.tensor_parallel_size=1"
  const char *cp2[] = {ONE, "parallelism.pipeline_parallel_size=1", "parallelism.micro_batches=1",
                       "parallelism.activation_slots=1", "train.micro_batch_size=8",
                       "parallelism.context_parallel_size=2", NULL};
  check("cp 2", cp2, &ref);
  const char *cp4[] = {ONE, "parallelism.pipeline_parallel_size=1", "parallelism.micro_batches=1",
                       "parallelism.activation_slots=1", "train.micro_batch_size=8",
                       "parallelism.context_parallel_size=4", NULL};
  check("cp 4", cp4, &ref);
  const char *tp2[] = {"parallelism.data_parallel_size=1", "parallelism.tensor_parallel_size=2",
                       "parallelism.pipeline_parallel_size=1", "parallelism.micro_batches=1",
                       "parallelism.activation_slots=1", "train.micro_batch_size=8",
                       "parallelism.context_parallel_size=2", NULL};
  check("cp 2 tp 2", tp2, &ref);
  const char *pp2[] = {ONE, "parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=2",
                       "parallelism.activation_slots=2", "train.micro_batch_size=4",
                       "parallelism.context_parallel_size=2", NULL};
  check("cp 2 pp 2 micro-batches 2", pp2, &ref);
  const char *dp2[] = {"parallelism.data_parallel_size=2", "parallelism.tensor_parallel_size=1",
                       "parallelism.pipeline_parallel_size=1", "parallelism.micro_batches=1",
                       "parallelism.activation_slots=1", "train.micro_batch_size=4",
                       "parallelism.context_parallel_size=2", NULL};
  check("cp 2 dp 2", dp2, &ref);
  const char *attn[] = {ONE, "parallelism.pipeline_parallel_size=1", "parallelism.micro_batches=1",
                        "parallelism.activation_slots=1", "train.micro_batch_size=8",
                        "parallelism.context_parallel_size=2", "train.recompute=attention", NULL};
  check("cp 2 recompute attention", attn, &ref);
  const char *layer[] = {ONE, "parallelism.pipeline_parallel_size=1", "parallelism.micro_batches=1",
                         "parallelism.activation_slots=1", "train.micro_batch_size=8",
                         "parallelism.context_parallel_size=2", "train.recompute=layer", NULL};
  check("cp 2 recompute layer", layer, &ref);
  run_result_free(&ref);

  /* Llama: RoPE at the chunks' positions, grouped-query ring blocks */
  family = llama;
  if (!ok(train(single_rank, &ref) == 0, "llama: single-rank reference trains")) return done_testing();
  check("llama cp 2", cp2, &ref);
  check("llama cp 4", cp4, &ref);
  check("llama cp 2 tp 2", tp2, &ref);
  check("llama cp 2 pp 2 micro-batches 2", pp2, &ref);
  run_result_free(&ref);
  return done_testing();
}
