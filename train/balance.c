/* parallelism.stage_layers: auto. Layers are split across pipeline stages in
 * proportion to the measured speed of the devices the stages land on: a slow
 * device gets fewer layers. The measurement is one calibration step (after a
 * warm-up step that compiles kernels and fills StarPU's models) with each
 * rank held to its own devices; the split then follows deterministically.
 * Where the trainer will then try the CPU workers alone (train/trainer.c),
 * the devices only stay if they make the step faster; so when even the
 * balanced split's slowest stage takes longer than a whole step on the CPU
 * workers alone (timed here too), no split keeps the devices, and the split
 * stays even: what runs is then the even split on the CPU workers, as
 * without `auto`, rather than a split made for a device left unused.
 * Under mpirun each process knows the devices of its own stages and the
 * times of its own tasks, summed per stage (each built only its share of
 * the step): process 0 gathers the kinds and adds up the sums, decides,
 * and sends every process its decision, so all build the same graph. */
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "common/error.h"
#include "graph/split.h"
#include "placement/placement.h"
#include "tasks/mpi.h"
#include "tasks/schedule.h"
#include "train/trainer_internal.h"

typedef struct durations {
  double *us; /* [n_tasks] of the step graph */
} durations;

static void task_done(void *user, int graph, int32_t task, double start, double end, int worker) {
  (void)worker;
  if (graph == 0) ((durations *)user)->us[task] = end - start;
}

/* Process 0's view of n doubles (or ints with `ints`), each process's part
 * of each (0, or -1 for ints, where it has none): their sum (maximum), in
 * process order. Elsewhere: v unchanged. */
static int gather_known(void *v, int64_t n, int ints) {
  char *all;
  int64_t *off;
  size_t size = ints ? sizeof(int) : sizeof(double);
  if (nd_mpi_gather(v, n * (int64_t)size, &all, &off)) return ND_ENOMEM;
  for (int p = 1; all && p < nd_mpi_size(); p++)
    for (int64_t i = 0; i < n; i++) {
      if (ints) {
        int x = ((int *)(all + off[p]))[i];
        if (x > ((int *)v)[i]) ((int *)v)[i] = x;
      } else {
        ((double *)v)[i] += ((double *)(all + off[p]))[i];
      }
    }
  free(all);
  free(off);
  return 0;
}

/* The second of two steps with every task on the CPU workers (the first
 * brings the data back from the devices). */
static int cpu_alone_step_ms(nd_trainer *tr, const nd_graph *g, const nd_config *cfg, double *ms, nd_error *err) {
  int rc = nd_sched_apply_on(nd__trainer_exec(tr), 0, g, cfg, NULL, 1, err);
  for (int step = 0; step < 2 && !rc; step++) {
    nd_step_result res;
    rc = nd_trainer_step(tr, &res, err);
    *ms = res.step_ms;
  }
  return rc;
}

int nd__balance_stages(nd_trainer *tr, nd_balance *out, nd_error *err) {
  const nd_graph *g = nd__trainer_graph(tr);
  const nd_config *cfg = nd__trainer_config(tr);
  int p = g->pp, L = g->L, *kinds = out->kind;
  int64_t *split = out->split;
  memset(out, 0, sizeof *out);
  out->stages = p;
  nd_rank_map pl;
  int rc = nd_sched_place(g, &pl, err);
  if (rc) return rc;
  int mixed = 0, procs = nd_mpi_size(), me = nd_mpi_rank();
  for (int s = 0; s < p; s++) {
    nd_rank r = {0, s, 0};
    /* another process's stage: its kind comes from that process */
    int mine = procs == 1 || nd_mpi_process_of(g, r, procs) == me;
    kinds[s] = mine ? pl.units[pl.first[nd_rank_index(g, r)]].kind : -1;
  }
  nd_rank_map_free(&pl);
  if (procs > 1 && gather_known(kinds, p, 1)) return nd__fail(err, ND_ENOMEM, "stage_layers auto: out of memory");
  for (int s = 0; s < p; s++) mixed |= kinds[s] != kinds[0];
  for (int s = 0; s < p; s++) split[s] = g->stage_layers[s];
  out->mixed = mixed;
  nd_mpi_bcast(out, sizeof *out);
  if (!out->mixed) return 0;
  /* calibration: every rank held to its own devices, so each stage's time is its device's */
  nd_config strict = *cfg;
  strict.runtime.placement = ND_PLACEMENT_STRICT;
  nd_exec *ex = nd__trainer_exec(tr);
  durations d = {calloc((size_t)(g->n_tasks ? g->n_tasks : 1), sizeof(double))};
  if (!d.us) return nd__fail(err, ND_ENOMEM, "stage_layers auto: out of memory");
  rc = nd_sched_apply(ex, 0, g, &strict, NULL, err);
  nd_exec_observer obs = {task_done, &d};
  for (int step = 0; step < 2 && !rc; step++) {
    nd_step_result res;
    if (step == 1) nd_exec_observe(ex, &obs);
    rc = nd_trainer_step(tr, &res, err);
  }
  nd_exec_observe(ex, NULL);
  /* each process timed its own tasks and sums them per stage: process 0 adds the sums up */
  double sums[2 * ND_MAX_STAGES], *layer_us = sums, *other_us = out->other_us, *per_layer = out->layer_us;
  nd_stage_times(g, d.us, layer_us, sums + p);
  free(d.us);
  if (!rc && procs > 1 && gather_known(sums, 2 * p, 0))
    rc = nd__fail(err, ND_ENOMEM, "stage_layers auto: out of memory");
  if (rc) return rc;
  memcpy(other_us, sums + p, (size_t)p * sizeof *other_us);
  for (int s = 0; s < p; s++) per_layer[s] = layer_us[s] / g->stage_layers[s];
  int layers[ND_MAX_STAGES];
  if (nd_stage_split(p, L, other_us, per_layer, layers))
    return nd__fail(err, ND_ENOMEM, "stage_layers auto: out of memory");
  double slowest_us = 0;
  for (int s = 0; s < p; s++) {
    split[s] = out->balanced[s] = layers[s];
    double us = other_us[s] + (double)layers[s] * per_layer[s];
    slowest_us = us > slowest_us ? us : slowest_us;
  }
  out->cpu_alone_ms = -1;
  if (nd__trainer_tries_cpu_alone(cfg, g)) {
    rc = cpu_alone_step_ms(tr, g, cfg, &out->cpu_alone_ms, err);
    if (rc) return rc;
    if (slowest_us >= out->cpu_alone_ms * 1e3)
      for (int s = 0; s < p; s++) split[s] = g->stage_layers[s];
  }
  nd_mpi_bcast(out, sizeof *out);
  return 0;
}
