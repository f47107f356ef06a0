/* The scheduler's rules (placement, homes, restrictions, priorities, each
 * policy's queueing) as a nd_sim_schedule, from the configuration alone. */
#ifndef ND_SIM_SCHED_H
#define ND_SIM_SCHED_H

#include "configs/config.h"
#include "sim/sim.h"

/* Is this a runtime.scheduler the simulator replays? */
int nd_sim_policy_known(const char *policy);

/* Ranks onto workers: rank r runs on workers first[r] .. first[r] + count[r). */
void nd_sim_place(const nd_sim_machine *m, int n_ranks, int tp, int *first, int *count);

/* The worker task t runs on first (scheduler/hints.c's nd_task_unit): its
 * rank's worker, micro-batches spread over the rank's workers when spread,
 * else a CPU worker when the task cannot run on that device. */
int nd_sim_task_worker(const nd_graph *g, const nd_sim_machine *m, const nd_sim_model *model, const int *first,
                       const int *count, const nd_task *t, int spread);

int nd_sim_schedule_build(const nd_graph *g, const nd_edges *e, const nd_sim_machine *m, const nd_sim_model *model,
                          const char *policy, enum nd_placement placement, enum nd_priority_order order,
                          nd_sim_schedule *s);

#endif
