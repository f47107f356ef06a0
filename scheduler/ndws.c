/* ndws: topology-aware work stealing with priorities.
 *
 * Each worker owns a priority queue, guarded by that worker's StarPU sched
 * mutex (so StarPU's own rules order the locks: a pusher takes it with
 * starpu_worker_lock, a worker in pop_task owns it already). A ready task
 * goes to its home worker (task->sched_data, set from the placement), else
 * to the worker that released it, else round-robin. An idle worker takes its
 * best task, then steals the best task it may run from the nearest victim
 * in hwloc order. Counters read without locks keep an empty pop cheap; after
 * a while without work the worker sleeps (idle.h), each on its own condition,
 * which a push signals only if that worker may run the task: a worker that
 * may run none of the queued tasks (a device while the trainer keeps the CPU
 * workers alone) is not woken by every push (docs/scheduler.md).
 *
 * Expected times come from StarPU's calibrated history models (per worker
 * architecture) and its bus model (transfers to the worker's memory node):
 * a thief takes a task only if it would finish it before the victim would
 * (the victim's running task, the queued work ahead of it, then the task).
 * Until a model is calibrated for a worker's architecture, the plain steal
 * applies, as it does with ND_NDWS_MODELS=0 in the environment. (Placing each
 * ready task on the worker that would finish it first measured slower on the
 * mixed node and was dropped: docs/scheduler.md.) */
#include <math.h>
#include <starpu.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/home.h"
#include "scheduler/idle.h"
#include "scheduler/policies.h"
#include "scheduler/queue.h"
#include "placement/topology.h"

typedef struct ws_worker {
  nd_queue q;             /* the worker's sched mutex guards it */
  atomic_int n;           /* tasks in q */
  atomic_int n_stealable; /* tasks in q that another worker may run */
  int n_prox;
  int prox[STARPU_NMAXWORKERS]; /* the other workers, nearest first */
  int idle_polls;               /* touched only by the worker itself */
  nd_idle idle;                 /* where the worker sleeps; pushes it may take signal it */
  _Atomic double busy_until;    /* expected end of the running task (starpu_timing_now's clock) */
} ws_worker;

typedef struct ws_state {
  ws_worker w[STARPU_NMAXWORKERS];
  nd_workers ws;
  int check; /* a thief must finish first (off with ND_NDWS_MODELS=0) */
} ws_state;

static ws_state *state_of(unsigned ctx) { return starpu_sched_ctx_get_policy_data(ctx); }

/* Could a worker other than `home` run it? Read from the restriction bitmap
 * only, so that it is cheap and gives the same answer at push and at pop. */
static int stealable(const ws_state *st, struct starpu_task *task, int home) {
  for (int k = 0; k < st->ws.n; k++) {
    int w = st->ws.ids[k];
    if (w == home) continue;
    if (!task->workerids_len) return 1;
    if ((unsigned)w / 32 < task->workerids_len && (task->workerids[w / 32] >> (w % 32) & 1)) return 1;
  }
  return 0;
}

/* Expected microseconds for worker w to run the task, its inputs' transfers
 * included; NAN while the model of w's architecture is not calibrated. */
static double expected_us(struct starpu_task *task, int w) {
  unsigned impl = 0;
  if (!starpu_worker_can_execute_task_first_impl((unsigned)w, task, &impl)) return NAN;
  double len = starpu_task_expected_length(task, starpu_worker_get_perf_archtype(w, task->sched_ctx), impl);
  if (isnan(len) || len <= 0) return NAN;
  double xfer = starpu_task_expected_data_transfer_time_for(task, (unsigned)w);
  return len + (isnan(xfer) || xfer < 0 ? 0 : xfer);
}

/* The task's expected time on each type of worker that may run it, into
 * by_type (computed here, outside any lock: thieves read it later under the
 * victim's lock), home's worker first, as workers of one type may differ in
 * transfers; returns the time on home (0 when unknown). */
static double expected_times(ws_state *st, struct starpu_task *task, int home, double *by_type) {
  int seen[ND_QUEUE_TYPES] = {0};
  for (int k = 0; k < ND_QUEUE_TYPES; k++) by_type[k] = NAN;
  for (int k = -1; k < st->ws.n; k++) {
    int v = k < 0 ? home : st->ws.ids[k];
    if ((k >= 0 && v == home) || !st->ws.in_ctx[v] || !nd_worker_allowed(v, task)) continue;
    int type = (int)starpu_worker_get_type(v);
    if (type >= 0 && type < ND_QUEUE_TYPES && !seen[type]) seen[type] = 1, by_type[type] = expected_us(task, v);
  }
  int type = (int)starpu_worker_get_type(home);
  return type >= 0 && type < ND_QUEUE_TYPES && !isnan(by_type[type]) ? by_type[type] : 0;
}

