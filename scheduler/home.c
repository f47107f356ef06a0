/* Home worker of a ready task. */
#include "scheduler/home.h"

#include "scheduler/policies.h"

int nd_worker_allowed(int worker, struct starpu_task *task) {
  unsigned impl;
  return starpu_worker_can_execute_task_first_impl((unsigned)worker, task, &impl);
}

int nd_choose_home(nd_workers *ws, struct starpu_task *task) {
  int home = nd_sched_task_home(task, task->sched_data);
  if (home >= 0 && home < STARPU_NMAXWORKERS && ws->in_ctx[home] && nd_worker_allowed(home, task)) return home;
  int cur = starpu_worker_get_id();
  if (cur >= 0 && cur < STARPU_NMAXWORKERS && ws->in_ctx[cur] && nd_worker_allowed(cur, task)) return cur;
  unsigned start = atomic_fetch_add(&ws->rr, 1);
  for (int k = 0; k < ws->n; k++) {
    int w = ws->ids[(start + (unsigned)k) % (unsigned)ws->n];
    if (nd_worker_allowed(w, task)) return w;
  }
  return -1;
}

void nd_workers_set(nd_workers *ws, const int *ids, unsigned n, int in) {
  for (unsigned i = 0; i < n; i++)
    if (ids[i] >= 0 && ids[i] < STARPU_NMAXWORKERS) ws->in_ctx[ids[i]] = in;
  ws->n = 0;
  for (int w = 0; w < STARPU_NMAXWORKERS; w++)
    if (ws->in_ctx[w]) ws->ids[ws->n++] = w;
}
