/* A Chrome trace read back into memory: the complete ("X") events as slices,
 * the threads they ran on, and the dependency arrows bound to their slices.
 * The summary and the Gantt chart work on this, so they accept any file in
 * the format, hand-made ones included, not only ours. */
#ifndef ND_TRACE_MODEL_H
#define ND_TRACE_MODEL_H

#include <stdint.h>

#include "ndgraph/ndgraph.h"

typedef struct cJSON cJSON;

/* A name as written or read: StarPU's worker names run past 64 bytes ("OpenCL
 * 0 (pthread-skylake-avx512-Intel(R) Xeon(R) Processor ...)"). */
#define ND_TRACE_NAME_MAX 128

typedef struct nd_trace_slice {
  char name[ND_TRACE_NAME_MAX];
  char phase[16];  /* args.phase, "" when absent */
  int micro_batch; /* args.micro_batch, -1 when absent */
  int64_t task;    /* args.task, -1 when absent */
  int64_t step;    /* args.step, -1 when absent */
  int32_t in_step; /* index into nd_trace_model.steps, -1 when it has none */
  int thread;      /* index into nd_trace_model.threads */
  int32_t event;   /* its index in the file's event array, for messages */
  double ts, dur;  /* microseconds */
} nd_trace_slice;

typedef struct nd_trace_thread {
  int pid, tid;
  char name[ND_TRACE_NAME_MAX]; /* thread_name metadata, or "pid:tid" */
  int sort;                     /* thread_sort_index, else tid */
  int named;                    /* had thread_name metadata */
  int32_t n_slices;             /* slices on it */
} nd_trace_thread;

/* A thread is a worker when it ran a slice or was named: an idle worker counts. */
static inline int nd_trace_is_worker(const nd_trace_thread *t) { return t->n_slices > 0 || t->named; }

typedef struct nd_trace_flow {
  int32_t from, to; /* slices */
} nd_trace_flow;

/* One traced step of a file that holds several (trace.steps: [2, 50]). */
typedef struct nd_trace_step_span {
  int64_t step;            /* args.step */
  double start_us, end_us; /* once the steps are laid end to end */
} nd_trace_step_span;

typedef struct nd_trace_model {
  nd_trace_slice *slices;
  int32_t n_slices;
  nd_trace_thread *threads;
  int n_threads;
  nd_trace_flow *flows;
  int32_t n_flows;
  nd_trace_step_span *steps; /* in the order they ran; none unless 2 or more steps, disjoint in time */
  int n_steps;
} nd_trace_model;

/* From a parsed document ({"traceEvents": [...]} or a bare array). */
int nd_trace_model_from_json(nd_trace_model *m, const cJSON *doc, const char *what, nd_error *err);
int nd_trace_model_load(nd_trace_model *m, const char *path, nd_error *err);
/* Lays several traced steps end to end (trace/steps.c): the time between two
 * traced steps belongs to steps nobody traced, and kept it would read as idle
 * workers (a 95% bubble for steps 2 and 50). Fills m->steps; leaves a trace of
 * one step, or of steps that overlap in time, as it is. */
int nd_trace_model_lay_steps(nd_trace_model *m);
void nd_trace_model_free(nd_trace_model *m);

#endif
