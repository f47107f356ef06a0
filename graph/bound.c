/* Lower bounds on a step from its tasks' durations (graph/bound.h). */
#include "graph/bound.h"

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
