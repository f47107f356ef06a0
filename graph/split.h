/* How many layers each pipeline stage gets when stages run at different
 * speeds: shared by the runtime's calibration (train/balance.c) and the
 * planner (sim/planner.c), so both pick the same split from the same times. */
#ifndef ND_GRAPH_SPLIT_H
#define ND_GRAPH_SPLIT_H

/* The split of L layers over p stages, each at least one layer, that
 * minimizes max over s of other[s] + split[s] * per_layer[s] (dynamic
 * programming, O(p L^2)). Ties: the first found, stages in order, fewer
 * layers first, so the split is deterministic. Returns 0, ND_EINVAL when
 * L < p, or ND_ENOMEM. */
int nd_stage_split(int p, int L, const double *other, const double *per_layer, int *split);

#endif
