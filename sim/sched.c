/* The scheduler's rules, replayed for the simulator from the configuration
 * alone: ranks placed on workers and each task's home and allowed workers by
 * the code the runtime uses (placement/: nd_place, nd_task_homes), on units
 * built from the machine; priorities from graph/priority.c with the model's
 * times, and each policy's way of queueing and stealing. */
#include "sim/sched.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "configs/policies.h"
#include "graph/priority.h"

/* The range ndws advertises (scheduler/policies.h), so that priorities
 * collide exactly where the running scheduler's do. */
#define ND_SIM_PRIO_MAX (1 << 24)

int nd_sim_policy_known(const char *policy) { return nd_policy_of(policy) >= 0; }

static int is_fixed(const char *policy) { return nd_fixed_schedule_of(policy) >= 0; }

int nd_sim_rank_map(const nd_sim_machine *m, const nd_graph *g, nd_rank_map *pl) {
  nd_unit units[ND_SIM_MAX_WORKERS];
  int devid[ND_BACKEND_COUNT] = {0};
  for (int w = 0; w < m->n_workers; w++)
    units[w] = (nd_unit){m->obj[w], w, m->kind[w], m->node[w], devid[m->kind[w]]++};
  return nd_place(units, m->n_workers, g->dp, g->pp, g->tp, pl);
}

static int timed_on(const void *ctx, const nd_task *t, int unit_kind) {
  const nd_sim_model *model = ctx;
  return model->fit[t->kind][unit_kind].valid;
}

nd_unit_check nd_sim_unit_check(const nd_sim_model *model) { return (nd_unit_check){timed_on, model}; }

int nd_sim_schedule_build(const nd_graph *g, const nd_edges *e, const nd_sim_machine *m, const nd_sim_model *model,
                          const char *policy, enum nd_placement placement, int deterministic,
                          enum nd_priority_order order, nd_sim_schedule *s) {
  memset(s, 0, sizeof *s);
  int n_ranks = g->dp * g->pp * g->tp, fixed = is_fixed(policy);
  size_t n = (size_t)(g->n_tasks ? g->n_tasks : 1);
  nd_rank_map pl = {0};
  nd_unit_check can = nd_sim_unit_check(model);
  double *seconds = malloc(n * sizeof *seconds);
  int32_t *seq = malloc(n * sizeof *seq);
  uint32_t *mask = NULL;
  s->home = malloc(n * sizeof *s->home);
  s->allowed = calloc(n, sizeof *s->allowed);
  s->priority = malloc(n * sizeof *s->priority);
  s->rank_node = malloc((size_t)n_ranks * sizeof *s->rank_node);
  int rc = seconds && seq && s->home && s->allowed && s->priority && s->rank_node ? 0 : ND_ENOMEM;
  if (rc || !nd_sim_policy_known(policy)) {
    rc = rc ? rc : ND_EINVAL;
    goto cleanup;
  }
  if ((rc = nd_sim_rank_map(m, g, &pl))) goto cleanup;
  int words = nd_rank_map_mask_words(&pl);
  if (nd_task_restricted(&pl, fixed, placement, deterministic) && !(mask = calloc(n * (size_t)words, sizeof *mask))) {
    rc = ND_ENOMEM;
    goto cleanup;
  }
  for (int r = 0; r < n_ranks; r++) s->rank_node[r] = pl.units[pl.first[r]].node;
  nd_task_homes(g, &pl, &can, fixed, placement, deterministic, s->home, mask);
  /* StarPU's own policies get no homes (they may use sched_data themselves) */
  int p = nd_policy_of(policy), ours = fixed || p == ND_POLICY_NDWS;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    if (!ours) s->home[i] = -1;
    /* the simulator's bitmaps are one 64-bit word of worker indices */
    for (int w = 0; mask && w < m->n_workers; w++)
      if (mask[(size_t)i * (size_t)words + (size_t)w / 32] >> (w % 32) & 1) s->allowed[i] |= UINT64_C(1) << w;
    int kind = pl.units[nd_task_unit(g, &pl, &can, &g->tasks[i], !fixed)].kind;
    seconds[i] = nd_sim_task_seconds(model, &g->tasks[i], kind);
    if (seconds[i] < 0) seconds[i] = 0;
  }
  if (fixed) {
    rc = nd_fixed_order(g, e, (enum nd_fixed_schedule)nd_fixed_schedule_of(policy), seq);
    int next[ND_SIM_MAX_WORKERS] = {0};
    for (int32_t k = 0; k < g->n_tasks && !rc; k++) s->priority[seq[k]] = -next[s->home[seq[k]]]++;
  } else {
    rc = nd_priorities(g, e, seconds, order, 0, ND_SIM_PRIO_MAX, s->priority);
  }
  s->fixed = fixed;
  s->use_priority = p != ND_POLICY_EAGER && p != ND_POLICY_DMDA;
  /* dmda(s): every ready task to the worker that would finish it first, no
   * stealing; ndws: a thief takes a task only when it would finish it before
   * its owner (scheduler/ndws.c) */
  int dmda = p == ND_POLICY_DMDA || p == ND_POLICY_DMDAS, ndws = p == ND_POLICY_NDWS;
  s->earliest_finish = dmda;
  s->steal_if_faster = ndws;
  s->steal = !fixed && !dmda;
cleanup:
  nd_rank_map_free(&pl);
  free(seconds), free(seq), free(mask);
  if (rc) nd_sim_schedule_free(s);
  return rc;
}
