/* runtime.scheduler's names, in one table (configs/policies.c): the
 * configuration accepts them, the runtime starts them, the simulator and the
 * planner replay them. */
#ifndef ND_CONFIGS_POLICIES_H
#define ND_CONFIGS_POLICIES_H

#include "configs/keys.h"

/* Every policy, in the table's order: ndgraph's work stealer, StarPU's own
 * policies, then the fixed textbook orders that ndgraph's `ndseq` runs, in
 * graph/priority.h's enum nd_fixed_schedule order. */
enum nd_policy {
  ND_POLICY_NDWS,
  ND_POLICY_EAGER,
  ND_POLICY_PRIO,
  ND_POLICY_WS,
  ND_POLICY_LWS,
  ND_POLICY_DMDA,
  ND_POLICY_DMDAS,
  ND_POLICY_GPIPE,
  ND_POLICY_1F1B,
  ND_POLICY_ZBH1,
  ND_POLICY_ZBH2,
  ND_POLICY_1F1B_SPLIT,
  ND_POLICY_COUNT
};
#define ND_POLICY_FIRST_STARPU ND_POLICY_EAGER
#define ND_POLICY_FIRST_FIXED  ND_POLICY_GPIPE

/* The names and their enum values, NULL-ended: the configuration key's
 * allowed values (configs/keys.c). */
extern const struct nd__name nd__policy_names[];

/* The policy of that name, -1 when there is none. */
int nd_policy_of(const char *name);
/* Whether it is one of StarPU's own, started by name. */
static inline int nd_policy_is_starpu(int p) { return p >= ND_POLICY_FIRST_STARPU && p < ND_POLICY_FIRST_FIXED; }
/* The fixed order it runs (enum nd_fixed_schedule), or -1. */
static inline int nd_policy_fixed_order(int p) { return p >= ND_POLICY_FIRST_FIXED ? p - ND_POLICY_FIRST_FIXED : -1; }

#endif
