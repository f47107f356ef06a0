/* `ndgraph kernel-check PLUGIN NAME`: a plugin's kernels and activations
 * named NAME, each against ndgraph's reference (kernels/check.c), on every
 * backend the plugin gives them for. */
#include <string.h>

#include "common/error.h"
#include "kernels/registry.h"

int nd_kernel_check(const char *plugin, const char *name, FILE *out, nd_error *err) {
  nd_kernels *k = NULL;
  int rc = nd_kernels_open_one(&k, plugin, err);
  int checked = 0, failed = 0;
  const nd__kernel_impl *act = rc ? NULL : nd__activation_find(k, name);
  if (act && strcmp(act->origin, plugin) == 0) {
    checked++;
    rc = nd__kernel_check(ND_TASK_ACT_FWD, act, 0, out, err);
    failed |= rc > 0;
  }
  for (int kind = 0; kind < ND_TASK_KIND_COUNT && rc >= 0; kind++) {
    const nd__kernel_impl *im = nd__kernel_find(k, (enum nd_task_kind)kind, name);
    if (!im || strcmp(im->origin, plugin) != 0) continue;
    checked++;
    rc = nd__kernel_check((enum nd_task_kind)kind, im, 0, out, err);
    failed |= rc > 0;
  }
  nd_kernels_close(k);
  if (rc < 0) return rc;
  if (!checked)
    return nd__fail(err, ND_EINVAL, "%s: the plugin registers no activation or kernel named '%s'", plugin, name);
  return failed;
}
