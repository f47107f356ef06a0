/* Lower bounds on a step's time from its tasks' measured durations, for the
 * benchmarks and the trace summary: no order of these tasks, each on the
 * worker it ran on, is faster; and how much of a worker's idle time had work
 * ready. */
#ifndef ND_GRAPH_BOUND_H
#define ND_GRAPH_BOUND_H

#include <stdint.h>

/* A task as one worker sees it: when its inputs can be ready at the
 * earliest (the longest path of durations before it), its duration, and the
 * longest path after it. */
typedef struct nd_bound_job {
  double release, dur, tail;
} nd_bound_job;

/* One worker running these n jobs one at a time: any subset S of them takes
 * at least min release + sum of durations + min tail over S. S runs over the
 * jobs released at or after each threshold (and those with tails of at least
 * each threshold), which lets the tasks that need no input (loading a batch)
 * drop out of the head. Reorders jobs. */
double nd_one_worker_bound(nd_bound_job *jobs, int32_t n);

/* A task of one worker's run, as it ran: its start and end, and when it was
 * ready (every task it depends on had ended; INFINITY when not known). */
typedef struct nd_run_task {
  double start, end, ready;
} nd_run_task;

/* The idle time between the n tasks of one worker's run, sorted by start,
 * during which the task it ran next was already ready: the worker did not
 * start a task it could start, for the runtime or the machine, not for a
 * dependency or for the order a policy chose (a fixed order that waits for
 * its next task while a later one is ready waits for a dependency here). */
double nd_ready_idle(const nd_run_task *run, int32_t n);

#endif
