/* Lower bounds on a step from its tasks' durations, and idle time with work
 * ready (graph/bound.h). */
#include "graph/bound.h"

#include <math.h>
#include <stdlib.h>

static int later_release(const void *a, const void *b) {
  const nd_bound_job *x = a, *y = b;
  return (x->release < y->release) - (x->release > y->release);
}

static int longer_tail(const void *a, const void *b) {
  const nd_bound_job *x = a, *y = b;
  return (x->tail < y->tail) - (x->tail > y->tail);
}

double nd_one_worker_bound(nd_bound_job *jobs, int32_t n) {
  double best = 0;
  for (int pass = 0; pass < 2 && n > 0; pass++) {
    qsort(jobs, (size_t)n, sizeof *jobs, pass ? longer_tail : later_release);
    double sum = 0, min_release = jobs[0].release, min_tail = jobs[0].tail;
    for (int32_t k = 0; k < n; k++) {
      sum += jobs[k].dur;
      if (jobs[k].release < min_release) min_release = jobs[k].release;
      if (jobs[k].tail < min_tail) min_tail = jobs[k].tail;
      if (min_release + sum + min_tail > best) best = min_release + sum + min_tail;
    }
  }
  return best;
}

double nd_ready_idle(const nd_run_task *run, int32_t n) {
  double idle = 0, done = n > 0 ? run[0].end : 0; /* the latest end so far: overlapping tasks leave no gap */
  for (int32_t i = 1; i < n; i++) {
    double from = fmax(done, run[i].ready);
    if (run[i].start > from) idle += run[i].start - from;
    done = fmax(done, run[i].end);
  }
  return idle;
}
