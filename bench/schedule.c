/* bench/schedule: every policy on the same pipeline graph and kernels.
 * pipeline_parallel_size 2, strict placement, one worker per stage,
 * micro_batches 2, 4, 8, 16, a model whose tasks take a few ms. For each
 * row: the median step time over the steps after warm-up; from the task
 * durations measured in that same step (nd_exec_observe), the lower bound
 * max(critical path, total work / workers) and efficiency = bound / step;
 * the measured bubble (idle fraction) of each stage; 1F1B's theoretical
 * bubble (p - 1) / (m + p - 1) beside it.
 *
 *   bench/schedule [STEPS] [POLICY,...]    (STEPS after one warm-up, default 3) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "configs/config.h"
#include "data/dataset.h"
#include "graph/ir.h"
#include "graph/priority.h"
#include "tasks/exec.h"
#include "tasks/schedule.h"

#define MAX_STEPS 16

typedef struct obs {
  double *start, *end;
  int *worker;
} obs;

static void task_done(void *user, int graph, int32_t task, double start, double end, int worker) {
  obs *o = user;
  if (graph) return;
  o->start[task] = start, o->end[task] = end, o->worker[task] = worker;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct row {
  double step, bound, cp, work, bubble[2];
} row;

static int bench(const char *policy, int mb, int slots, int steps, row *out) {
  nd_config *cfg;
  nd_error err = {0};
  char a[8][64];
  /* "ndws:critical-path" selects the priority order too */
  const char *colon = strchr(policy, ':');
  snprintf(a[0], 64, "runtime.scheduler=%.*s", colon ? (int)(colon - policy) : (int)strlen(policy), policy);
  snprintf(a[3], 64, "runtime.priorities=%s", colon ? colon + 1 : "pipeline");
  snprintf(a[1], 64, "parallelism.micro_batches=%d", mb);
  snprintf(a[2], 64, "parallelism.activation_slots=%d", slots < mb ? slots : mb);
  const char *fixed[] = {"model.n_layer=2", "model.n_embd=256", "model.n_head=4", "model.seq_len=64",
                         "train.micro_batch_size=8", "parallelism.pipeline_parallel_size=2",
                         "runtime.placement=strict", "runtime.workers=2",
                         "train.eval_every=0", "train.save_dir=", NULL};
  if (nd_config_new(&cfg)) return -1;
  int rc = nd_config_set_assignment(cfg, a[0], &err) || nd_config_set_assignment(cfg, a[1], &err) ||
           nd_config_set_assignment(cfg, a[2], &err) || nd_config_set_assignment(cfg, a[3], &err);
  for (const char *const *kv = fixed; *kv && !rc; kv++) rc = nd_config_set_assignment(cfg, *kv, &err);
  if (rc || nd_config_validate(cfg, &err)) {
    fprintf(stderr, "bench: %s\n", err.msg);
    nd_config_free(cfg);
    return -1;
  }
  nd_graph *g = NULL;
  nd_dataset *ds = NULL;
  nd_exec *ex = NULL;
  obs o = {0};
  double times[MAX_STEPS];
  row rows[MAX_STEPS];
  int started = 0;
  if ((rc = nd_graph_build(&g, cfg, 0, &err)) ||
      (rc = nd_dataset_open(&ds, cfg->data.train, cfg->data.format, cfg->model.vocab_size, (int)cfg->model.seq_len, &err)) ||
      (rc = nd_runtime_start(cfg, &err)))
    goto done;
  started = 1;
  if ((rc = nd_exec_create(&ex, g, &err)) || (rc = nd_sched_apply(ex, 0, g, cfg, NULL, &err))) goto done;
  size_t n = (size_t)g->n_tasks;
  o.start = calloc(n, sizeof(double)), o.end = calloc(n, sizeof(double)), o.worker = calloc(n, sizeof(int));
  double *dur = calloc(n, sizeof(double)), *rank = calloc(n, sizeof(double));
  nd_edges e = {0};
  if (!o.start || !o.end || !o.worker || !dur || !rank || nd_graph_edges(g, &e)) {
    free(dur), free(rank);
    rc = -1;
    goto done;
  }
  nd_exec_observer ob = {task_done, &o};
  nd_exec_observe(ex, &ob);
  for (int s = 0; s <= steps && !rc; s++) {
    nd_step st = {.data = ds, .seq_base = s * mb * 8, .seq_limit = INT64_MAX, .loss_scale = 1.0f / (float)(mb * 8 * 64),
                  .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .adam_t = s + 1};
    double t0 = now_s();
    if ((rc = nd_exec_run(ex, 0, &st, &err))) break;
    if (s == 0) continue; /* warm-up */
    row *r = &rows[s - 1];
    times[s - 1] = r->step = now_s() - t0;
    double first = 1e300, last = 0, busy[2] = {0, 0};
    r->work = 0;
    for (size_t i = 0; i < n; i++) {
      dur[i] = (o.end[i] - o.start[i]) * 1e-6;
      r->work += dur[i];
      if (o.worker[i] >= 0 && o.worker[i] < 2) busy[o.worker[i]] += dur[i];
      if (o.start[i] < first) first = o.start[i];
      if (o.end[i] > last) last = o.end[i];
    }
    nd_upward_rank(g, &e, dur, NULL, rank);
    r->cp = 0;
    for (size_t i = 0; i < n; i++)
      if (rank[i] > r->cp) r->cp = rank[i];
    r->bound = r->cp > r->work / 2 ? r->cp : r->work / 2;
    double span = (last - first) * 1e-6;
    for (int w = 0; w < 2; w++) r->bubble[w] = span > 0 ? 1 - busy[w] / span : 0;
  }
  nd_exec_observe(ex, NULL);
  nd_edges_free(&e);
  free(dur), free(rank);
  if (!rc) {
    /* the row of the median step */
    qsort(times, (size_t)steps, sizeof *times, cmp_double);
    for (int s = 0; s < steps; s++)
      if (rows[s].step == times[steps / 2]) *out = rows[s];
  }
