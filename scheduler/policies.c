/* Names of ndgraph's policies. */
#include "scheduler/policies.h"

#include "configs/policies.h"

int nd_sched_is_fixed(const char *name) { return nd_policy_fixed_order(nd_policy_of(name)) >= 0; }

struct starpu_sched_policy *nd_sched_policy(const char *name) {
  int p = nd_policy_of(name);
  if (p == ND_POLICY_NDWS) return &nd_ndws_policy;
  if (nd_policy_fixed_order(p) >= 0) return &nd_ndseq_policy;
  return NULL;
}
