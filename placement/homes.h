/* Each task's home unit and the units it may run on, from a rank map and
 * the configuration's rules alone: the scheduler's hints (scheduler/hints.c)
 * and the simulator (sim/sched.c) both take them from here, so that the
 * planner simulates the placement that runs. */
#ifndef ND_PLACEMENT_HOMES_H
#define ND_PLACEMENT_HOMES_H

#include <stdint.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "placement/placement.h"

/* Whether task t may run on a unit of kind `unit_kind` (enum nd_kernel_backend).
 * Who asks knows: the executor (tasks/schedule.h, ctx its state) for a run,
 * the calibration for a simulated step. */
typedef struct nd_unit_check {
  int (*runs_on)(const void *ctx, const nd_task *t, int unit_kind);
  const void *ctx;
} nd_unit_check;

/* The unit (an index into pl->units) task t of g runs on first: its rank's
 * unit (micro-batches spread over the rank's units when spread), or a CPU
 * unit, the rank's own first, when t cannot run on that unit's device. */
int nd_task_unit(const nd_graph *g, const nd_rank_map *pl, const nd_unit_check *can, const nd_task *t, int spread);

/* Whether tasks are restricted to some units (nd_task_homes fills mask):
 * under a fixed order, under strict placement, and under runtime.deterministic
 * on a node of more than one kind of unit. */
int nd_task_restricted(const nd_rank_map *pl, int fixed, enum nd_placement mode, int deterministic);

/* For every task i of g: home[i], the id of the unit it runs on first
 * (nd_task_unit, micro-batches spread unless fixed), or -1 under free
 * placement without a fixed order; and, when mask is not NULL (see
 * nd_task_restricted), mask[i * nd_rank_map_mask_words(pl) ...] gets the
 * bits of the unit ids it may run on: a fixed order pins it to its home;
 * strict adds its rank's units; under runtime.deterministic on a mixed node,
 * every unit of its home's kind. mask must start zeroed. */
void nd_task_homes(const nd_graph *g, const nd_rank_map *pl, const nd_unit_check *can, int fixed,
                   enum nd_placement mode, int deterministic, int *home, uint32_t *mask);

#endif
