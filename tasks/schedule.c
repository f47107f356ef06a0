/* A graph's placement and priorities, handed to the running executor. */
#include "tasks/schedule.h"

#include <starpu.h>
#include <stdlib.h>

#include "common/error.h"
#include "scheduler/policies.h"

int nd_exec_runs_on(const void *ctx, const nd_task *t, int unit_kind) {
  if (unit_kind == ND_UNIT_CPU) return 1;
  return nd_exec_runs_on_device(ctx, unit_kind == ND_UNIT_OPENCL ? ND_BACKEND_OPENCL : ND_BACKEND_CUDA, t);
}

int nd_sched_mixed_ranks(const nd_graph *g) {
  nd_unit units[STARPU_NMAXWORKERS];
  nd_rank_map pl;
  int n = nd_runtime_units(units, STARPU_NMAXWORKERS), mixed = 0;
  if (nd_place(units, n, g->dp, g->pp, g->tp, &pl)) return 0;
  for (int r = 0; r < pl.n_ranks; r++)
    for (int u = pl.first[r]; u < pl.first[r] + pl.count[r]; u++)
      mixed |= pl.units[u].kind != pl.units[pl.first[0]].kind;
  nd_rank_map_free(&pl);
  return mixed;
}

int nd_sched_apply(nd_exec *ex, int which, const nd_graph *g, const nd_config *cfg, const double *measured,
                   nd_error *err) {
  return nd_sched_apply_on(ex, which, g, cfg, measured, 0, err);
}

int nd_sched_apply_on(nd_exec *ex, int which, const nd_graph *g, const nd_config *cfg, const double *measured,
                      int cpu_only, nd_error *err) {
  nd_unit units[STARPU_NMAXWORKERS];
  int n = nd_runtime_units(units, STARPU_NMAXWORKERS), kept = 0;
  for (int i = 0; i < n; i++)
    if (!cpu_only || units[i].kind == ND_UNIT_CPU) units[kept++] = units[i];
  nd_rank_map pl;
  nd_hints h;
  nd_unit_check can = {nd_exec_runs_on, ex};
  int rc = nd_place(units, kept, g->dp, g->pp, g->tp, &pl);
  if (rc) return nd__fail(err, rc, "placement: cannot place %d ranks on %d workers", g->dp * g->pp * g->tp, kept);
  rc = nd_hints_compute(g, cfg, &pl, &can, measured, starpu_sched_get_min_priority(), starpu_sched_get_max_priority(),
                        &h);
  if (!rc && kept < n && !h.workers) {
    /* no restriction from the placement: every task may run on any kept worker */
    h.workers = calloc((size_t)(g->n_tasks ? g->n_tasks : 1) * (size_t)h.mask_words, sizeof *h.workers);
    rc = h.workers ? 0 : ND_ENOMEM;
    for (int32_t i = 0; i < g->n_tasks && !rc; i++)
      for (int r = 0; r < pl.n_ranks; r++) nd_rank_map_mask(&pl, r, &h.workers[(size_t)i * h.mask_words]);
    if (rc) nd_hints_free(&h);
  }
  nd_rank_map_free(&pl);
  if (rc) return nd__fail(err, rc, "scheduler: out of memory for the task hints");
  rc = nd_exec_set_hints(ex, which, h.priority, h.workers, h.mask_words);
  /* StarPU's policies may use sched_data themselves: homes only for ours */
  if (!rc && nd_sched_policy(cfg->runtime.scheduler)) rc = nd_exec_set_homes(ex, which, h.home);
  nd_hints_free(&h);
  return rc ? nd__fail(err, rc, "scheduler: out of memory for the task hints") : 0;
}
