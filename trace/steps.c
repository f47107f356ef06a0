/* Several traced steps in one file, laid end to end (trace/model.h). */
#include <stdlib.h>

#include "common/error.h"
#include "trace/model.h"

/* A step while the layout is found: its span and its place in time. */
typedef struct span {
  int64_t step;
  double start_us, end_us, shift_us;
  int ran; /* position in the order the steps ran */
} span;

static int cmp_step(const void *a, const void *b) {
  int64_t x = ((const span *)a)->step, y = ((const span *)b)->step;
  return (x > y) - (x < y);
}

static int cmp_start(const void *a, const void *b) {
  double x = ((const span *)a)->start_us, y = ((const span *)b)->start_us;
  return (x > y) - (x < y);
}

/* The span of `step` in spans (n, sorted by step, step present). */
static span *find(span *spans, int n, int64_t step) {
  return bsearch(&(span){.step = step}, spans, (size_t)n, sizeof *spans, cmp_step);
}

int nd_trace_model_lay_steps(nd_trace_model *m) {
  int32_t n = m->n_slices;
  if (n < 2) return 0;
  for (int32_t i = 0; i < n; i++)
    if (m->slices[i].step < 0) return 0; /* a slice of no step: nothing to lay out */
  span *by_step = malloc((size_t)n * sizeof *by_step), *by_time = NULL;
  if (!by_step) return ND_ENOMEM;
  for (int32_t i = 0; i < n; i++) {
    const nd_trace_slice *x = &m->slices[i];
    by_step[i] = (span){x->step, x->ts, x->ts + x->dur, 0, 0};
  }
  qsort(by_step, (size_t)n, sizeof *by_step, cmp_step);
  int k = 0; /* steps */
  for (int32_t i = 0; i < n; i++) {
    span *last = k ? &by_step[k - 1] : NULL;
    if (last && last->step == by_step[i].step) {
      if (by_step[i].start_us < last->start_us) last->start_us = by_step[i].start_us;
      if (by_step[i].end_us > last->end_us) last->end_us = by_step[i].end_us;
    } else {
      by_step[k++] = by_step[i];
    }
  }
  int rc = 0;
  if (k < 2) goto done;
  if (!(by_time = malloc((size_t)k * sizeof *by_time)) || !(m->steps = malloc((size_t)k * sizeof *m->steps))) {
    rc = ND_ENOMEM;
    goto done;
  }
  for (int j = 0; j < k; j++) by_time[j] = by_step[j];
  qsort(by_time, (size_t)k, sizeof *by_time, cmp_start);
  /* each step moves back by the time between the steps before it */
  double gone = 0;
  for (int j = 0; j < k; j++) {
    if (j && by_time[j].start_us < by_time[j - 1].end_us) { /* steps that overlap: left as they are */
      free(m->steps);
      m->steps = NULL;
      goto done;
    }
    if (j) gone += by_time[j].start_us - by_time[j - 1].end_us;
    span *s = find(by_step, k, by_time[j].step);
    s->ran = j;
    s->shift_us = gone;
    m->steps[j] = (nd_trace_step_span){s->step, s->start_us - gone, s->end_us - gone};
  }
  m->n_steps = k;
  for (int32_t i = 0; i < n; i++) {
    nd_trace_slice *x = &m->slices[i];
    const span *s = find(by_step, k, x->step);
    x->in_step = s->ran;
    x->ts -= s->shift_us;
  }
done:
  free(by_time);
  free(by_step);
  return rc;
}
