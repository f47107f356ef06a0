/* `ndgraph kernel-check PLUGIN NAME`: a plugin's kernel NAME on random inputs
 * against ndgraph's reference, one line per case and a verdict.
 * Exit status: 0 pass, 1 fail, else nd_cli_status (2 for an unusable plugin or name). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "kernels/registry.h"

int nd_cli_kernel_check(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ndgraph kernel-check PLUGIN.so NAME\n");
    return ND_EXIT_BAD_INPUT;
  }
  const char *path = argv[0], *name = argv[1];
  nd_error err = {0};
  int rc = nd_kernels_load_one(path, &err);
  int checked = 0, failed = 0;
  const nd__kernel_impl *act = rc ? NULL : nd__activation_find(name);
  if (act && strcmp(act->origin, path) == 0) {
    checked++;
    rc = nd__kernel_check(ND_TASK_ACT_FWD, act, 0, stdout, &err);
    failed |= rc > 0;
  }
  for (int k = 0; k < ND_TASK_KIND_COUNT && rc >= 0; k++) {
    const nd__kernel_impl *im = nd__kernel_find((enum nd_task_kind)k, name);
    if (!im || strcmp(im->origin, path) != 0) continue;
    checked++;
    rc = nd__kernel_check((enum nd_task_kind)k, im, 0, stdout, &err);
    failed |= rc > 0;
  }
  nd_kernels_teardown();
  if (rc < 0) return nd_cli_fail(rc, &err);
  if (!checked) {
    fprintf(stderr, "ndgraph: %s: the plugin registers no activation or kernel named '%s'\n", path, name);
    return ND_EXIT_BAD_INPUT;
  }
  printf("kernel-check %s (%s): %s\n", name, path, failed ? "FAIL" : "PASS");
  return failed ? ND_EXIT_FAILURE : 0;
}
