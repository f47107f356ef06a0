/* Upward ranks, priorities, and the textbook pipeline orders. */
#include "graph/priority.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "configs/policies.h"

/* the fixed policies are listed in this enum's order (configs/policies.h) */
_Static_assert(ND_POLICY_1F1B_SPLIT - ND_POLICY_FIRST_FIXED == ND_FIXED_1F1B_SPLIT &&
                   ND_POLICY_COUNT - ND_POLICY_FIRST_FIXED == ND_FIXED_1F1B_SPLIT + 1,
               "configs/policies.h lists the fixed orders as enum nd_fixed_schedule does");

int nd_fixed_schedule_of(const char *policy) { return nd_policy_fixed_order(nd_policy_of(policy)); }

const nd_cost_model nd_cost_cpu = {60e9, 10e9, 10e9, 5e-6};
const nd_cost_model nd_cost_opencl = {15e9, 5e9, 10e9, 30e-6};

double nd_task_seconds(const nd_task *t, const nd_cost_model *m) {
  return (double)t->flops / m->flops_per_s + (double)t->bytes / m->bytes_per_s +
         (double)t->comm_bytes / m->comm_bytes_per_s + m->overhead_s;
}

void nd_upward_rank(const nd_graph *g, const nd_edges *e, const double *duration, const nd_cost_model *m,
                    double *rank) {
  /* array order is topological: successors have larger indices */
  for (int32_t i = g->n_tasks - 1; i >= 0; i--) {
    double after = 0;
    for (int32_t k = e->succ_off[i]; k < e->succ_off[i + 1]; k++)
      if (rank[e->succ[k]] > after) after = rank[e->succ[k]];
    rank[i] = (duration ? duration[i] : nd_task_seconds(&g->tasks[i], m)) + after;
  }
}

static int phase_order(enum nd_phase p) {
  switch (p) {
  case ND_PHASE_B:
    return 4;
  case ND_PHASE_COLLECTIVE:
    return 3; /* communication unblocks other ranks */
  case ND_PHASE_F:
    return 2;
  case ND_PHASE_W:
    return 1;
  default:
    return 0;
  }
}

/* Sort keys, most significant first; larger means more urgent. */
#define ND_KEYS 4
typedef struct keyed {
  int64_t key[ND_KEYS];
  int32_t task;
} keyed;

static int same_level(const keyed *x, const keyed *y) { return memcmp(x->key, y->key, sizeof x->key) == 0; }

static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  for (int i = 0; i < ND_KEYS; i++)
    if (x->key[i] != y->key[i]) return x->key[i] < y->key[i] ? -1 : 1;
  return (x->task > y->task) - (x->task < y->task);
}

int nd_priorities_from_rank(const nd_graph *g, const double *rank, const double *start, enum nd_priority_order order,
                            int lo, int hi, int *prio) {
  keyed *k = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *k);
  if (!k) return ND_ENOMEM;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    int64_t us = llround(rank[i] * 1e6), phase = phase_order(t->phase);
    int64_t age = t->micro_batch < 0 ? -(INT64_C(1) << 40) : -t->micro_batch; /* step-level tasks last */
    int64_t early = start ? -llround(start[i] * 1e9) : 0;                     /* earlier in the timeline first */
    /* a micro-batch's collective (the send to the next stage, a tensor-
     * parallel sum) outranks every compute task: it is short and another
     * stage waits for it. Keyed by the timeline it took its forward's start,
     * and a B that the timeline starts no later outranked it: measured, a B
     * that had arrived during the forward then ran first and held the send
     * back 33 ms each time, stage 1 idle meanwhile (docs/scheduler.md) */
    if (start && t->phase == ND_PHASE_COLLECTIVE && t->micro_batch >= 0) early = 1;
    k[i] = order == ND_PRIORITY_CRITICAL_PATH ? (keyed){{us, phase, 0, 0}, i} : (keyed){{early, phase, age, us}, i};
  }
  qsort(k, (size_t)g->n_tasks, sizeof *k, cmp_keyed);
  int64_t distinct = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) distinct += i == 0 || !same_level(&k[i], &k[i - 1]);
  int64_t level = -1;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    level += i == 0 || !same_level(&k[i], &k[i - 1]);
    double frac = distinct > 1 ? (double)level / (double)(distinct - 1) : 0;
    prio[k[i].task] = (int)((int64_t)lo + (int64_t)floor(frac * ((double)hi - (double)lo))); /* in [lo, hi] */
  }
  free(k);
  return 0;
}

