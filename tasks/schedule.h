/* Where the scheduler meets the executor: what a unit can run, and a graph's
 * hints handed to the running executor. The scheduler sees neither tasks/
 * nor StarPU codelets; this is the one place that knows both. */
#ifndef ND_TASKS_SCHEDULE_H
#define ND_TASKS_SCHEDULE_H

#include "scheduler/hints.h"
#include "tasks/exec.h"

/* What this executor's codelets and kernels can run on each kind of unit
 * (an nd_unit_check's runs_on; ctx: the nd_exec, whose kernel table says
 * what a device runs; NULL: the built-ins). */
int nd_exec_runs_on(const void *ctx, const nd_task *t, int unit_kind);

/* Places g's ranks on the running workers: all of them in one process;
 * under mpirun this process's ranks (tasks/mpi.h) on its own workers, and
 * the other processes' ranks, whose tasks never run here, on any. */
int nd_sched_place(const nd_graph *g, nd_rank_map *pl, nd_error *err);

/* Places g on the running workers and gives graph `which` of ex its hints
 * (measured as for nd_hints_compute). */
int nd_sched_apply(nd_exec *ex, int which, const nd_graph *g, const nd_config *cfg, const double *measured,
                   nd_error *err);
/* The same with cpu_only: the ranks placed on the CPU workers alone and every
 * task restricted to them (the devices idle), as if the node had none. */
int nd_sched_apply_on(nd_exec *ex, int which, const nd_graph *g, const nd_config *cfg, const double *measured,
                      int cpu_only, nd_error *err);
/* The chains (tasks/chain.h) a run of cfg makes of g's tasks, into
 * len[n_tasks], as far as they follow from the graph (without a fixed
 * order's positions, which only cut chains the textbook orders keep whole),
 * with every device backend built in: what `plan --nodes` counts. Every
 * task alone without runtime.chain_tasks. 0 or ND_ENOMEM. */
int nd_sched_chains(const nd_graph *g, const nd_config *cfg, int32_t *len);
/* Does g's placement on the running workers put ranks on workers of
 * different kinds (CPU cores beside devices)? */
int nd_sched_mixed_ranks(const nd_graph *g);

#endif
