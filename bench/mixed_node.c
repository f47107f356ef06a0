/* bench/mixed-node: one CPU worker beside one OpenCL device (PoCL on a
 * CPU-only machine), pipeline_parallel_size 2, micro_batches 8, a model whose
 * tasks take several ms. For equal stages under 1f1b, equal stages under
 * ndws, auto stages under ndws, and dmdas: the median step time over the
 * measured steps, and from the task durations of that same step
 * (nd_exec_observe) the lower bound max(critical path, total work / 2) and
 * efficiency = bound / step. One table, ratios from one run.
 *
 *   bench/mixed-node [STEPS] [SLOTS]   (measured steps after warm-up, default 3; activation slots, default 2) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ir.h"
#include "graph/priority.h"
#include "ndgraph/ndgraph.h"
#include "train/trainer_internal.h"

#define MAX_STEPS 9

typedef struct obs {
  double *us;
} obs;

static void task_done(void *user, int graph, int32_t task, double start, double end, int worker) {
  (void)worker;
  if (graph == 0) ((obs *)user)->us[task] = end - start;
}

typedef struct row {
  double step_ms, bound_ms, cp_ms, work_ms;
  char split[32];
} row;

static int bench_slots = 2;

static int bench(const char *policy, const char *stages, const char *placement, int steps, row *out) {
  const char *kv[] = {"model.n_layer=8", "model.n_embd=256", "model.n_head=4", "model.seq_len=64",
                      "model.vocab_size=256", "train.micro_batch_size=8", "parallelism.pipeline_parallel_size=2",
                      "parallelism.micro_batches=8", "runtime.workers=1",
                      "runtime.opencl_devices=1", "train.eval_every=0", "train.save_dir=", "train.steps=100", NULL};
  char a[4][64];
  snprintf(a[0], sizeof a[0], "runtime.scheduler=%s", policy);
  snprintf(a[1], sizeof a[1], "parallelism.stage_layers=%s", stages);
  snprintf(a[2], sizeof a[2], "runtime.placement=%s", placement);
  snprintf(a[3], sizeof a[3], "parallelism.activation_slots=%d", bench_slots);
  nd_config *cfg;
  nd_error err = {0};
  nd_trainer *tr = NULL;
  if (nd_config_new(&cfg)) return -1;
  int rc = nd_config_set_assignment(cfg, a[0], &err) || nd_config_set_assignment(cfg, a[1], &err) ||
           nd_config_set_assignment(cfg, a[2], &err) || nd_config_set_assignment(cfg, a[3], &err);
  for (const char *const *p = kv; *p && !rc; p++) rc = nd_config_set_assignment(cfg, *p, &err);
  if (rc || (rc = nd_trainer_open(&tr, cfg, &err))) goto done;
  const nd_graph *g = nd__trainer_graph(tr);
  size_t n = (size_t)g->n_tasks;
  obs o = {calloc(n, sizeof(double))};
  double *rank = calloc(n, sizeof(double)), *dur = calloc(n, sizeof(double));
  nd_edges e = {0};
  row rows[MAX_STEPS];
  if (!o.us || !rank || !dur || nd_graph_edges(g, &e)) rc = -1;
  nd_exec_observer ob = {task_done, &o};
  nd_exec_observe(nd__trainer_exec(tr), &ob);
  for (int s = 0; s <= steps && !rc; s++) {
    nd_step_result res;
    if ((rc = nd_trainer_step(tr, &res, &err)) || s == 0) continue; /* the first: warm-up */
    row *r = &rows[s - 1];
    r->step_ms = res.step_ms;
    r->work_ms = 0;
    for (size_t i = 0; i < n; i++) dur[i] = o.us[i] * 1e-6, r->work_ms += o.us[i] * 1e-3;
    nd_upward_rank(g, &e, dur, NULL, rank);
    r->cp_ms = 0;
    for (size_t i = 0; i < n; i++) r->cp_ms = rank[i] * 1e3 > r->cp_ms ? rank[i] * 1e3 : r->cp_ms;
    r->bound_ms = r->cp_ms > r->work_ms / 2 ? r->cp_ms : r->work_ms / 2;
  }
  nd_exec_observe(nd__trainer_exec(tr), NULL);
  if (!rc) {
    /* the row of the median step */
    int order[MAX_STEPS];
    for (int s = 0; s < steps; s++) order[s] = s;
    for (int s = 0; s < steps; s++)
      for (int k = s + 1; k < steps; k++)
        if (rows[order[k]].step_ms < rows[order[s]].step_ms) {
          int t = order[s];
          order[s] = order[k], order[k] = t;
        }
    *out = rows[order[steps / 2]];
    snprintf(out->split, sizeof out->split, "[%d, %d]", g->stage_layers[0], g->stage_layers[1]);
  }
  nd_edges_free(&e);
  free(o.us), free(rank), free(dur);
done:
  if (rc) fprintf(stderr, "bench %s %s: %s\n", policy, stages, err.msg);
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 3;
  if (steps < 1 || steps > MAX_STEPS) steps = 3;
  if (argc > 2 && atoi(argv[2]) >= 1) bench_slots = atoi(argv[2]);
  /* strict placement keeps each stage's work on its device, as when a GPU's
   * memory holds its stage's weights: the split then decides the balance */
  static const struct {
    const char *label, *policy, *stages, *placement;
  } runs[] = {{"equal stages, 1f1b", "1f1b", "[]", "strict"},
              {"equal stages, ndws", "ndws", "[]", "strict"},
              {"auto stages, ndws", "ndws", "auto", "strict"},
              {"equal stages, ndws", "ndws", "[]", "affinity"},
              {"equal stages, dmdas", "dmdas", "[]", "free"}};
  enum { N_RUNS = sizeof runs / sizeof runs[0] };
  row r[N_RUNS];
  for (int i = 0; i < N_RUNS; i++)
    if (bench(runs[i].policy, runs[i].stages, runs[i].placement, steps, &r[i])) return 1;
  printf("\n1 CPU worker + 1 OpenCL device, pp=2, 8 micro-batches of 8 x 64 tokens, n_embd 256, 8 layers, %d slots;\n"
         "median of %d steps after one warm-up; bound = max(critical path, work / 2) from that step's measured tasks\n\n",
         bench_slots, steps);
  printf("| configuration        | placement | stage_layers | step ms | bound ms | crit. path ms | work/2 ms | efficiency | speed-up vs equal 1f1b |\n");
  printf("|----------------------|-----------|--------------|--------:|---------:|--------------:|----------:|-----------:|-----------------------:|\n");
  for (int i = 0; i < N_RUNS; i++)
    printf("| %-20s | %-9s | %-12s | %7.1f | %8.1f | %13.1f | %9.1f | %10.3f | %22.2f |\n", runs[i].label, runs[i].placement, r[i].split,
           r[i].step_ms, r[i].bound_ms, r[i].cp_ms, r[i].work_ms / 2, r[i].bound_ms / r[i].step_ms,
           r[0].step_ms / r[i].step_ms);
  return 0;
}
