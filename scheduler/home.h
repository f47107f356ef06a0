/* What ndgraph's policies share: which workers are in the context, and the
 * worker a ready task is queued on. */
#ifndef ND_SCHEDULER_HOME_H
#define ND_SCHEDULER_HOME_H

#include <starpu.h>
#include <stdatomic.h>

typedef struct nd_workers {
  int in_ctx[STARPU_NMAXWORKERS];
  /* the same workers, ascending: what the per-task loops visit, rather than
   * every id StarPU could have (272 with our build) */
  int ids[STARPU_NMAXWORKERS], n;
  atomic_uint rr;
} nd_workers;

int nd_worker_allowed(int worker, struct starpu_task *task);
/* The task's home (task->sched_data) when it may run there, else the
 * releasing worker when it may, else the next allowed worker round-robin;
 * -1 when no worker of the context may run it. */
int nd_choose_home(nd_workers *ws, struct starpu_task *task);
void nd_workers_set(nd_workers *ws, const int *ids, unsigned n, int in);

#endif
