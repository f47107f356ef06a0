/* What the scheduler tells StarPU about each task of a graph: its home
 * worker and the workers it may use (runtime.placement), both from
 * placement/homes.h as the simulator takes them, and its priority (upward
 * rank, or the position in a fixed schedule). */
#ifndef ND_SCHEDULER_HINTS_H
#define ND_SCHEDULER_HINTS_H

#include <stdint.h>
#include <stdio.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "placement/homes.h"
#include "placement/placement.h"

typedef struct nd_hints {
  int *priority;     /* [n_tasks], in the running policy's range */
  uint32_t *workers; /* [n_tasks][mask_words] bitmaps of worker ids, all 0: any; NULL when nothing is restricted */
  int mask_words;
  int *home; /* [n_tasks], -1: none */
} nd_hints;

/* Hints for g placed on `pl` under cfg's policy and placement, priorities in
 * [lo, hi]. measured: seconds per task from a calibration step (NULL: the
 * FLOPs/bytes cost model; a task measured at 0 keeps the model's figure). */
int nd_hints_compute(const nd_graph *g, const nd_config *cfg, const nd_rank_map *pl, const nd_unit_check *can,
                     const double *measured, int lo, int hi, nd_hints *out);
void nd_hints_free(nd_hints *h);

/* Whether all-reduce t may run as one task per participant on the GPUs'
 * collective library (tasks/schedule.c asks their backend for it):
 * the first unit of each participant's rank (its part's home) is a GPU, and
 * no two participants share one. unit (t->a.coll.nparts entries) gets those
 * units, as indices into pl->units, in participant order. */
int nd_coll_gpu_units(const nd_graph *g, const nd_rank_map *pl, const nd_task *t, int *unit);

/* Bytes per step that cross between memory nodes: for every read (R or RW)
 * of a tensor by a task, the tensor's bytes when the memory node of the unit
 * the task runs on (nd_task_unit) differs from that of its home rank's first unit.
 * nvlink (may be NULL) gets the part between two GPUs of one NVLink group;
 * the rest crosses PCIe (or host memory). */
int64_t nd_cross_node_bytes(const nd_graph *g, const nd_rank_map *pl, const nd_unit_check *can, int64_t *nvlink);

/* Before allocating (scheduler/fit.c): the memory `plan` gives for g's ranks
 * against what the machine has: host RAM for all of them (every tensor has
 * a host copy), each OpenCL device's global memory for the ranks placed on
 * it. ND_ECONFIG with both numbers unless runtime.allow_oversubscribe. */
int nd_sched_check_memory(const nd_graph *g, const nd_config *cfg, nd_error *err);

/* The running StarPU workers as placement units. */
int nd_runtime_units(nd_unit *units, int max);

/* The units `ndgraph plan` places ranks on: the topology's GPUs when it has
 * any, else its cores (runtime.workers of them, all when 0; on this machine
 * capped as StarPU caps CPU workers). Returns how many, or ND_ENOMEM. */
int nd_plan_units(hwloc_topology_t topo, const nd_config *cfg, nd_unit **out, int *gpus);

#endif
