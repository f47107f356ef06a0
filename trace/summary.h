/* What a trace says about a step: per-worker busy and idle time, the bubble
 * fraction, time per task kind and phase, the critical path that was
 * actually executed, and the efficiency against a lower bound. */
#ifndef ND_TRACE_SUMMARY_H
#define ND_TRACE_SUMMARY_H

#include <stdio.h>

#include "trace/model.h"

typedef struct nd_trace_group {
  char name[ND_TRACE_NAME_MAX];
  int32_t count;
  double time_us;
} nd_trace_group;

typedef struct nd_trace_summary {
  int32_t tasks;
  int workers; /* threads that ran a slice or were named */
  double start_us, end_us, span_us, work_us;
  double *busy_us; /* [m->n_threads] */
  nd_trace_group *kinds, *phases;
  int n_kinds, n_phases;
  int32_t *path; /* slices of the critical path, first to last */
  int32_t path_len;
  double path_us;        /* sum of their durations */
  double lower_bound_us; /* max(path_us, work_us / workers) */
  double efficiency;     /* lower_bound_us / span_us */
} nd_trace_summary;

int nd_trace_summarize(const nd_trace_model *m, nd_trace_summary *s);
void nd_trace_summary_free(nd_trace_summary *s);

/* Human-readable text (milliseconds) or JSON (microseconds). */
int nd_trace_summary_print(FILE *f, const char *what, const nd_trace_model *m, const nd_trace_summary *s, int json);

#endif