/* Ideal start times of the units (stage, micro-batch, F, B or W) of the
 * textbook schedule, in t[(s * m + j) * 3 + unit], unit 0 F, 1 B, 2 W.
 * GPipe and 1F1B (both variants): per-stage lists of F and backward (B and W
 * together, W at B's time), F = 1 and backward = 2 time units. */
static int list_times(const nd_graph *g, enum nd_fixed_schedule kind, double *t) {
  int p = g->pp, m = g->micro_batches, n_units = 2 * m;
  int *list = malloc((size_t)(p * n_units) * sizeof *list); /* unit = 2 * j + (B ? 1 : 0) */
  double *end = malloc((size_t)(p * n_units) * sizeof *end);
  int *at = calloc((size_t)p, sizeof *at);
  double *free_at = calloc((size_t)p, sizeof *free_at);
  if (!list || !end || !at || !free_at) {
    free(list), free(end), free(at), free(free_at);
    return ND_ENOMEM;
  }
  for (int s = 0; s < p; s++) {
    int *l = list + s * n_units, n = 0;
    int warm = kind == ND_FIXED_GPIPE ? m : (p - 1 - s < m ? p - 1 - s : m);
    for (int j = 0; j < warm; j++) l[n++] = 2 * j;
    for (int j = warm; j < m; j++) l[n++] = 2 * j, l[n++] = 2 * (j - warm) + 1;
    for (int j = m - warm; j < m; j++) l[n++] = 2 * j + 1;
  }
  for (int i = 0; i < p * n_units; i++) end[i] = -1;
  for (int progress = 1; progress;) {
    progress = 0;
    for (int s = 0; s < p; s++) {
      while (at[s] < n_units) {
        int u = list[s * n_units + at[s]], j = u / 2, back = u & 1;
        double ready = 0;
        if (!back && s > 0) ready = end[(s - 1) * n_units + 2 * j];
        if (back) {
          double own = end[s * n_units + 2 * j], next = s + 1 < p ? end[(s + 1) * n_units + 2 * j + 1] : 0;
          ready = own < 0 || next < 0 ? -1 : fmax(own, next);
        }
        if (ready < 0) break;
        double start = fmax(ready, free_at[s]);
        t[(s * m + j) * 3 + back] = start;
        if (back) t[(s * m + j) * 3 + 2] = start;
        end[s * n_units + u] = free_at[s] = start + (back ? 2 : 1);
        at[s]++;
        progress = 1;
      }
    }
  }
  free(list), free(end), free(at), free(free_at);
  return 0;
}

/* Zero-bubble schedules (Qi et al., ICLR 2024), as the paper's greedy
 * construction, with each stage's F, B and W times from the CPU cost model
 * (the paper profiles them): a free stage runs a ready B, else a ready F if
 * fewer than `limit` micro-batches are in flight on it (forward done, W
 * not), else its oldest pending W. ZB-H1 keeps 1F1B's peak (p micro-batches
 * in flight, on every stage), so later stages postpone W into the bubbles at
 * the same peak activation memory; ZB-H2 allows 2p - 1, which also fills the
 * warm-up bubble. Without memory limits and with F = B = W this gives the
 * paper's ZB-H1 step 3m + (p - 1)(F + B - W) at p = 2 (tests/test_sim.c); at
 * p >= 3 its cool-down leaves p - 2 units more than the handcrafted ZB-H1.
 *
 * The graph's activation pools bound it further (pool_slots, 0: unbounded):
 * F(j) reuses the FWD_B slot of j - fwd and the FWD_W slot of j - fwd_w, so it
 * waits for B(j - fwd) and W(j - fwd_w); B(j) reuses the GRAD_W slot of
 * j - grad_w (its own gradients and the one the next stage sends it), so it
 * waits for W(j - grad_w), and that W then goes before a forward. Each stage
 * has its own depths (graph/state.c). A timeline that ignored them would be one the graph cannot run: a
 * strict order then interleaves B(j) with W(j - 1) layer by layer and the
 * previous stage waits for both (measured: bubble 21-25%, docs/scheduler.md). */
