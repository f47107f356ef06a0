/* train.recompute: `layer` and `attention` train the same bits as `none`
 * (losses and gradient norms of a few steps, GPT-2 and Llama, one rank and
 * dp 2, tp 2, pp 2), and the plan's activation bytes per rank fall as
 * docs/memory.md says: under `layer` the activations tied to a layer are at
 * most 1/n_layer of `none`'s, and all of them at most that plus one layer's
 * working set (one layer of `none`'s activations and the stage's own);
 * the measured tensor bytes per rank (nd_trainer_memory) fall too. */
#include <string.h>

#include "graph/ir.h"
#include "graph/plan.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define STEPS 3

static const char *const modes[] = {"none", "attention", "layer"};

/* Trains STEPS steps; loss and grad_norm of each into out[2 * step + k]. */
static int train(const char *const *layout, const char *arch, const char *mode, double *out, nd_memory_use *mem) {
  char kv[3][64];
  snprintf(kv[0], sizeof kv[0], "model.arch=%s", arch);
  snprintf(kv[1], sizeof kv[1], "train.recompute=%s", mode);
  snprintf(kv[2], sizeof kv[2], "model.n_kv_head=%d", strcmp(arch, "llama") == 0 ? 2 : 0);
  const char *ov[16];
  int n = 0;
  ov[n++] = kv[0];
  ov[n++] = kv[1];
  if (strcmp(arch, "llama") == 0) ov[n++] = kv[2], ov[n++] = "model.intermediate_size=96";
  for (const char *const *l = layout; *l; l++) ov[n++] = *l;
  ov[n] = NULL;
  nd_config *cfg = tiny_config(ov);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  int rc = -1;
  if (cfg && !(rc = nd_trainer_open(&tr, cfg, &err))) {
    for (int i = 0; i < STEPS && !rc; i++) {
      nd_step_result r;
      if ((rc = nd_trainer_step(tr, &r, &err))) fprintf(stderr, "# step: %s\n", err.msg);
      out[2 * i] = r.loss, out[2 * i + 1] = r.grad_norm;
    }
    nd_trainer_memory(tr, mem);
  } else if (cfg) {
    fprintf(stderr, "# open: %s\n", err.msg);
  }
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

/* Also the measured tensor bytes of the rank that holds the most: lower
 * under layer than none (the tiny model's activations outweigh its state). */
static void check_bits(const char *name, const char *const *layout, const char *arch) {
  double ref[2 * STEPS], got[2 * STEPS];
  nd_memory_use none, mem;
  if (!ok(train(layout, arch, "none", ref, &none) == 0, "%s %s: none trains", arch, name)) return;
  for (int m = 1; m < 3; m++)
    if (ok(train(layout, arch, modes[m], got, &mem) == 0, "%s %s: %s trains", arch, name, modes[m])) {
      ok(memcmp(ref, got, sizeof ref) == 0, "%s %s: %s: losses and gradient norms of %d steps bit for bit (%.9g %.9g)",
         arch, name, modes[m], STEPS, got[2 * STEPS - 2], ref[2 * STEPS - 2]);
      ok(mem.rank_peak < none.rank_peak && mem.rss_peak > 0,
         "%s %s: %s: measured tensor bytes of a rank %lld < none's %lld (peak RSS %lld)", arch, name, modes[m],
         mem.rank_peak, none.rank_peak, mem.rss_peak);
    }
}

typedef struct act_bytes {
  int64_t total, layered, one_layer, stage; /* of rank 0's activations */
} act_bytes;

/* Rank (0, 0, 0)'s activations in the step graph of `arch` under `mode`. */
static int plan_acts(const char *const *layout, const char *arch, const char *mode, act_bytes *a, int *layers) {
  char kv[2][64];
  snprintf(kv[0], sizeof kv[0], "model.arch=%s", arch);
  snprintf(kv[1], sizeof kv[1], "train.recompute=%s", mode);
  const char *ov[16] = {kv[0], kv[1], "model.n_layer=8", "model.seq_len=32"};
  int n = 4;
  for (const char *const *l = layout; *l; l++) ov[n++] = *l;
  ov[n] = NULL;
  nd_config *cfg = tiny_config(ov);
  nd_graph *g = NULL;
  nd_plan p;
  nd_error err = {0};
  int rc = cfg ? nd_graph_build(&g, cfg, 0, &err) : -1;
  if (!rc) rc = nd_plan_compute(g, &p);
  if (!rc) {
    memset(a, 0, sizeof *a);
    a->total = p.memory[0].bytes[ND_TENSOR_ACTIVATION];
    for (int32_t i = 0; i < g->n_tensors; i++) {
      const nd_tensor *t = &g->tensors[i];
      if (t->kind != ND_TENSOR_ACTIVATION || nd_rank_index(g, t->home) != 0) continue;
      if (t->layer >= 0) a->layered += t->bytes;
      if (t->layer == 0) a->one_layer += t->bytes;
      if (t->layer < 0) a->stage += t->bytes;
    }
    *layers = g->stage_layers[0];
    nd_plan_free(&p);
  }
  nd_graph_free(g);
  nd_config_free(cfg);
  return rc;
}

static void check_plan(const char *name, const char *const *layout, const char *arch) {
  act_bytes none, att, layer;
  int L = 0;
  if (!ok(plan_acts(layout, arch, "none", &none, &L) == 0 && plan_acts(layout, arch, "attention", &att, &L) == 0 &&
              plan_acts(layout, arch, "layer", &layer, &L) == 0,
          "%s %s: plans build", arch, name))
    return;
  ok(layer.layered * L <= none.total, "%s %s: layer: activations tied to a layer %lld <= none's %lld / %d", arch, name,
     (long long)layer.layered, (long long)none.total, L);
  int64_t bound = none.total / L + none.one_layer + none.stage;
  ok(layer.total <= bound, "%s %s: layer: activations %lld <= none / %d + one layer's working set = %lld", arch, name,
     (long long)layer.total, L, (long long)bound);
  ok(layer.total < att.total && att.total < none.total, "%s %s: layer %lld < attention %lld < none %lld", arch, name,
     (long long)layer.total, (long long)att.total, (long long)none.total);
}

int main(void) {
  static const char *const one[] = {"parallelism.pipeline_parallel_size=1", "parallelism.micro_batches=1",
                                    "train.micro_batch_size=8", NULL};
  static const char *const dp2[] = {"parallelism.data_parallel_size=2", "parallelism.pipeline_parallel_size=1",
                                    "parallelism.micro_batches=2", "train.micro_batch_size=2", NULL};
  static const char *const tp2[] = {"parallelism.tensor_parallel_size=2", "parallelism.pipeline_parallel_size=1",
                                    "parallelism.micro_batches=2", "train.micro_batch_size=4", NULL};
  static const char *const pp2[] = {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=4",
                                    "train.micro_batch_size=2", NULL};
  static const struct {
    const char *name;
    const char *const *layout;
  } layouts[] = {{"single rank", one}, {"dp 2", dp2}, {"tp 2", tp2}, {"pp 2", pp2}};
  static const char *const archs[] = {"gpt2", "llama"};
  for (int a = 0; a < 2; a++)
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
      check_plan(layouts[l].name, layouts[l].layout, archs[a]);
      check_bits(layouts[l].name, layouts[l].layout, archs[a]);
    }
  return done_testing();
}
