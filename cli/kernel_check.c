/* `ndgraph kernel-check PLUGIN NAME`: a plugin's kernel NAME on random inputs
 * against ndgraph's reference, one line per case and a verdict.
 * Exit status: 0 pass, 1 fail, else nd_cli_status (2 for an unusable plugin or name). */
#include <stdio.h>

#include "cli/commands.h"

int nd_cli_kernel_check(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ndgraph kernel-check PLUGIN.so NAME\n");
    return ND_EXIT_BAD_INPUT;
  }
  const char *path = argv[0], *name = argv[1];
  nd_error err = {0};
  int rc = nd_kernel_check(path, name, stdout, &err);
  if (rc < 0) return nd_cli_fail(rc, &err);
  printf("kernel-check %s (%s): %s\n", name, path, rc ? "FAIL" : "PASS");
  return rc ? ND_EXIT_FAILURE : 0;
}