static int ws_push(struct starpu_task *task) {
  ws_state *st = state_of(task->sched_ctx);
  int home = nd_choose_home(&st->ws, task);
  STARPU_ASSERT_MSG(home >= 0, "ndws: no worker of the context can run task %s", task->name ? task->name : "?");
  double cost = 0, by_type[ND_QUEUE_TYPES];
  int steal = stealable(st, task, home);
  /* Expected times serve thieves only. A task that stays home (strict
   * placement) skips the model lookups, which cost a few microseconds of the
   * releasing worker's time per push. */
  if (steal)
    cost = expected_times(st, task, home, by_type);
  else
    for (int k = 0; k < ND_QUEUE_TYPES; k++) by_type[k] = NAN;
  ws_worker *w = &st->w[home];
  /* the others to wake, found now: once pushed, the task may run and be freed */
  int wake[STARPU_NMAXWORKERS], n_wake = 0;
  for (int k = 0; steal && k < st->ws.n; k++) {
    int v = st->ws.ids[k];
    if (v != home && nd_worker_allowed(v, task)) wake[n_wake++] = v;
  }
  /* a device starts copying the inputs now, while it runs the tasks ahead */
  if (starpu_worker_get_memory_node((unsigned)home) != STARPU_MAIN_RAM)
    starpu_prefetch_task_input_for(task, (unsigned)home);
  starpu_worker_lock(home);
  int rc = nd_queue_push(&w->q, task, task->priority, cost, by_type);
  STARPU_ASSERT_MSG(rc == 0, "ndws: out of memory for the ready queue");
  atomic_fetch_add(&w->n, 1);
  if (steal) atomic_fetch_add(&w->n_stealable, 1);
  starpu_push_task_end(task);
  starpu_worker_unlock(home);
  nd_idle_notify(&w->idle);
  for (int k = 0; k < n_wake; k++) nd_idle_notify(&st->w[wake[k]].idle);
#ifndef STARPU_NON_BLOCKING_DRIVERS
  starpu_wake_worker_relax_light(home);
  if (steal)
    for (int k = 0; k < st->ws.n; k++)
      if (st->ws.ids[k] != home) starpu_wake_worker_relax_light(st->ws.ids[k]);
#endif
  return 0;
}

struct accept_arg {
  ws_state *st;
  int worker, owner, type; /* type: the worker's StarPU worker type */
  unsigned impl;
  double now;
};

/* May `worker` run item `at` of owner's queue? A thief also has to finish it
 * before the owner would. */
static int accept(const nd_queue *q, int at, void *arg) {
  struct accept_arg *a = arg;
  struct starpu_task *task = q->items[at].task;
  if (!starpu_worker_can_execute_task_first_impl((unsigned)a->worker, task, &a->impl)) return 0;
  if (a->worker == a->owner || q->items[at].cost <= 0 || !a->st->check) return 1;
  double mine = q->items[at].by_type[a->type];
  if (isnan(mine)) return 1;
  ws_worker *o = &a->st->w[a->owner];
  double busy = atomic_load(&o->busy_until);
  double owner_end = (busy > a->now ? busy : a->now) + nd_queue_cost_ahead(q, at) + q->items[at].cost;
  return a->now + mine < owner_end;
}

/* Takes the best task of `owner`'s queue that `me` may run; the caller holds
 * owner's lock (or is owner, inside pop_task). */
static struct starpu_task *take(ws_state *st, int owner, int me) {
  ws_worker *w = &st->w[owner];
  int type = (int)starpu_worker_get_type(me);
  struct accept_arg a = {st, me, owner, type >= 0 && type < ND_QUEUE_TYPES ? type : 0, 0, starpu_timing_now()};
  int at = nd_queue_find(&w->q, accept, &a);
  if (at < 0) return NULL;
  double cost = w->q.items[at].cost, mine = owner == me ? cost : w->q.items[at].by_type[a.type];
  struct starpu_task *task = nd_queue_take(&w->q, at);
  atomic_store(&st->w[me].busy_until, a.now + (isnan(mine) ? 0 : mine));
  /* the implementation found for the chosen task: accept() ran on it last
   * only when it was the top; ask again to be exact */
  starpu_worker_can_execute_task_first_impl((unsigned)me, task, &a.impl);
  starpu_task_set_implementation(task, a.impl);
  atomic_fetch_sub(&w->n, 1);
  if (stealable(st, task, owner)) atomic_fetch_sub(&w->n_stealable, 1);
  return task;
}

