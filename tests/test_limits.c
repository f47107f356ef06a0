/* No hidden limits: layouts past the old fixed sizes (64 accesses per task,
 * 64 tensor-parallel ranks, 32 workers in a bitmap) build whole graphs and
 * whole worker masks, and the configuration bounds the rank count itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "scheduler/hints.h"
#include "placement/placement.h"
#include "tests/tap.h"

/* A small model with the given assignments on top ("k=v", NULL-terminated). */
static nd_config *config(const char *const *sets) {
  static const char *const base[] = {"model.n_layer=2",
                                     "model.n_embd=32",
                                     "model.n_head=4",
                                     "model.seq_len=8",
                                     "train.micro_batch_size=1",
                                     "parallelism.micro_batches=1",
                                     "parallelism.pipeline_parallel_size=1",
                                     NULL};
  nd_config *cfg;
  nd_error err = {0};
  if (nd_config_new(&cfg)) return NULL;
  for (int i = 0; base[i]; i++)
    if (nd_config_set_assignment(cfg, base[i], &err)) goto bad;
  for (int i = 0; sets[i]; i++)
    if (nd_config_set_assignment(cfg, sets[i], &err)) goto bad;
  if (nd_config_validate(cfg, &err)) goto bad;
  return cfg;
bad:
  diag("config: %s", err.msg);
  nd_config_free(cfg);
  return NULL;
}

static nd_graph *build(const char *const *sets, nd_error *err) {
  nd_config *cfg = config(sets);
  nd_graph *g = NULL;
  if (cfg && nd_graph_build(&g, cfg, 0, err)) g = NULL;
  nd_config_free(cfg);
  return g;
}

/* dp 65: every data-parallel all-reduce holds all 65 gradients (a task's
 * accesses were cut at 64, and the kernel read past the buffers StarPU gave). */
static void test_wide_allreduce(void) {
  nd_error err = {0};
  nd_graph *g = build((const char *const[]){"parallelism.data_parallel_size=65", NULL}, &err);
  ok(g != NULL, "dp 65 builds (%s)", err.msg);
  int n = 0, whole = 1;
  for (int32_t i = 0; g && i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (t->kind != ND_TASK_ALLREDUCE || t->group != ND_GROUP_DP) continue;
    n++;
    whole &= t->n_access == 65 && t->a.coll.nparts == 65;
  }
  ok(n > 0 && whole, "each of the %d data-parallel all-reduces has 65 parts", n);
  nd_graph_free(g);
}

/* One rank with many layers: its gradient-norm task reads every primary gradient. */
static void test_many_gradients(void) {
  nd_error err = {0};
  nd_graph *g = build((const char *const[]){"model.n_layer=12", NULL}, &err);
  ok(g != NULL, "12 layers on one rank build (%s)", err.msg);
  int grads = 0, read = -1;
  for (int32_t i = 0; g && i < g->n_tensors; i++)
    grads += g->tensors[i].kind == ND_TENSOR_GRAD && g->tensors[i].primary;
  for (int32_t i = 0; g && i < g->n_tasks; i++)
    if (g->tasks[i].kind == ND_TASK_GRAD_SUMSQ) read = g->tasks[i].n_access - 1;
  ok(grads > 64 && read == grads, "the gradient norm reads all %d gradients (reads %d)", grads, read);
  nd_graph_free(g);
}

/* Tensor parallelism past 64 (ND_MAX_STAGES was its cap though the key allows 1024). */
static void test_wide_tensor_parallel(void) {
  nd_error err = {0};
  nd_graph *g = build((const char *const[]){"model.n_layer=1", "model.n_head=128", "model.n_embd=128",
                                            "parallelism.tensor_parallel_size=128", NULL},
                      &err);
  ok(g != NULL, "tp 128 builds (%s)", err.msg);
  nd_graph_free(g);
}

/* The configuration bounds the product of the sizes, with the numbers. */
static void test_rank_limit(void) {
  nd_config *cfg;
  nd_error err = {0};
  nd_config_new(&cfg);
  nd_config_set_assignment(cfg, "parallelism.data_parallel_size=1024", &err);
  nd_config_set_assignment(cfg, "parallelism.tensor_parallel_size=8", &err);
  nd_config_set_assignment(cfg, "model.n_head=8", &err);
  nd_config_set_assignment(cfg, "model.n_embd=64", &err);
  int rc = nd_config_validate(cfg, &err);
  ok(rc == ND_ECONFIG && strstr(err.msg, "= 16384 ranks, at most 4096"), "dp 1024 x tp 8 x pp 2 refused: %s", err.msg);
  nd_config_free(cfg);
}

static int runs_anywhere(const void *ctx, const nd_task *t, int unit_kind) {
  (void)ctx, (void)t, (void)unit_kind;
  return 1;
}

/* 40 workers: masks of two words, the bit of a worker past 31 set. */
static void test_wide_masks(const char *scheduler, const char *placement) {
  char s[64], p[64];
  snprintf(s, sizeof s, "runtime.scheduler=%s", scheduler);
  snprintf(p, sizeof p, "runtime.placement=%s", placement);
  nd_config *cfg = config((const char *const[]){"parallelism.data_parallel_size=40", s, p, NULL});
  nd_graph *g = NULL;
  nd_error err = {0};
  nd_unit units[40];
  for (int i = 0; i < 40; i++) units[i] = (nd_unit){NULL, i, ND_BACKEND_CPU, 0, i};
  nd_rank_map pl;
  nd_hints h;
  int rc = !cfg || nd_graph_build(&g, cfg, 0, &err) || nd_place(units, 40, 40, 1, 1, &pl);
  ok(!rc, "%s, %s: 40 ranks on 40 workers placed (%s)", scheduler, placement, err.msg);
  if (rc) goto out;
  nd_unit_check can = {runs_anywhere, NULL};
  rc = nd_hints_compute(g, cfg, &pl, &can, NULL, -5, 5, &h);
  int good = !rc && h.workers && h.mask_words == 2, seen39 = 0;
  for (int32_t i = 0; good && i < g->n_tasks; i++) {
    const uint32_t *m = &h.workers[(size_t)i * 2];
    int r = nd_rank_index(g, g->tasks[i].rank), w = pl.units[pl.first[r]].id;
    good &= (m[w / 32] >> (w % 32)) & 1;
    seen39 |= w == 39;
  }
  ok(good && seen39, "%s, %s: every task's mask has its rank's worker, worker 39 included", scheduler, placement);
  if (!rc) nd_hints_free(&h);
  nd_rank_map_free(&pl);
out:
  nd_graph_free(g);
  nd_config_free(cfg);
}

int main(void) {
  test_wide_allreduce();
  test_many_gradients();
  test_wide_tensor_parallel();
  test_rank_limit();
  test_wide_masks("ndws", "strict");
  test_wide_masks("1f1b", "affinity");
  return done_testing();
}
