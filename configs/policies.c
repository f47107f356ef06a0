/* runtime.scheduler's names (configs/policies.h). */
#include "configs/policies.h"

#include <string.h>

const struct nd__name nd__policy_names[] = {
    {"ndws", ND_POLICY_NDWS},   {"eager", ND_POLICY_EAGER}, {"prio", ND_POLICY_PRIO},
    {"ws", ND_POLICY_WS},       {"lws", ND_POLICY_LWS},     {"dmda", ND_POLICY_DMDA},
    {"dmdas", ND_POLICY_DMDAS}, {"gpipe", ND_POLICY_GPIPE}, {"1f1b", ND_POLICY_1F1B},
    {"zbh1", ND_POLICY_ZBH1},   {"zbh2", ND_POLICY_ZBH2},   {"1f1b-split", ND_POLICY_1F1B_SPLIT},
    {NULL, 0}};

int nd_policy_of(const char *name) {
  for (const struct nd__name *n = nd__policy_names; name && n->name; n++)
    if (strcmp(n->name, name) == 0) return n->value;
  return -1;
}
