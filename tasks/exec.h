/* Runs IR graphs on StarPU: every tensor registered once as a data handle and
 * reused every step, each IR task submitted with its access modes, so that
 * StarPU's dependencies are exactly the IR's. */
#ifndef ND_TASKS_EXEC_H
#define ND_TASKS_EXEC_H

#include <stdint.h>

#include "configs/config.h"
#include "data/dataset.h"
#include "graph/ir.h"
#include "kernels/backend.h"
#include "kernels/registry.h"

/* nd_step, the values of one submission that the graph does not hold, is
 * kernels/backend.h's: implementations read it. */

/* StarPU for this process: workers and policy from the configuration, and
 * the backends' start. StarPU is process-wide: the first start starts it,
 * the last stop stops it; a start while it runs with other workers, OpenCL
 * devices or policy is refused (ND_ECONFIG). */
int nd_runtime_start(const nd_config *cfg, nd_error *err);
void nd_runtime_stop(void);
/* The environment nd_runtime_start gives StarPU (policy from the
 * configuration, quiet, CPU-type OpenCL devices listed), for a caller that
 * starts StarPU itself. */
void nd_runtime_starpu_env(void);
/* CPU workers StarPU actually started. */
int nd_runtime_workers(void);
/* Devices of kind `kind` (enum nd_kernel_backend) StarPU actually started
 * (0 where no backend of that kind is built in). */
int nd_runtime_devices(int kind);
/* The i-th of them as its backend names it ("<kind>N: model, memory") in
 * out (at most size bytes): 0, or -1 past the end or where the backend
 * does not describe its devices. */
int nd_runtime_device_name(int kind, int i, char *out, size_t size);
/* Whether the backend of that kind is built in. */
int nd_runtime_has_backend(int kind);

typedef struct nd_exec nd_exec;

/* Whether task t can run on a device of `backend` (a device kind, not the
 * CPU) under ex's kernel table (ex NULL: the built-ins): the
 * implementation selected for its kind has a kernel there. Tasks that cannot
 * go to a CPU worker wherever their rank is placed. */
int nd_exec_runs_on_device(const nd_exec *ex, int backend, const nd_task *t);

/* Allocates and registers the tensors of `owner` (one block per rank and
 * tensor kind, so parameters and gradients are one allocation each). */
int nd_exec_create(nd_exec **out, const nd_graph *owner, nd_error *err);
void nd_exec_free(nd_exec *ex);
/* The kernel table ex's tasks run with (the caller keeps it open while ex
 * runs). Not called: the built-ins. */
void nd_exec_set_kernels(nd_exec *ex, nd_kernels *k);
/* Makes another graph runnable on the same tensors (matched by name, each
 * at most its owner's size: a smaller one uses the start of the buffer), e.g.
 * the evaluation graph; returns its index for nd_exec_submit. */
int nd_exec_add_graph(nd_exec *ex, const nd_graph *g, nd_error *err);
/* Submits every task of graph `which` (0 is the owner) and waits for them. */
int nd_exec_run(nd_exec *ex, int which, const nd_step *step, nd_error *err);
/* The tensor bytes this process holds (docs/memory.md): in main memory for
 * rank index `rank`, allocated once and held for the run; on device memory
 * nodes, the most StarPU held there at the end of a step run so far. */
int64_t nd_exec_rank_bytes(const nd_exec *ex, int rank);
int64_t nd_exec_device_peak(const nd_exec *ex);
/* Told of every task of a run when it ends, from StarPU's profiling
 * information (microseconds since StarPU started, and the worker). Profiling
 * is on only while an observer is set, so runs without one pay nothing. */
typedef struct nd_exec_observer {
  void (*task_done)(void *user, int graph, int32_t task, double start_us, double end_us, int worker);
  void *user;
} nd_exec_observer;
void nd_exec_observe(nd_exec *ex, const nd_exec_observer *obs); /* NULL: stop */
int nd_exec_observed(const nd_exec *ex);                        /* an observer is set */

/* Per-task scheduling hints for graph `which`, applied at submission:
 * priorities (StarPU's range) and, when workers is not NULL, the workers each
 * task may run on (a bitmap per task, bit w for worker w; 0: any). */
int nd_exec_set_hints(nd_exec *ex, int which, const int *priority, const uint32_t *workers, int mask_words);
/* The worker each task of graph `which` should be queued on first (-1: no
 * preference), for ndgraph's own policies, which read it from
 * task->sched_data as (void *)(home + 1). StarPU's policies must not get it. */
int nd_exec_set_homes(nd_exec *ex, int which, const int *home);
/* What graph `which` was given by the two above, as it runs: each task's
 * home (NULL: none) and the workers it may use (NULL: any), mask_words
 * words per task; a test compares them with the planner's (the simulator's). */
void nd_exec_placement(const nd_exec *ex, int which, const int **home, const uint32_t **workers, int *mask_words);
/* Tasks of graph `which` run in chains (tasks/chain.h): len as
 * nd__chain_plan makes it; NULL: every task alone. One process only. */
int nd_exec_set_chains(nd_exec *ex, int which, const int32_t *len);
/* How many outputs task `task` of graph `which` sends ahead when it ends, to
 * the memory node of their next reader's home (tasks/forward.h; set with the
 * homes, on one process). */
int32_t nd_exec_forwarded(const nd_exec *ex, int which, int32_t task);

/* Task `task` of graph `which`, an all-reduce, runs as one task per
 * participant on the devices' collective library (tasks/collective.h):
 * participant p on worker workers[p] as rank p of their backend's
 * communicator comm. workers NULL: back to one task (the ordered sum). */
int nd_exec_set_collective(nd_exec *ex, int which, int32_t task, const int *workers, int comm);

/* Several processes (tasks/mpi.h): how many, and which this one is (me). */
int nd_exec_procs(const nd_exec *ex, int *me);
/* This process owns the tensor (always, with one process). */
int nd_exec_local(const nd_exec *ex, int32_t tensor);
/* Tasks of graph `which` this process submits each run. */
int64_t nd_exec_visited(const nd_exec *ex, int which);
/* The last run's submission: the StarPU tasks it submitted in this process
 * (a chain counts once) and the seconds its submission loop took (StarPU's
 * and StarPU-MPI's insertion, tasks already running meanwhile). */
void nd_exec_submission(const nd_exec *ex, int64_t *tasks, double *seconds);
/* The same loop as the submitting thread's CPU time (its cost without the
 * time it waited for a core the workers held) and the StarPU buffers its
 * tasks declared (bench/submit). */
void nd_exec_submission_cost(const nd_exec *ex, double *cpu_seconds, int64_t *buffers);
/* What submitting costs per buffer a StarPU task declares, for estimates
 * without a run (`plan --nodes`): StarPU's dependency tracking is per
 * buffer, and a chain declares more than a task alone (docs/nodes.md,
 * Submission: bench/submit's CPU time under mpirun, the largest of its
 * rows). */
#define ND_SUBMIT_US_PER_BUFFER 0.9

/* Host memory of an owner tensor, valid between acquire and release. With
 * several processes every process calls both, in the same order: a read
 * brings the tensor from its owner; a write is for the owner only. */
void *nd_exec_acquire(nd_exec *ex, int32_t tensor, int write);
void nd_exec_release(nd_exec *ex, int32_t tensor);
/* A one-element f64 tensor's value (a statistic of the step), read as
 * nd_exec_acquire reads; and g's loss, its replicas' shares summed in
 * replica order. */
double nd_exec_read_f64(nd_exec *ex, int32_t tensor);
double nd_exec_read_loss(nd_exec *ex, const nd_graph *g);

#endif