static int depth_of(const nd_graph *g, int s, enum nd_act_pool pool) {
  int d = g->pool_slots[s][pool];
  return d > 0 ? d : g->micro_batches;
}

static int unit_of(enum nd_phase ph) { return ph == ND_PHASE_F ? 0 : ph == ND_PHASE_B ? 1 : ph == ND_PHASE_W ? 2 : -1; }

static int zb_times(const nd_graph *g, const double *seconds, int limit, int fill, double *t) {
  int p = g->pp, m = g->micro_batches;
  double *end = malloc((size_t)(p * m * 3) * sizeof *end), *free_at = calloc((size_t)p, sizeof *free_at);
  double *dur = calloc((size_t)(p * 3), sizeof *dur); /* per stage: seconds of one F, B, W */
  int *next = calloc((size_t)(p * 3), sizeof *next);  /* per stage: next F, next B, next W micro-batch */
  int *after_b = calloc((size_t)p, sizeof *after_b);  /* per stage: its last unit was a B */
  if (!end || !free_at || !dur || !next || !after_b) {
    free(end), free(free_at), free(dur), free(next), free(after_b);
    return ND_ENOMEM;
  }
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *task = &g->tasks[i];
    int u = unit_of(task->phase);
    if (u >= 0 && task->micro_batch >= 0)
      dur[task->rank.pp * 3 + u] += (seconds ? seconds[i] : nd_task_seconds(task, &nd_cost_cpu)) / m;
  }
  for (int i = 0; i < p * m * 3; i++) end[i] = -1;
#define ZB_END(s, j, u) ((j) < 0 ? 0 : end[((s)*m + (j)) * 3 + (u)] < 0 ? 1e300 : end[((s)*m + (j)) * 3 + (u)])
  for (int left = p * m * 3; left > 0;) {
    /* the stage that is free first and the unit it starts, at the earliest time it can */
    int best_s = -1, best_u = -1;
    double best_at = 1e300;
    for (int s = 0; s < p; s++) {
      int *n = next + 3 * s;
      int fwd = depth_of(g, s, ND_POOL_FWD_B), fwd_w = depth_of(g, s, ND_POOL_FWD_W);
      int grad_w = depth_of(g, s, ND_POOL_GRAD_W);
      double ready[3] = {1e300, 1e300, 1e300};
      /* the W whose FWD_W slot F(n[0]) reuses; none for the last forward when it has a slot of its own */
      int w_slot = g->fwd_w_tail[s] && n[0] == m - 1 ? -1 : n[0] - fwd_w;
      if (n[0] < m && n[0] - n[2] < limit)
        ready[0] = fmax(s == 0 ? 0 : ZB_END(s - 1, n[0], 0), fmax(ZB_END(s, n[0] - fwd, 1), ZB_END(s, w_slot, 2)));
      if (n[1] < n[0])
        ready[1] = fmax(fmax(ZB_END(s, n[1], 0), s + 1 < p ? ZB_END(s + 1, n[1], 1) : 0), ZB_END(s, n[1] - grad_w, 2));
      if (n[2] < n[1]) ready[2] = ZB_END(s, n[2], 1);
      /* among the units startable at the stage's earliest start, B before F
       * before W, except a W that the next B (its forward done) waits for */
      double at = fmin(ready[0], fmin(ready[1], ready[2]));
      if (at >= 1e300) continue;
      at = fmax(at, free_at[s]);
      int w_first = ready[2] <= at && n[2] == n[1] - grad_w && n[1] < n[0];
      /* the last stage runs W right after its B, while B's outputs are in
       * the cache (a W run later reads them back from memory: 1.15 times
       * its B against 1.07, docs/scheduler.md, *Priorities*), except for the
       * last grad_w micro-batches, whose W's fill the cool-down */
      int hot = fill && s == p - 1 && after_b[s] && n[2] == n[1] - 1 && n[2] < m - grad_w && ready[2] <= at;
      int u = ready[1] <= at ? 1 : w_first || hot ? 2 : ready[0] <= at ? 0 : 2;
      double fb = fmin(ready[0], ready[1]);
      if (fill && u == 2 && !w_first && !hot &&
          fb < at + dur[s * 3 + 2]) /* a W only where it ends before the next F or B */
        u = ready[1] <= ready[0] ? 1 : 0, at = fmax(fb, free_at[s]);
      if (at < best_at) best_at = at, best_s = s, best_u = u;
    }
    if (best_s < 0) break; /* cannot happen: some stage always has a unit to run */
    int s = best_s, j = next[3 * s + best_u]++;
    t[(s * m + j) * 3 + best_u] = best_at;
    end[(s * m + j) * 3 + best_u] = free_at[s] = best_at + dur[s * 3 + best_u];
    after_b[s] = best_u == 1;
    left--;
  }
