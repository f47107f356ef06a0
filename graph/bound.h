/* Lower bounds on a step's time from its tasks' measured durations, for the
 * benchmarks and the trace summary: no order of these tasks, each on the
 * worker it ran on, is faster. */
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

#endif
