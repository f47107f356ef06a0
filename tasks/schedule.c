/* A graph's placement and priorities, handed to the running executor. */
#include "tasks/schedule.h"

#include <starpu.h>
#include <stdlib.h>

#include "common/device.h"
#include "common/error.h"
#include "kernels/backend.h"
#include "scheduler/policies.h"
#include "tasks/chain.h"
#include "tasks/mpi.h"

int nd_exec_runs_on(const void *ctx, const nd_task *t, int unit_kind) {
  /* a CPU worker takes every task: the one a device cannot run comes back to it */
  return unit_kind == ND_BACKEND_CPU || nd_exec_runs_on_device(ctx, unit_kind, t);
}

/* All-reduces whose participants sit on different devices of one kind run
 * on that backend's collective library, once a communicator over those
 * devices exists; with runtime.deterministic, or with several processes,
 * every all-reduce stays the ordered sum (the library's sums follow no
 * fixed order). */
static int plan_collectives(nd_exec *ex, int which, const nd_graph *g, const nd_config *cfg, const nd_rank_map *pl,
                            nd_error *err) {
  int use = !cfg->runtime.deterministic && nd_exec_procs(ex, NULL) == 1;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (t->kind != ND_TASK_ALLREDUCE) continue;
    int n = t->a.coll.nparts, unit[n], dev[n], worker[n];
    const nd_backend_ops *ops = use && nd_coll_gpu_units(g, pl, t, unit) ? nd__backend(pl->units[unit[0]].kind) : NULL;
    if (!ops || !ops->comm_create) {
      if (nd_exec_set_collective(ex, which, i, NULL, -1)) return nd__fail(err, ND_ENOMEM, "executor: out of memory");
      continue;
    }
    for (int p = 0; p < n; p++) dev[p] = pl->units[unit[p]].devid, worker[p] = pl->units[unit[p]].id;
    int comm = ops->comm_create(dev, n, err);
    if (comm < 0) return comm;
    int rc = nd_exec_set_collective(ex, which, i, worker, comm);
    if (rc)
      return nd__fail(err, rc, "executor: all-reduce task %d: %d participants on %s devices", i, n,
                      nd_device_label(ops->device));
  }
  return 0;
}

/* Under mpirun: this process's ranks, a contiguous block [*a, *b) of rank
 * indices (tasks/mpi_plan.c deals them so). */
static void own_ranks(const nd_graph *g, int procs, int me, int *a, int *b) {
  *a = *b = 0;
  for (int r = 0; r < g->dp * g->pp * g->tp; r++)
    if (nd_mpi_process_of(g, (nd_rank){r / (g->pp * g->tp), r / g->tp % g->pp, r % g->tp}, procs) == me) {
      if (*b == 0) *a = r;
      *b = r + 1;
    }
}

/* nd_sched_place, on the CPU workers alone when cpu_only. */
static int place(const nd_graph *g, int cpu_only, nd_rank_map *pl, nd_error *err) {
  nd_unit units[STARPU_NMAXWORKERS];
  int n = nd_runtime_units(units, STARPU_NMAXWORKERS), procs = nd_mpi_size(), ranks = g->dp * g->pp * g->tp, kept = 0;
  for (int i = 0; i < n; i++)
    if (!cpu_only || units[i].kind == ND_BACKEND_CPU) units[kept++] = units[i];
  n = kept;
  int a = 0, b = ranks;
  if (procs > 1) own_ranks(g, procs, nd_mpi_rank(), &a, &b);
  /* one process's workers take its own ranks only: placed as a chain of
   * stages, in rank order, so its tensor-parallel groups (when whole) and
   * neighbouring stages get neighbouring units as on one process; one
   * process places its replicas as such, so that stages sharing units share
   * them within their replica (placement/placement.c) */
  int whole = a % g->tp == 0 && b % g->tp == 0, tp = whole ? g->tp : 1;
  nd_rank_map local;
  int rc = procs == 1 ? nd_place(units, n, g->dp, g->pp, tp, &local) : nd_place(units, n, 1, (b - a) / tp, tp, &local);
  if (rc) return nd__fail(err, rc, "placement: cannot place %d ranks on %d workers", b - a, n);
  if (procs == 1) {
    *pl = local;
    return 0;
  }
  /* the map has every rank of the mesh: the others' (whose tasks never
   * run here) on all the units, this process's where it placed them */
  *pl = (nd_rank_map){ranks, calloc((size_t)ranks, sizeof(int)), calloc((size_t)ranks, sizeof(int)), local.units,
                      local.n_units};
  if (!pl->first || !pl->count) {
    free(pl->first), free(pl->count);
    nd_rank_map_free(&local);
    return nd__fail(err, ND_ENOMEM, "placement: out of memory");
  }
  for (int r = 0; r < ranks; r++) {
    int mine = r >= a && r < b;
    pl->first[r] = mine ? local.first[r - a] : 0;
    pl->count[r] = mine ? local.count[r - a] : local.n_units;
  }
  free(local.first), free(local.count);
  return 0;
}

int nd_sched_place(const nd_graph *g, nd_rank_map *pl, nd_error *err) { return place(g, 0, pl, err); }

