/* Internal to tasks/: the StarPU codelet of each IR task kind, and what its
 * CPU function receives as cl_arg. One file per task kind holds its codelet,
 * its CPU function and its performance model. */
#ifndef ND_TASKS_CODELETS_H
#define ND_TASKS_CODELETS_H

#include <starpu.h>

#include "graph/ir.h"
#include "kernels/registry.h"
#include "ndconfig.h"
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

/* A codelet with a variable number of buffers (modes come with each task), a
 * CPU function, an OpenCL function when the build has the OpenCL backend,
 * and a history-based performance model named after it (StarPU keeps one
 * history per architecture, so CPU workers and each OpenCL device kind are
 * calibrated apart). */
#ifdef ND_HAVE_OPENCL
#include "kernels/opencl/opencl.h"
#define ND_MEM(i) ((cl_mem)STARPU_VECTOR_GET_DEV_HANDLE(buffers[i]))
#define ND__OPENCL_FUNCS(ocl) .opencl_funcs = {ocl}, .can_execute = nd__can_execute,
/* Whether a worker may run a task: OpenCL workers only what nd_exec_runs_on_opencl allows. */
int nd__can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl);
/* A failed OpenCL call inside a task, reported like a kernel's failure. */
#define ND_OCL_CHECK(kind, call)            \
  do {                                      \
    int rc_ = (call);                       \
    if (rc_) nd__kernel_report((kind), rc_); \
  } while (0)
#else
#define ND__OPENCL_FUNCS(ocl)
#endif

#define ND__CODELET(var, fn, ocl)                                                            \
  static struct starpu_perfmodel var##_model = {.type = STARPU_HISTORY_BASED,                \
                                                .symbol = "ndgraph_" #var};                  \
  struct starpu_codelet nd__cl_##var = {.cpu_funcs = {fn},                                   \
                                        .cpu_funcs_name = {#fn},                             \
                                        ND__OPENCL_FUNCS(ocl)                                \
                                        .nbuffers = STARPU_VARIABLE_NBUFFERS,                \
                                        .model = &var##_model,                               \
                                        .name = #var}
/* CPU only (tasks whose buffers span ranks, or that run host code). */
#define ND_CODELET(var, fn) ND__CODELET(var, fn, NULL)
/* CPU and OpenCL; `ocl` is only compiled in builds with OpenCL. */
#define ND_CODELET_OCL(var, fn, ocl) ND__CODELET(var, fn, ocl)

/* The CPU function of kinds with a replaceable kernel: the task's buffers as
 * descriptors, then the implementation kernels/registry.h selected. */
void nd__dispatch_cpu(void *buffers[], void *arg);

/* The codelet that runs an IR task kind. */
struct starpu_codelet *nd__codelet(enum nd_task_kind kind);

#endif
