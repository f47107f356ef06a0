/* What a trace says about a step: per-worker busy and idle time (and where
 * the idle time falls), the bubble fraction, time per task kind and phase, the critical path that was
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

/* Gaps between a worker's tasks shorter than this are the runtime's own work
 * from one task to the next (releasing data and successors, the next pop);
 * longer ones are mostly waits for a dependency, a transfer or a slot. The
 * arrows tell exactly: see nd_trace_idle.ready_us. */
#define ND_TRACE_SHORT_GAP_US 100.0

/* Where a worker's idle time falls. In a trace of several steps (laid end to
 * end, trace/model.h) start and end are summed over the steps: before its
 * first task and after its last one in each. */
typedef struct nd_trace_idle {
  double lead_us;  /* from the (step's) start to its first task */
  double wait_us;  /* gaps between its tasks of ND_TRACE_SHORT_GAP_US or more */
  double short_us; /* shorter gaps between its tasks */
  int32_t n_short;
  /* Of wait_us + short_us: the time during which the task this worker ran
   * next was already ready (every arrow into it had ended), so the worker
   * idled for the runtime or the machine, not for a dependency or the
   * schedule's order. A task without arrows in never counts as ready. */
  double ready_us;
  double tail_us; /* from its last task to the (step's) end */
} nd_trace_idle;

typedef struct nd_trace_summary {
  int32_t tasks;
  int workers; /* threads that ran a slice or were named */
  double start_us, end_us, span_us, work_us;
  double *busy_us;      /* [m->n_threads] */
  double *step_busy_us; /* [m->n_steps]: the work of each traced step */
  nd_trace_idle *idle;  /* [m->n_threads] */
  nd_trace_group *kinds, *phases;
  int n_kinds, n_phases;
  int32_t *path; /* slices of the critical path, first to last */
  int32_t path_len;
  double path_us; /* sum of their durations */
  /* The longest path of durations along the arrows alone (the executed
   * critical path also follows a worker's order, which another schedule may
   * change), summed over the steps; 0 when the arrows form a cycle. */
  double dep_path_us;
  double lower_bound_us; /* max(dep_path_us, work_us / workers) */
  double efficiency;     /* lower_bound_us / span_us */
  /* Each task kept on the worker it ran on, in the best order the arrows
   * allow: per step, the largest of the longest arrow path and each worker's
   * nd_one_worker_bound (graph/bound.h), summed over the steps; 0 when the
   * arrows form a cycle. Tighter than lower_bound_us for a pinned pipeline. */
  double placed_bound_us;
  double placed_efficiency; /* placed_bound_us / span_us */
} nd_trace_summary;

int nd_trace_summarize(const nd_trace_model *m, nd_trace_summary *s);
void nd_trace_summary_free(nd_trace_summary *s);

/* Human-readable text (milliseconds) or JSON (microseconds). */
int nd_trace_summary_print(FILE *f, const char *what, const nd_trace_model *m, const nd_trace_summary *s, int json);

#endif
