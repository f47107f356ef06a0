/* ndgraph's own StarPU policies. `ndws`: per-worker priority queues, a task
 * starts on its home worker, idle workers steal the best task they may run,
 * nearest victim first. `gpipe`, `1f1b`, `1f1b-split`, `zbh1`, `zbh2`: one policy, `ndseq`, that runs
 * each worker's tasks in a precomputed order (the hints say which). */
#ifndef ND_SCHEDULER_POLICIES_H
#define ND_SCHEDULER_POLICIES_H

#include <stdint.h>

struct starpu_sched_policy;
struct starpu_task;

extern struct starpu_sched_policy nd_ndws_policy;
extern struct starpu_sched_policy nd_ndseq_policy;

/* The policy for a runtime.scheduler name, NULL for StarPU's own. */
struct starpu_sched_policy *nd_sched_policy(const char *name);
/* Does this policy name run each worker's tasks in a fixed order? */
int nd_sched_is_fixed(const char *name);

/* The home worker a task was given through task->sched_data (home + 1), or -1. */
static inline int nd_sched_task_home(const struct starpu_task *task, void *sched_data) {
  (void)task;
  return sched_data ? (int)(intptr_t)sched_data - 1 : -1;
}

/* Priority range the policies advertise. ndws: [0, ND_WS_PRIO_MAX];
 * ndseq: [-ND_SEQ_MAX, 0], the priority being minus the position in the
 * worker's sequence. */
#define ND_WS_PRIO_MAX (1 << 24)
#define ND_SEQ_MAX     (1 << 30)

/* How long an idle worker polls before it sleeps (about a millisecond: a
 * stage waiting for its neighbour's next task is usually fed within that,
 * and going through the condition variable for every such wait cost ndws
 * about 10% of a pipeline step against spinning policies), and the longest
 * sleep (a safety net; pushes wake sleepers at once). */
#define ND_IDLE_POLLS    10000
#define ND_IDLE_SLEEP_US 2000

#endif
