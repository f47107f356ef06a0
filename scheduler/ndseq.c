/* ndseq: fixed per-worker orders, for the textbook pipeline schedules
 * (gpipe, 1f1b, 1f1b-split, zbh1, zbh2) measured against ndws on the same graph and kernels.
 *
 * The hints give each task a home worker and, as its priority, minus its
 * position in that worker's sequence (0, 1, 2, ... for each run of the
 * graph). A worker runs the task at position `next` and nothing else, even
 * when later tasks are ready: that strictness is what a fixed schedule is.
 * Position 0 starts a new run. Nothing is stolen. The sequences are computed
 * as one topological order of the graph (graph/schedule.c), so they cannot
 * deadlock. */
#include <starpu.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "scheduler/home.h"
#include "scheduler/idle.h"
#include "scheduler/policies.h"
#include "scheduler/queue.h"

typedef struct seq_worker {
  nd_queue q; /* the worker's sched mutex guards it */
  atomic_int n;
  int next; /* position of the task to run next; touched by the worker only */
  int idle_polls;
} seq_worker;

typedef struct seq_state {
  seq_worker w[STARPU_NMAXWORKERS];
  nd_workers ws;
  nd_idle idle;
} seq_state;

static seq_state *state_of(unsigned ctx) { return starpu_sched_ctx_get_policy_data(ctx); }

static int seq_push(struct starpu_task *task) {
  seq_state *st = state_of(task->sched_ctx);
  int home = nd_choose_home(&st->ws, task);
  STARPU_ASSERT_MSG(home >= 0, "ndseq: no worker of the context can run task %s", task->name ? task->name : "?");
  seq_worker *w = &st->w[home];
  starpu_worker_lock(home);
  int rc = nd_queue_push(&w->q, task, task->priority, 0, NULL);
  STARPU_ASSERT_MSG(rc == 0, "ndseq: out of memory for the ready queue");
  atomic_fetch_add(&w->n, 1);
  starpu_push_task_end(task);
  starpu_worker_unlock(home);
  nd_idle_notify(&st->idle);
#ifndef STARPU_NON_BLOCKING_DRIVERS
  starpu_wake_worker_relax_light(home);
#endif
  return 0;
}

/* The head of the queue if it is the one due. */
static struct starpu_task *take_due(seq_worker *w, int me) {
  if (!atomic_load(&w->n)) return NULL;
  int pos = -w->q.items[0].priority;
  if (pos != w->next && pos != 0) return NULL;
  struct starpu_task *task = nd_queue_take(&w->q, 0);
  unsigned impl = 0;
  starpu_worker_can_execute_task_first_impl((unsigned)me, task, &impl);
  starpu_task_set_implementation(task, impl);
  atomic_fetch_sub(&w->n, 1);
  w->next = pos + 1;
  return task;
}

static struct starpu_task *seq_pop(unsigned ctx) {
  seq_state *st = state_of(ctx);
  int me = (int)starpu_worker_get_id_check();
  seq_worker *self = &st->w[me];
  unsigned long seen = nd_idle_generation(&st->idle);
  struct starpu_task *task = take_due(self, me);
  if (!task && nd_idle_help(&self->idle_polls)) return NULL;
  if (!task && nd_idle_should_sleep(&self->idle_polls)) {
    nd_idle_sleep(&st->idle, seen, ND_IDLE_SLEEP_US);
    task = take_due(self, me);
  }
  if (task) nd_idle_end(&self->idle_polls);
  return task;
}

static void seq_add_workers(unsigned ctx, int *ids, unsigned n) { nd_workers_set(&state_of(ctx)->ws, ids, n, 1); }
static void seq_remove_workers(unsigned ctx, int *ids, unsigned n) { nd_workers_set(&state_of(ctx)->ws, ids, n, 0); }

static void seq_init(unsigned ctx) {
  seq_state *st = calloc(1, sizeof *st);
  STARPU_ASSERT_MSG(st, "ndseq: out of memory");
  nd_idle_init(&st->idle);
  starpu_sched_ctx_set_policy_data(ctx, st);
  starpu_sched_ctx_set_min_priority(ctx, -ND_SEQ_MAX);
  starpu_sched_ctx_set_max_priority(ctx, 0);
}

static void seq_deinit(unsigned ctx) {
  seq_state *st = state_of(ctx);
  for (int w = 0; w < STARPU_NMAXWORKERS; w++) nd_queue_free(&st->w[w].q);
  nd_idle_destroy(&st->idle);
  free(st);
}

struct starpu_sched_policy nd_ndseq_policy = {
    .init_sched = seq_init,
    .deinit_sched = seq_deinit,
    .add_workers = seq_add_workers,
    .remove_workers = seq_remove_workers,
    .push_task = seq_push,
    .pop_task = seq_pop,
    .policy_name = "ndseq",
    .policy_description = "ndgraph: fixed per-worker task orders (gpipe, 1f1b, 1f1b-split, zbh1, zbh2)",
    .worker_type = STARPU_WORKER_LIST,
};
