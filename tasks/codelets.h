/* Internal to tasks/: one StarPU codelet per task kind, the same for every
 * kind. Its CPU and OpenCL functions turn the task's StarPU buffers into
 * descriptors and call what the run's kernel table (kernels/registry.h)
 * selected for the worker's backend; whether a worker can run a task follows
 * from that table too. */
#ifndef ND_TASKS_CODELETS_H
#define ND_TASKS_CODELETS_H

#include <starpu.h>

#include "graph/ir.h"
#include "kernels/registry.h"
#include "tasks/exec.h"

/* What a task's functions see: the IR task, its graph and the step's values. */
typedef struct nd__task_ctx {
  const nd_task *task;
  const nd_graph *graph;
  const nd_step *step;
  const nd_exec_observer *observer;  /* the executor's, read in the task's callback */
  const struct nd__forward *forward; /* the graph's copies started in that callback */
  int which;                         /* the graph's index in the executor */
  nd_kernels *kernels;               /* the run's table; NULL: the built-ins */
} nd__task_ctx;

/* Runs task c's kernel for backend dev on its buffers (what the kind's
 * codelet does on a worker of that backend; a chain calls it per member). */
void nd__codelet_call(void *buffers[], const nd__task_ctx *c, int dev);
/* Whether the run's kernel table gives task t a kernel on backend dev. */
int nd__codelet_runs(const nd__task_ctx *c, int dev);

/* The codelet that runs an IR task kind (after nd_runtime_start). */
struct starpu_codelet *nd__codelet(enum nd_task_kind kind);

#endif
