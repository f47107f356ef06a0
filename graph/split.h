/* How many layers each pipeline stage gets when stages run at different
 * speeds: shared by the runtime's calibration (train/balance.c) and the
 * planner (sim/planner.c), so both pick the same split from the same times. */
#ifndef ND_GRAPH_SPLIT_H
#define ND_GRAPH_SPLIT_H

#include "graph/ir.h"

/* The split of L layers over p stages, each at least one layer, that
 * minimizes max over s of other[s] + split[s] * per_layer[s] (dynamic
 * programming, O(p L^2)). Ties: the first found, stages in order, fewer
 * layers first, so the split is deterministic. Returns 0, ND_EINVAL when
 * L < p, or ND_ENOMEM. */
int nd_stage_split(int p, int L, const double *other, const double *per_layer, int *split);

/* Task times summed per stage, those of the layers' tasks (layer_us) and
 * the others (other_us), each [g->pp]: us[i] is task i's time, 0 for a task
 * not timed (run by another process), so that the processes' sums add up
 * to the step's whatever part of the step each one's graph holds. */
void nd_stage_times(const nd_graph *g, const double *us, double *layer_us, double *other_us);

#endif
