/* Priorities from measured durations: a cold first micro-batch or one slow
 * task in the measured step leaves every priority as it was (each task takes
 * its class's lower quartile), while slower work of a whole kind changes
 * them (the measurement is used at all). */
#include <stdlib.h>
#include <string.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "scheduler/hints.h"
#include "placement/placement.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

static int runs_anywhere(const void *ctx, const nd_task *t, int unit_kind) {
  (void)ctx, (void)t, (void)unit_kind;
  return 1;
}

/* The priorities computed from measured, into prio (n_tasks). */
static int priorities(const nd_graph *g, const nd_config *cfg, const nd_rank_map *pl, const double *measured,
                      int *prio) {
  nd_unit_check can = {runs_anywhere, NULL};
  nd_hints h;
  int rc = nd_hints_compute(g, cfg, pl, &can, measured, -100, 100, &h);
  if (rc) return rc;
  memcpy(prio, h.priority, (size_t)g->n_tasks * sizeof *prio);
  nd_hints_free(&h);
  return 0;
}

int main(void) {
  nd_config *cfg = tiny_config((const char *const[]){"train.micro_batch_size=1", "parallelism.micro_batches=8",
                                                     "parallelism.pipeline_parallel_size=2", "runtime.scheduler=ndws",
                                                     "runtime.placement=strict", NULL});
  nd_graph *g = NULL;
  nd_error err = {0};
  nd_unit units[2] = {{NULL, 0, ND_BACKEND_CPU, 0, 0}, {NULL, 1, ND_BACKEND_CPU, 0, 1}};
  nd_rank_map pl;
  int rc = !cfg || nd_graph_build(&g, cfg, 0, &err) || nd_place(units, 2, 1, 2, 1, &pl);
  ok(!rc, "pp 2, 8 micro-batches on 2 workers (%s)", err.msg);
  if (rc) {
    nd_graph_free(g);
    nd_config_free(cfg);
    return done_testing();
  }
  size_t n = (size_t)g->n_tasks;
  double *steady = malloc(n * sizeof *steady), *cold = malloc(n * sizeof *cold);
  int *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
  /* equal work, equal time: a duration from the task's size alone */
  for (size_t i = 0; i < n; i++) steady[i] = 2e-6 + (double)g->tasks[i].flops * 1e-10;
  int32_t slow = -1;
  for (size_t i = 0; i < n; i++) {
    const nd_task *t = &g->tasks[i];
    cold[i] = steady[i] * (t->micro_batch == 0 ? 3.0 : 1.0); /* first touches of the first micro-batch */
    if (slow < 0 && t->kind == ND_TASK_MATMUL_FWD && t->micro_batch == 5) slow = (int32_t)i;
  }
  cold[slow] *= 20; /* another process's burst */
  rc = priorities(g, cfg, &pl, steady, want) || priorities(g, cfg, &pl, cold, got);
  ok(!rc && memcmp(want, got, n * sizeof *want) == 0,
     "a cold first micro-batch and one 20x slower task leave every priority unchanged");
  /* the same shape of measurement, but every GeLU 50x slower: real, so the ranks move */
  for (size_t i = 0; i < n; i++) cold[i] = steady[i] * (g->tasks[i].kind == ND_TASK_ACT_FWD ? 50.0 : 1.0);
  rc = priorities(g, cfg, &pl, cold, got);
  ok(!rc && memcmp(want, got, n * sizeof *want) != 0, "every GeLU forward 50x slower changes the priorities");
  free(steady), free(cold), free(want), free(got);
  nd_rank_map_free(&pl);
  nd_graph_free(g);
  nd_config_free(cfg);
  return done_testing();
}
