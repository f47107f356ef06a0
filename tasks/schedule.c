/* A graph's placement and priorities, handed to the running executor. */
#include "tasks/schedule.h"

#include <starpu.h>

#include "common/error.h"
#include "scheduler/policies.h"

int nd_exec_runs_on(const void *ctx, const nd_task *t, int unit_kind) {
  if (unit_kind == ND_UNIT_CPU) return 1;
  return nd_exec_runs_on_device(ctx, unit_kind == ND_UNIT_OPENCL ? ND_BACKEND_OPENCL : ND_BACKEND_CUDA, t);
}

int nd_sched_apply(nd_exec *ex, int which, const nd_graph *g, const nd_config *cfg, const double *measured,
                   nd_error *err) {
  nd_unit units[STARPU_NMAXWORKERS];
  int n = nd_runtime_units(units, STARPU_NMAXWORKERS);
  nd_rank_map pl;
  nd_hints h;
  nd_unit_check can = {nd_exec_runs_on, ex};
  int rc = nd_place(units, n, g->dp, g->pp, g->tp, &pl);
  if (rc) return nd__fail(err, rc, "placement: cannot place %d ranks on %d workers", g->dp * g->pp * g->tp, n);
  rc = nd_hints_compute(g, cfg, &pl, &can, measured, starpu_sched_get_min_priority(), starpu_sched_get_max_priority(),
                        &h);
  nd_rank_map_free(&pl);
  if (rc) return nd__fail(err, rc, "scheduler: out of memory for the task hints");
  rc = nd_exec_set_hints(ex, which, h.priority, h.workers, h.mask_words);
  /* StarPU's policies may use sched_data themselves: homes only for ours */
  if (!rc && nd_sched_policy(cfg->runtime.scheduler)) rc = nd_exec_set_homes(ex, which, h.home);
  nd_hints_free(&h);
  return rc ? nd__fail(err, rc, "scheduler: out of memory for the task hints") : 0;
}