/* *busy: a victim with stealable work was locked by someone else, so
 * there may be work after all and the caller should not sleep. */
static struct starpu_task *steal(ws_state *st, int me, int *busy) {
  ws_worker *self = &st->w[me];
  for (int k = 0; k < self->n_prox; k++) {
    int v = self->prox[k];
    if (!atomic_load(&st->w[v].n_stealable)) continue;
    /* trylock: a busy victim is left alone this round, as lws does */
    if (starpu_worker_trylock(v)) {
      *busy = 1;
      continue;
    }
    struct starpu_task *task = take(st, v, me);
    starpu_worker_unlock(v);
    if (task) return task;
  }
  return NULL;
}

static struct starpu_task *ws_pop(unsigned ctx) {
  ws_state *st = state_of(ctx);
  int me = (int)starpu_worker_get_id_check();
  ws_worker *self = &st->w[me];
  unsigned long seen = nd_idle_generation(&self->idle);
  struct starpu_task *task = atomic_load(&self->n) ? take(st, me, me) : NULL;
  int busy = 0;
  if (!task) task = steal(st, me, &busy);
  if (!task && !busy && nd_idle_help(&self->idle_polls)) return NULL;
  if (!task && !busy && nd_idle_should_sleep(&self->idle_polls)) {
    nd_idle_sleep(&self->idle, seen, ND_IDLE_SLEEP_US);
    /* others may have pushed to us while we were relaxed */
    if (atomic_load(&self->n)) task = take(st, me, me);
  }
  if (task) nd_idle_end(&self->idle_polls);
  return task;
}

/* Steal order: the other workers by hops between their hwloc objects, then
 * by id, so that a worker first steals from the core that shares its cache. */
static void build_proxlist(ws_state *st, int me) {
  ws_worker *w = &st->w[me];
  hwloc_obj_t mine = starpu_worker_get_hwloc_obj(me);
  int hops[STARPU_NMAXWORKERS];
  w->n_prox = 0;
  for (int v = 0; v < STARPU_NMAXWORKERS; v++) {
    if (v == me || !st->ws.in_ctx[v]) continue;
    hops[v] = nd_topo_hops(mine, starpu_worker_get_hwloc_obj(v));
    int at = w->n_prox++;
    for (; at > 0; at--) {
      int u = w->prox[at - 1];
      int farther = hops[u] > hops[v] || (hops[u] == hops[v] && abs(u - me) > abs(v - me));
      if (!farther) break;
      w->prox[at] = u;
    }
    w->prox[at] = v;
  }
}

static void ws_add_workers(unsigned ctx, int *ids, unsigned n) {
  ws_state *st = state_of(ctx);
  nd_workers_set(&st->ws, ids, n, 1);
  for (int w = 0; w < STARPU_NMAXWORKERS; w++)
    if (st->ws.in_ctx[w]) build_proxlist(st, w);
}

static void ws_remove_workers(unsigned ctx, int *ids, unsigned n) {
  ws_state *st = state_of(ctx);
  nd_workers_set(&st->ws, ids, n, 0);
  for (int w = 0; w < STARPU_NMAXWORKERS; w++)
    if (st->ws.in_ctx[w]) build_proxlist(st, w);
}

static void ws_init(unsigned ctx) {
  ws_state *st = calloc(1, sizeof *st);
  STARPU_ASSERT_MSG(st, "ndws: out of memory");
  for (int w = 0; w < STARPU_NMAXWORKERS; w++) nd_idle_init(&st->w[w].idle);
  const char *models = getenv("ND_NDWS_MODELS");
  st->check = !models || strcmp(models, "0") != 0;
  starpu_sched_ctx_set_policy_data(ctx, st);
  starpu_sched_ctx_set_min_priority(ctx, 0);
  starpu_sched_ctx_set_max_priority(ctx, ND_WS_PRIO_MAX);
}

static void ws_deinit(unsigned ctx) {
  ws_state *st = state_of(ctx);
  for (int w = 0; w < STARPU_NMAXWORKERS; w++) {
    nd_queue_free(&st->w[w].q);
    nd_idle_destroy(&st->w[w].idle);
  }
  free(st);
}

struct starpu_sched_policy nd_ndws_policy = {
    .init_sched = ws_init,
    .deinit_sched = ws_deinit,
    .add_workers = ws_add_workers,
    .remove_workers = ws_remove_workers,
    .push_task = ws_push,
    .pop_task = ws_pop,
    .policy_name = "ndws",
    .policy_description = "ndgraph: home-first priority queues, nearest-first stealing",
    .worker_type = STARPU_WORKER_LIST,
};
