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

typedef struct run {
  double loss[STEPS], val; /* val: the evaluation loss of 16 sequences after the steps */
  int n;
  float **grad;
  long long *numel;
} run;

static void run_free(run *r) {
  for (int i = 0; i < r->n; i++) free(r->grad[i]);
  free(r->grad);
  free(r->numel);
}

/* The model family's settings: none for GPT-2; Llama's grouped-query heads (2
 * key/value heads for 4) and MLP width, as tests/test_parity_llama. */
static const char *const gpt2[] = {NULL};
static const char *const llama[] = {"model.arch=llama", "model.n_kv_head=2", "model.intermediate_size=96", NULL};
static const char *const *family = gpt2;

static int train(const char *const *layout, run *out) {
  memset(out, 0, sizeof *out);
  const char *all[20];
  int n = 0;
  all[n++] = "model.seq_len=256";
  all[n++] = "model.n_layer=2";
  for (const char *const *kv = family; *kv; kv++) all[n++] = *kv;
  int mbs = 8; /* sequences per micro-batch: the evaluation reads 16 sequences */
  for (const char *const *kv = layout; *kv && n < 19; kv++) {
    sscanf(*kv, "train.micro_batch_size=%d", &mbs);
    all[n++] = *kv;
  }
  all[n] = NULL;
  nd_config *cfg = tiny_config(all);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  int rc = -1;
  if (!cfg || nd_trainer_open(&tr, cfg, &err)) {
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
  rc = train_losses(tr, STEPS - 1, out->loss + 1);
  long long tokens = 0;
  if (!rc && (rc = nd_trainer_eval(tr, NULL, 16 / mbs, &out->val, &tokens, &err)))
    fprintf(stderr, "# eval: %s\n", err.msg);
done:
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

static double grad_rel_err(const run *a, const run *ref) {
  double num = 0, den = 0;
  for (int i = 0; i < ref->n && i < a->n; i++)
    for (long long k = 0; k < ref->numel[i]; k++) {
      double d = (double)a->grad[i][k] - ref->grad[i][k];
      num += d * d;
      den += (double)ref->grad[i][k] * ref->grad[i][k];
    }
  return a->n == ref->n ? sqrt(num / den) : INFINITY;
}

static void check(const char *name, const char *const *layout, const run *ref) {
  run r;
  if (ok(train(layout, &r) == 0, "%s: trains", name)) {
    double worst = 0;
    for (int s = 0; s < STEPS; s++) worst = fmax(worst, fabs(r.loss[s] - ref->loss[s]) / ref->loss[s]);
    ok(worst < 1e-5, "%s: losses of %d steps within %.2e relative (need 1e-5)", name, STEPS, worst);
    double ge = grad_rel_err(&r, ref);
    ok(ge < 1e-5, "%s: first gradient within %.2e relative (need 1e-5)", name, ge);
    double ve = fabs(r.val - ref->val) / ref->val;
    ok(ve < 1e-5, "%s: evaluation loss of 16 sequences within %.2e relative (need 1e-5)", name, ve);
  }
  run_free(&r);
}

int main(void) {
  run ref;
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
  run_free(&ref);

  /* Llama: RoPE at the chunks' positions, grouped-query ring blocks */
  family = llama;
  if (!ok(train(single_rank, &ref) == 0, "llama: single-rank reference trains")) return done_testing();
  check("llama cp 2", cp2, &ref);
  check("llama cp 4", cp4, &ref);
  check("llama cp 2 tp 2", tp2, &ref);
  check("llama cp 2 pp 2 micro-batches 2", pp2, &ref);
  run_free(&ref);
  return done_testing();
}
