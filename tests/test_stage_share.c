/* stage_layers: auto under mpirun (train/balance.c): each process sums the
 * times of the tasks it ran per stage over its share of the step
 * (nd_stage_times), and process 0 adds the processes' sums. For each layout
 * and process count, with the same times per task (whole numbers of
 * microseconds, so that any order of additions is exact, a stage slower
 * than the one before), those sums are the whole step's, and so is the
 * split they choose, which is not the even one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "graph/split.h"
#include "tasks/mpi.h"
#include "tests/share_config.h"
#include "tests/tap.h"

/* A task's time, the same in every graph that holds it: stage s runs s + 1 times slower. */
static double time_of(const nd_task *t) { return (double)((1 + t->flops % 997 + t->kind) * (1 + t->rank.pp)); }

/* The sums of graph g's tasks that run on `me` of `procs` (all: me < 0) added to layer_us and other_us. */
static int add_times(const nd_graph *g, int procs, int me, double *layer_us, double *other_us) {
  int *run_on = nd_mpi_task_processes(g, procs);
  double *us = calloc((size_t)g->n_tasks, sizeof *us), l[ND_MAX_STAGES], o[ND_MAX_STAGES];
  if (!run_on || !us) {
    free(run_on), free(us);
    return ND_ENOMEM;
  }
  for (int32_t i = 0; i < g->n_tasks; i++)
    if (me < 0 || run_on[i] == me) us[i] = time_of(&g->tasks[i]);
  nd_stage_times(g, us, l, o);
  for (int s = 0; s < g->pp; s++) layer_us[s] += l[s], other_us[s] += o[s];
  free(run_on), free(us);
  return 0;
}

static int split_of(const nd_graph *g, const double *layer_us, const double *other_us, int *split) {
  double per_layer[ND_MAX_STAGES];
  for (int s = 0; s < g->pp; s++) per_layer[s] = layer_us[s] / g->stage_layers[s];
  return nd_stage_split(g->pp, g->L, other_us, per_layer, split);
}

static void check(const char *sets, int procs) {
  nd_config *cfg = share_config(sets);
  nd_graph *whole = NULL;
  nd_error err = {0};
  double wl[ND_MAX_STAGES] = {0}, wo[ND_MAX_STAGES] = {0}, sl[ND_MAX_STAGES] = {0}, so[ND_MAX_STAGES] = {0};
  int ws[ND_MAX_STAGES] = {0}, ss[ND_MAX_STAGES] = {1}, summed = 0, even = 1;
  if (!cfg || nd_graph_build_pairs(&whole, cfg, 0, NULL, procs, &err) || add_times(whole, 1, -1, wl, wo)) goto done;
  for (int p = 0; p < procs; p++) {
    nd_graph *share = NULL, *eval = NULL;
    int rc = nd_mpi_build_share(cfg, procs, p, &share, &eval, &err);
    if (!rc) rc = add_times(share, procs, p, sl, so);
    nd_graph_free(share), nd_graph_free(eval);
    if (rc) goto done;
  }
  summed = !split_of(whole, wl, wo, ws) && !split_of(whole, sl, so, ss);
  for (int s = 1; s < whole->pp; s++) even &= ws[s] == ws[0];
done:
  if (err.msg[0]) diag("%s", err.msg);
  int pp = whole ? whole->pp : 0;
  ok(summed && !memcmp(wl, sl, sizeof wl) && !memcmp(wo, so, sizeof wo),
     "%s on %d processes: the processes' sums per stage add up to the step's", sets, procs);
  ok(summed && !even && !memcmp(ws, ss, sizeof ws), "%s on %d processes: the same split, [%d, %d, %d] (not even)", sets,
     procs, ss[0], pp > 1 ? ss[1] : 0, pp > 2 ? ss[2] : 0);
  nd_graph_free(whole);
  nd_config_free(cfg);
}

int main(void) {
  check("parallelism.pipeline_parallel_size=2", 2);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2", 3);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=3 parallelism.tensor_parallel_size=2", 4);
  check("model.arch=llama model.n_kv_head=2 parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=3", 6);
  return done_testing();
}
