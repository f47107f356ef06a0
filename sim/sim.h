/* A discrete-event simulator of one training step: the IR's tasks on a
 * described machine (workers grouped by memory node, links between the
 * nodes), with a duration model per task kind and kind of device, replaying
 * the scheduler's rules (sim/sched.c turns a configuration into them). It
 * needs no StarPU, so tests describe machines by hand and the planner ranks
 * layouts of machines that are not here. */
#ifndef ND_SIM_SIM_H
#define ND_SIM_SIM_H

#include <hwloc.h>
#include <stdint.h>

#include "graph/ir.h"
#include "ndgraph/kernel.h"

#define ND_SIM_MAX_WORKERS 64
#define ND_SIM_MAX_NODES   17
/* an idle worker polls about this long before it may sleep (docs/scheduler.md, Idle workers) */
#define ND_SIM_POLL_S 1e-3

/* The machine: worker w computes on kind[w] (enum nd_kernel_backend) and
 * reads memory node node[w] (0: host memory). Workers are listed CPU cores
 * first, then devices, as the runtime numbers its workers; placement
 * (placement/placement.h) orders them as it orders the runtime's. */
typedef struct nd_sim_machine {
  int n_workers, n_nodes;
  int kind[ND_SIM_MAX_WORKERS];
  int node[ND_SIM_MAX_WORKERS];
  /* worker w's core or GPU in topology, as the runtime's unit has it, so
   * that placement sorts and groups the workers as it does the runtime's;
   * NULL: unknown (every worker of a machine described by hand) */
  hwloc_obj_t obj[ND_SIM_MAX_WORKERS];
  hwloc_topology_t topology;                            /* owns obj; NULL for a machine described by hand */
  int64_t memory[ND_SIM_MAX_NODES];                     /* capacity in bytes; 0: unknown (never rejects) */
  char node_name[ND_SIM_MAX_NODES][24];                 /* "host", then the kind and number: "opencl0" */
  double bandwidth[ND_SIM_MAX_NODES][ND_SIM_MAX_NODES]; /* bytes/s from node a to node b */
  double latency_s;                                     /* per transfer */
} nd_sim_machine;

/* seconds = overhead_s + flops * s_per_flop + bytes * s_per_byte on one
 * worker of that kind; valid 0: the kind cannot run there. */
typedef struct nd_sim_fit {
  int valid;
  double overhead_s, s_per_flop, s_per_byte;
} nd_sim_fit;

typedef struct nd_sim_model {
  nd_sim_fit fit[ND_TASK_KIND_COUNT][ND_BACKEND_COUNT];
  /* scheduling cost between two tasks of a worker (pop, dependencies, the
   * submitting thread's share of the cores), per kind of worker */
  double gap_s[ND_BACKEND_COUNT];
  /* instead of the gap, from a task becoming ready to its start on a worker
   * that had nothing to run for ND_SIM_POLL_S or more: it stopped polling
   * and slept, or on a shared machine lost its core, and has to get it
   * back (a shorter wait finds the task polling, as after a gap) */
  double wake_s[ND_BACKEND_COUNT];
  /* per-step cost outside the tasks (submission start, waiting for the end) */
  double step_overhead_s;
  /* a CPU task that starts while an OpenCL worker computes takes this many
   * times its time: PoCL's threads run on the same cores; 0: as 1 */
  double cpu_beside_opencl;
  /* a CPU task takes this many times its fit: the mean over the median on
   * a machine that other processes share (a task loses its core now and
   * then); 0: as 1 */
  double cpu_shared;
} nd_sim_model;

/* Seconds for task t on a worker of that kind (negative: cannot run there). */
double nd_sim_task_seconds(const nd_sim_model *m, const nd_task *t, int kind);

/* How tasks reach workers: the scheduler's rules, per task. */
typedef struct nd_sim_schedule {
  int *home;           /* [n_tasks] first worker, -1: the worker that released it */
  uint64_t *allowed;   /* [n_tasks] workers it may run on (bit w); 0: any that can run it */
  int *priority;       /* [n_tasks] higher first; fixed: minus the position in home's sequence */
  int fixed;           /* each worker runs its tasks in sequence order, nothing else */
  int steal;           /* idle workers take the best task of the nearest busy queue */
  int earliest_finish; /* a ready task goes to the allowed worker that would finish it first */
  int steal_if_faster; /* a thief takes a task only when it would finish it before its owner */
  int use_priority;    /* 0: queues are first in, first out (eager) */
  int *rank_node;      /* [dp * pp * tp] memory node of each rank's first worker: where its tensors live */
} nd_sim_schedule;

void nd_sim_schedule_free(nd_sim_schedule *s);

typedef struct nd_sim_result {
  double step_s;
  double busy_s[ND_SIM_MAX_WORKERS];
  double bubble; /* idle share of all workers over the step */
  int64_t peak_bytes[ND_SIM_MAX_NODES];
  int64_t transfer_bytes;
  /* per task, when the caller passes arrays (else NULL) */
  double *start, *end;
  int *worker;
} nd_sim_result;

/* Simulates g. duration: seconds per task on every worker (NULL: from model).
 * Fills out (keeps out->start/end/worker, filled when not NULL). */
int nd_sim_run(const nd_graph *g, const nd_edges *e, const nd_sim_machine *m, const nd_sim_model *model,
               const double *duration, const nd_sim_schedule *s, nd_sim_result *out);

#endif
