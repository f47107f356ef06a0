/* `ndgraph calibrate [CONFIG] [-o FILE]`: times every task kind on every
 * device of this machine and writes the calibration file `plan --auto` reads. */
#include <stdio.h>

#include "cli/commands.h"

int nd_cli_calibrate(int argc, char **argv) {
  nd_cli_option opts[] = {{"-o", ND_CLI_VALUE, NULL}};
  nd_config *cfg;
  int status = nd_cli_parse(argc, argv, opts, 1, &cfg);
  if (status) return status;
  nd_error err = {0};
  int rc = nd_calibrate(cfg, opts[0].value ? opts[0].value : "calibration.json", stdout, &err);
  nd_config_free(cfg);
  return rc ? nd_cli_fail(rc, &err) : 0;
}
