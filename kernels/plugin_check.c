/* `ndgraph kernel-check PLUGIN NAME`: a plugin's kernels and activations
 * named NAME, each against ndgraph's reference (kernels/check.c), on every
 * backend the plugin gives them for. */
#include <string.h>

#include "common/error.h"
#include "kernels/probe.h"
#include "kernels/registry.h"

typedef struct check_args {
  const char *plugin, *name;
  FILE *out;
} check_args;

static int check(const void *arg, nd_error *err) {
  const char *plugin = ((const check_args *)arg)->plugin, *name = ((const check_args *)arg)->name;
  FILE *out = ((const check_args *)arg)->out;
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

/* In a child process (kernels/probe.h): a plugin that crashes, hangs or
 * exits is named and fails the check instead of ending it (an exit(0)
 * would read as a pass). */
int nd_kernel_check(const char *plugin, const char *name, int timeout_s, FILE *out, nd_error *err) {
  check_args a = {plugin, name, out};
  nd__probe_ctx ctx = {"kernel-check", "--timeout", timeout_s > 0 ? timeout_s : ND_PROBE_TIMEOUT_S};
  return nd__probe(&ctx, check, &a, err);
}
