/* Recorded steps -> a Chrome trace (Trace Event Format JSON), which Perfetto
 * and chrome://tracing open: one process per node (one without mpirun), one
 * thread per worker, one complete event per task with the IR's identity in args, one
 * named "help" per stretch a worker spent in another's kernel, and the IR's dependencies
 * as flow arrows. */
#ifndef ND_TRACE_CHROME_H
#define ND_TRACE_CHROME_H

#include "graph/ir.h"
#include "trace/job.h"
#include "trace/model.h" /* ND_TRACE_NAME_MAX */

typedef struct cJSON cJSON;

/* When and where one task ran (microseconds since StarPU started); worker -1: not seen. */
typedef struct nd_trace_time {
  double start, end;
  int worker;
} nd_trace_time;

/* Bytes StarPU moved between two memory nodes during a step (bus totals). */
typedef struct nd_trace_transfer {
  int src, dst;
  long long bytes;
  int count;
  double busy_us;
} nd_trace_transfer;

typedef struct nd_trace_step {
  long long step;
  nd_trace_time *times; /* [n_tasks of the run] */
  double begin_us, end_us;
  nd_trace_transfer *transfers;
  int n_transfers;
  /* when an idle worker ran blocks of another worker's kernel (runtime.wait_policy: help, common/share.h),
   * between its own tasks; this process's workers only */
  nd_trace_time *helps;
  int n_helps, cap_helps;
} nd_trace_step;

typedef struct nd_trace_run {
  const nd_trace_task *tasks; /* the job's: the step's on one process (trace/job.h) */
  int32_t n_tasks;
  const nd_edges *edges; /* between the tasks; NULL: no arrows */
  const nd_trace_step *steps;
  int n_steps;
  int n_workers;
  char (*worker_names)[ND_TRACE_NAME_MAX]; /* [n_workers] */
  const int *worker_node;                  /* [n_workers]: the node (process) of each; NULL: all on node 0 */
  int n_nodes;
  /* [ND_TASK_KIND_COUNT]: the implementation each kind runs ("builtin", an
   * activation's name, a plugin kernel's name) and where it comes from
   * ("builtin" or the plugin's file); NULL: not known */
  const char *const *impl, *const *impl_origin;
} nd_trace_run;

/* The document, or NULL when out of memory. */
cJSON *nd_trace_chrome_build(const nd_trace_run *run);

#endif
