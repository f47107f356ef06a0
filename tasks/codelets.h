/* Internal to tasks/: the StarPU codelet of each IR task kind, and what its
 * CPU function receives as cl_arg. One file per task kind holds its codelet,
 * its CPU function and its performance model. */
#ifndef ND_TASKS_CODELETS_H
#define ND_TASKS_CODELETS_H

#include <starpu.h>

#include "graph/ir.h"
#include "tasks/exec.h"

/* What a task's functions see: the IR task, its graph and the step's values. */
typedef struct nd__task_ctx {
  const nd_task *task;
  const nd_graph *graph;
  const nd_step *step;
  const nd_exec_observer *observer; /* the executor's, read in the task's callback */
  int which;                        /* the graph's index in the executor */
} nd__task_ctx;

#define ND_CTX(arg) ((const nd__task_ctx *)(arg))
#define ND_F32(i) ((float *)STARPU_VECTOR_GET_PTR(buffers[i]))
#define ND_F64(i) ((double *)STARPU_VECTOR_GET_PTR(buffers[i]))
#define ND_I32(i) ((int32_t *)STARPU_VECTOR_GET_PTR(buffers[i]))

/* A codelet with a variable number of buffers (modes come with each task) and
 * a history-based performance model named after it. */
#define ND_CODELET(var, fn)                                                                  \
  static struct starpu_perfmodel var##_model = {.type = STARPU_HISTORY_BASED,                \
                                                .symbol = "ndgraph_" #var};                  \
  struct starpu_codelet nd__cl_##var = {.cpu_funcs = {fn},                                   \
                                        .cpu_funcs_name = {#fn},                             \
                                        .nbuffers = STARPU_VARIABLE_NBUFFERS,                \
                                        .model = &var##_model,                               \
                                        .name = #var}

/* The CPU function of kinds with a replaceable kernel: the task's buffers as
 * descriptors, then the implementation kernels/registry.h selected. */
void nd__dispatch_cpu(void *buffers[], void *arg);

/* The codelet that runs an IR task kind. */
struct starpu_codelet *nd__codelet(enum nd_task_kind kind);

#endif