int nd_sched_mixed_ranks(const nd_graph *g) {
  nd_rank_map pl;
  nd_error ignored = {0};
  int mixed = 0;
  if (place(g, 0, &pl, &ignored)) return 0;
  for (int r = 0; r < pl.n_ranks; r++)
    for (int u = pl.first[r]; u < pl.first[r] + pl.count[r]; u++)
      mixed |= pl.units[u].kind != pl.units[pl.first[0]].kind;
  nd_rank_map_free(&pl);
  return mixed;
}

/* Each task's class for the chains (tasks/chain.h): the device backends in
 * `backends` (a bit each) with a kernel for it under ex's table (NULL: the
 * built-ins), so that a chain runs wherever each of its members could. */
static uint8_t *classes(const nd_exec *ex, const nd_graph *g, unsigned backends) {
  uint8_t *cls = malloc((size_t)(g->n_tasks ? g->n_tasks : 1));
  for (int32_t i = 0; cls && i < g->n_tasks; i++) {
    cls[i] = 0;
    for (int b = 0; b < ND_BACKEND_COUNT; b++)
      if (backends >> b & 1 && nd_exec_runs_on_device(ex, b, &g->tasks[i])) cls[i] |= (uint8_t)(1u << b);
  }
  return cls;
}

/* Chains of tasks as one StarPU task each (tasks/chain.h), on CPU workers
 * and on the devices that run every member (in the steps that try the CPU
 * workers alone, as if there were none), on one process or several. A
 * fixed order's positions then count each chain once. */
static int set_chains(nd_exec *ex, int which, const nd_graph *g, const nd_config *cfg, int cpu_only, nd_hints *h) {
  unsigned devices = 0;
  for (int b = 0; b < ND_BACKEND_COUNT && !cpu_only; b++)
    if (b != ND_BACKEND_CPU && nd_runtime_devices(b) > 0) devices |= 1u << b;
  if (!cfg->runtime.chain_tasks) return nd_exec_set_chains(ex, which, NULL);
  int fixed = nd_sched_is_fixed(cfg->runtime.scheduler);
  int32_t *len = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *len);
  uint8_t *cls = classes(ex, g, devices);
  int rc = len && cls ? nd__chain_plan(g, h->home, fixed ? h->priority : NULL, fixed, cls, len) : ND_ENOMEM;
  if (!rc) rc = nd_exec_set_chains(ex, which, len);
  free(len);
  free(cls);
  return rc;
}

int nd_sched_chains(const nd_graph *g, const nd_config *cfg, int32_t *len) {
  if (!cfg->runtime.chain_tasks) {
    for (int32_t i = 0; i < g->n_tasks; i++) len[i] = 1;
    return 0;
  }
  unsigned devices = 0;
  for (int b = 0; b < ND_BACKEND_COUNT; b++)
    if (b != ND_BACKEND_CPU && nd_runtime_has_backend(b)) devices |= 1u << b;
  uint8_t *cls = classes(NULL, g, devices);
  int rc = cls ? nd__chain_plan(g, NULL, NULL, nd_sched_is_fixed(cfg->runtime.scheduler), cls, len) : ND_ENOMEM;
  free(cls);
  return rc;
}

int nd_sched_apply(nd_exec *ex, int which, const nd_graph *g, const nd_config *cfg, const double *measured,
                   nd_error *err) {
  return nd_sched_apply_on(ex, which, g, cfg, measured, 0, err);
}

int nd_sched_apply_on(nd_exec *ex, int which, const nd_graph *g, const nd_config *cfg, const double *measured,
                      int cpu_only, nd_error *err) {
  nd_rank_map pl;
  nd_hints h;
  nd_unit_check can = {nd_exec_runs_on, ex};
  int rc = place(g, cpu_only, &pl, err);
  if (rc) return rc;
  rc = nd_hints_compute(g, cfg, &pl, &can, measured, starpu_sched_get_min_priority(), starpu_sched_get_max_priority(),
                        &h);
  if (!rc && cpu_only && !h.workers) {
    /* no restriction from the placement: every task may run on any kept worker */
    h.workers = calloc((size_t)(g->n_tasks ? g->n_tasks : 1) * (size_t)h.mask_words, sizeof *h.workers);
    rc = h.workers ? 0 : ND_ENOMEM;
    for (int32_t i = 0; i < g->n_tasks && !rc; i++)
      for (int r = 0; r < pl.n_ranks; r++) nd_rank_map_mask(&pl, r, &h.workers[(size_t)i * h.mask_words]);
    if (rc) nd_hints_free(&h);
  }
  if (rc) {
    nd_rank_map_free(&pl);
    return nd__fail(err, rc, "scheduler: out of memory for the task hints");
  }
  rc = plan_collectives(ex, which, g, cfg, &pl, err);
  nd_rank_map_free(&pl);
  if (rc) {
    nd_hints_free(&h);
    return rc;
  }
  rc = set_chains(ex, which, g, cfg, cpu_only, &h);
  if (!rc) rc = nd_exec_set_hints(ex, which, h.priority, h.workers, h.mask_words);
  /* StarPU's policies may use sched_data themselves: homes only for ours */
  if (!rc && nd_sched_policy(cfg->runtime.scheduler)) rc = nd_exec_set_homes(ex, which, h.home);
  nd_hints_free(&h);
  return rc ? nd__fail(err, rc, "scheduler: out of memory for the task hints") : 0;
}
