/* `ndgraph kernel-check PLUGIN NAME`: a plugin's kernel NAME on random inputs
 * against ndgraph's reference, one line per case and a verdict.
 * Exit status: 0 pass, 1 fail, 2 the plugin or the name is unusable. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "kernels/registry.h"

int nd_cli_kernel_check(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ndgraph kernel-check PLUGIN.so NAME\n");
    return 2;
  }
  const char *path = argv[0], *name = argv[1];
  nd_error err = {0};
  nd_kernels *k = NULL;
  int rc = nd_kernels_open_one(&k, path, &err);
  int checked = 0, failed = 0;
  const nd__kernel_impl *act = rc ? NULL : nd__activation_find(k, name);
  if (act && strcmp(act->origin, path) == 0) {
    checked++;
    rc = nd__kernel_check(ND_TASK_ACT_FWD, act, 0, stdout, &err);
    failed |= rc > 0;
  }
  for (int kind = 0; kind < ND_TASK_KIND_COUNT && rc >= 0; kind++) {
    const nd__kernel_impl *im = nd__kernel_find(k, (enum nd_task_kind)kind, name);
    if (!im || strcmp(im->origin, path) != 0) continue;
    checked++;
    rc = nd__kernel_check((enum nd_task_kind)kind, im, 0, stdout, &err);
    failed |= rc > 0;
  }
  nd_kernels_close(k);
  if (rc < 0) {
    fprintf(stderr, "ndgraph: %s\n", err.msg);
    return 2;
  }
  if (!checked) {
    fprintf(stderr, "ndgraph: %s: the plugin registers no activation or kernel named '%s'\n", path, name);
    return 2;
  }
  printf("kernel-check %s (%s): %s\n", name, path, failed ? "FAIL" : "PASS");
  return failed ? 1 : 0;
}
