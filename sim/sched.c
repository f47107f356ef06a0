/* The scheduler's rules, replayed for the simulator from the configuration
 * alone: ranks placed on workers as scheduler/placement.c places them (CPU
 * cores first, then devices; tensor-parallel groups on neighbouring units),
 * each task's home and allowed workers as scheduler/hints.c gives them
 * (runtime.placement strict, affinity, free), priorities from graph/priority.c
 * with the model's times, and each policy's way of queueing and stealing. */
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

void nd_sim_place(const nd_sim_machine *m, int n_ranks, int tp, int *first, int *count) {
  int n = m->n_workers;
  if (n < n_ranks) {
    for (int r = 0; r < n_ranks; r++) first[r] = (int)((long long)r * n / n_ranks), count[r] = 1;
    return;
  }
  int per = n / n_ranks;
  for (int r = 0; r < n_ranks; r++) first[r] = (r / tp) * per * tp + (r % tp) * per, count[r] = per;
}

int nd_sim_task_worker(const nd_graph *g, const nd_sim_machine *m, const nd_sim_model *model, const int *first,
                       const int *count, const nd_task *t, int spread) {
  int r = nd_rank_index(g, t->rank);
  int u = first[r] + (spread && t->micro_batch >= 0 ? t->micro_batch % count[r] : 0);
  if (m->kind[u] == ND_BACKEND_CPU || model->fit[t->kind][m->kind[u]].valid) return u;
  for (int i = first[r]; i < first[r] + count[r]; i++)
    if (m->kind[i] == ND_BACKEND_CPU) return i;
  for (int i = 0; i < m->n_workers; i++)
    if (m->kind[i] == ND_BACKEND_CPU) return i;
  return u;
}

int nd_sim_schedule_build(const nd_graph *g, const nd_edges *e, const nd_sim_machine *m, const nd_sim_model *model,
                          const char *policy, enum nd_placement placement, enum nd_priority_order order,
                          nd_sim_schedule *s) {
  memset(s, 0, sizeof *s);
  int n_ranks = g->dp * g->pp * g->tp, fixed = is_fixed(policy);
  size_t n = (size_t)(g->n_tasks ? g->n_tasks : 1);
  int *first = malloc((size_t)n_ranks * sizeof *first), *count = malloc((size_t)n_ranks * sizeof *count);
  double *seconds = malloc(n * sizeof *seconds);
  int32_t *seq = malloc(n * sizeof *seq);
  s->home = malloc(n * sizeof *s->home);
  s->allowed = calloc(n, sizeof *s->allowed);
  s->priority = malloc(n * sizeof *s->priority);
  s->rank_node = malloc((size_t)n_ranks * sizeof *s->rank_node);
  int rc = first && count && seconds && seq && s->home && s->allowed && s->priority && s->rank_node ? 0 : ND_ENOMEM;
  if (rc || !nd_sim_policy_known(policy)) {
    rc = rc ? rc : ND_EINVAL;
    goto cleanup;
  }
  nd_sim_place(m, n_ranks, g->tp, first, count);
  for (int r = 0; r < n_ranks; r++) s->rank_node[r] = m->node[first[r]];
  /* StarPU's own policies get no homes (they may use sched_data themselves) */
  int p = nd_policy_of(policy), ours = fixed || p == ND_POLICY_NDWS;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    int r = nd_rank_index(g, t->rank), home = nd_sim_task_worker(g, m, model, first, count, t, !fixed);
    s->home[i] = ours && (fixed || placement != ND_PLACEMENT_FREE) ? home : -1;
    if (fixed)
      s->allowed[i] = UINT64_C(1) << home;
    else if (placement == ND_PLACEMENT_STRICT) {
      for (int u = first[r]; u < first[r] + count[r]; u++) s->allowed[i] |= UINT64_C(1) << u;
      s->allowed[i] |= UINT64_C(1) << home;
    }
    seconds[i] = nd_sim_task_seconds(model, t, m->kind[home]);
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
  free(first), free(count), free(seconds), free(seq);
  if (rc) nd_sim_schedule_free(s);
  return rc;
}
