/* Names of ndgraph's policies. */
#include "scheduler/policies.h"

#include <string.h>

#include "graph/priority.h"

int nd_sched_is_fixed(const char *name) { return nd_fixed_schedule_of(name) >= 0; }

struct starpu_sched_policy *nd_sched_policy(const char *name) {
  if (strcmp(name, "ndws") == 0) return &nd_ndws_policy;
  if (nd_sched_is_fixed(name)) return &nd_ndseq_policy;
  return NULL;
}
