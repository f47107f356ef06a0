/* The scheduler's rules (placement, homes, restrictions, priorities, each
 * policy's queueing) as a nd_sim_schedule, from the configuration alone. */
#ifndef ND_SIM_SCHED_H
#define ND_SIM_SCHED_H

#include "configs/config.h"
#include "placement/homes.h"
#include "placement/placement.h"
#include "sim/sim.h"

/* Is this a runtime.scheduler the simulator replays? */
int nd_sim_policy_known(const char *policy);

/* g's ranks placed on m's workers by the runtime's placement
 * (placement/placement.h, nd_place): the units' ids are worker indices. */
int nd_sim_rank_map(const nd_sim_machine *m, const nd_graph *g, nd_rank_map *pl);

/* What a worker of each kind runs: the kinds the model times there. */
nd_unit_check nd_sim_unit_check(const nd_sim_model *model);

/* Homes and allowed workers from placement/homes.h, as the scheduler's
 * hints give them (deterministic: runtime.deterministic). */
int nd_sim_schedule_build(const nd_graph *g, const nd_edges *e, const nd_sim_machine *m, const nd_sim_model *model,
                          const char *policy, enum nd_placement placement, int deterministic,
                          enum nd_priority_order order, nd_sim_schedule *s);

#endif
