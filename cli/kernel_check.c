/* `ndgraph kernel-check [--timeout S] PLUGIN NAME`: a plugin's kernel NAME
 * on random inputs against ndgraph's reference, one line per case and a
 * verdict. Exit status: 0 pass, 1 fail (a plugin that crashed, exited or hung
 * fails, its line on stderr), else nd_cli_status (2 for an unusable plugin or
 * name). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

int nd_cli_kernel_check(int argc, char **argv) {
  long long timeout = 0; /* the library's default */
  if (argc == 4 && strcmp(argv[0], "--timeout") == 0) {
    int st = nd_cli_count("--timeout", argv[1], 86400, &timeout); /* kernels.probe_timeout's range */
    if (st) return st;
    argc -= 2, argv += 2;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: ndgraph kernel-check [--timeout SECONDS] PLUGIN.so NAME\n");
    return ND_EXIT_BAD_INPUT;
  }
  const char *path = argv[0], *name = argv[1];
  nd_error err = {0};
  int rc = nd_kernel_check(path, name, (int)timeout, stdout, &err);
  if (rc < 0 && rc != ND_ERUNTIME) return nd_cli_fail(rc, &err);
  if (rc == ND_ERUNTIME) nd_cli_fail(rc, &err); /* the plugin's crash, exit or hang: a failed check */
  printf("kernel-check %s (%s): %s\n", name, path, rc ? "FAIL" : "PASS");
  return rc ? ND_EXIT_FAILURE : 0;
}