#undef ZB_END
  free(end), free(free_at), free(dur), free(next), free(after_b);
  return 0;
}

static int unit_times(const nd_graph *g, enum nd_fixed_schedule kind, double *t) {
  if (kind == ND_FIXED_ZBH1 || kind == ND_FIXED_ZBH2)
    return zb_times(g, NULL, kind == ND_FIXED_ZBH1 ? g->pp : 2 * g->pp - 1, 0, t);
  return list_times(g, kind, t);
}

/* key[i]: when task i starts in the unit timeline t (unit_times' layout):
 * F, B and W tasks at their unit's start, collectives and other per-micro-
 * batch tasks with the latest of what they wait for, per-step tasks after
 * the whole timeline. In list_times' timeline a backward (B and W) starts at
 * B's time and the stage's next unit 2 later; a delay of 1 puts a task after
 * the backward's others and before that next unit: the send of the input
 * gradient to the previous stage (send_delay, 1F1B as Megatron-LM and
 * PipeDream-Flush run it: one backward pass computes both gradients, the
 * send follows it), or W (w_delay: the send leaves after B). */
static void timeline_keys(const nd_graph *g, const nd_edges *e, const double *t, double send_delay, double w_delay,
                          double *key) {
  int n_units = 3 * g->micro_batches;
  double last = 0;
  for (int i = 0; i < g->pp * n_units; i++) last = fmax(last, t[i] + 2);
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *task = &g->tasks[i];
    double after = 0; /* the latest key among what it waits for */
    for (int32_t k = e->pred_off[i]; k < e->pred_off[i + 1]; k++) after = fmax(after, key[e->pred[k]]);
    int u = unit_of(task->phase);
    const double *unit = task->micro_batch >= 0 ? t + task->rank.pp * n_units + 3 * task->micro_batch : NULL;
    if (unit && u >= 0)
      key[i] = unit[u] + (u == 2 ? w_delay : 0);
    else if (unit && task->kind == ND_TASK_SENDRECV && task->group == ND_GROUP_PP_PREV)
      key[i] = fmax(after, unit[1] + send_delay);
    else if (task->micro_batch >= 0 || task->phase == ND_PHASE_COLLECTIVE)
      key[i] = after;
    else
      key[i] = fmax(after, last);
  }
}

int nd_zb_timeline(const nd_graph *g, const nd_edges *e, const double *seconds, double *start) {
  double *t = malloc((size_t)(g->pp * 3 * g->micro_batches) * sizeof *t);
  int rc = t ? zb_times(g, seconds, g->micro_batches, 1, t) : ND_ENOMEM; /* the pools alone bound it */
  if (!rc) timeline_keys(g, e, t, 0, 0, start);
  free(t);
  return rc;
}