done:
  if (rc) fprintf(stderr, "bench %s: %s\n", policy, err.msg);
  nd_exec_free(ex);
  if (started) nd_runtime_stop();
  nd_dataset_close(ds);
  nd_graph_free(g);
  nd_config_free(cfg);
  free(o.start), free(o.end), free(o.worker);
  return rc;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 3;
  if (steps < 1 || steps > MAX_STEPS) steps = 3;
  char all[] = "ndws,ndws:critical-path,gpipe,1f1b,eager,prio,ws,lws,dmda,dmdas";
  char *list = argc > 2 ? argv[2] : all;
  int slots = argc > 3 ? atoi(argv[3]) : 2;
  if (slots < 1) slots = 2;
  const char *names[16];
  int n_pol = 0;
  for (char *tok = strtok(list, ","); tok && n_pol < 16; tok = strtok(NULL, ",")) names[n_pol++] = tok;
  static const int mbs[] = {2, 4, 8, 16};
  printf("pp=2, strict placement, 2 workers, n_embd 256, 2 layers, 8 x 64 tokens per micro-batch, activation_slots %d;\n"
         "median of %d steps after one warm-up; bound = max(critical path, work / 2) from that step's measured tasks\n\n",
         slots, steps);
  printf("| m  | policy             | step ms | bound ms | crit. path ms | work/2 ms | efficiency | bubble stage 0 | bubble stage 1 | 1F1B theory |\n");
  printf("|----|--------------------|--------:|---------:|--------------:|----------:|-----------:|---------------:|---------------:|------------:|\n");
  for (size_t k = 0; k < sizeof mbs / sizeof mbs[0]; k++)
    for (int p = 0; p < n_pol; p++) {
      row r;
      if (bench(names[p], mbs[k], slots, steps, &r)) return 1;
      printf("| %2d | %-18s | %7.1f | %8.1f | %13.1f | %9.1f | %10.3f | %14.3f | %14.3f | %11.3f |\n", mbs[k], names[p],
             r.step * 1e3, r.bound * 1e3, r.cp * 1e3, r.work / 2 * 1e3, r.bound / r.step, r.bubble[0], r.bubble[1],
             1.0 / (mbs[k] + 1.0));
      fflush(stdout);
    }
  return 0;
}