/* A binary min-heap of (key, task) for Kahn's algorithm. */
typedef struct ready_heap {
  double *key;
  int32_t *task;
  int32_t n;
} ready_heap;

static int heap_before(const ready_heap *h, int32_t a, int32_t b) {
  return h->key[a] != h->key[b] ? h->key[a] < h->key[b] : h->task[a] < h->task[b];
}
static void heap_swap(ready_heap *h, int32_t a, int32_t b) {
  double k = h->key[a];
  int32_t t = h->task[a];
  h->key[a] = h->key[b], h->task[a] = h->task[b];
  h->key[b] = k, h->task[b] = t;
}
static void heap_push(ready_heap *h, double key, int32_t task) {
  int32_t i = h->n++;
  h->key[i] = key, h->task[i] = task;
  while (i > 0 && heap_before(h, i, (i - 1) / 2)) heap_swap(h, i, (i - 1) / 2), i = (i - 1) / 2;
}
static int32_t heap_pop(ready_heap *h) {
  int32_t top = h->task[0];
  heap_swap(h, 0, --h->n);
  for (int32_t i = 0;;) {
    int32_t best = i, l = 2 * i + 1, r = l + 1;
    if (l < h->n && heap_before(h, l, best)) best = l;
    if (r < h->n && heap_before(h, r, best)) best = r;
    if (best == i) break;
    heap_swap(h, i, best), i = best;
  }
  return top;
}

int nd_fixed_order(const nd_graph *g, const nd_edges *e, enum nd_fixed_schedule kind, int32_t *order) {
  int n_units = 3 * g->micro_batches;
  size_t n = (size_t)(g->n_tasks ? g->n_tasks : 1);
  double *t = malloc((size_t)(g->pp * n_units) * sizeof *t), *key = malloc(n * sizeof *key);
  int32_t *waiting = malloc(n * sizeof *waiting);
  ready_heap h = {malloc(n * sizeof(double)), malloc(n * sizeof(int32_t)), 0};
  int rc = !t || !key || !waiting || !h.key || !h.task ? ND_ENOMEM : unit_times(g, kind, t);
  if (rc) goto cleanup;
  timeline_keys(g, e, t, kind == ND_FIXED_GPIPE || kind == ND_FIXED_1F1B, kind == ND_FIXED_1F1B_SPLIT, key);
  for (int32_t i = 0; i < g->n_tasks; i++) {
    waiting[i] = e->pred_off[i + 1] - e->pred_off[i];
    if (!waiting[i]) heap_push(&h, key[i], i);
  }
  for (int32_t done = 0; done < g->n_tasks; done++) {
    int32_t i = heap_pop(&h);
    order[done] = i;
    for (int32_t k = e->succ_off[i]; k < e->succ_off[i + 1]; k++)
      if (--waiting[e->succ[k]] == 0) heap_push(&h, key[e->succ[k]], e->succ[k]);
  }
cleanup:
  free(t), free(key), free(waiting), free(h.key), free(h.task);
  return rc;
}

int nd_priorities(const nd_graph *g, const nd_edges *e, const double *seconds, enum nd_priority_order order, int lo,
                  int hi, int *prio) {
  size_t n = (size_t)(g->n_tasks ? g->n_tasks : 1);
  int timeline = order == ND_PRIORITY_PIPELINE && g->pp > 1;
  double *rank = malloc(n * sizeof *rank), *start = timeline ? malloc(n * sizeof *start) : NULL;
  int rc = !rank || (timeline && !start) ? ND_ENOMEM : 0;
  if (!rc) nd_upward_rank(g, e, seconds, &nd_cost_cpu, rank);
  if (!rc && timeline) rc = nd_zb_timeline(g, e, seconds, start);
  if (!rc) rc = nd_priorities_from_rank(g, rank, start, order, lo, hi, prio);
  free(rank), free(start);
  return rc;
}
