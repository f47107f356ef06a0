/* `ndgraph plan`: what one training step becomes, and where its ranks are placed. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"

int nd_cli_plan(int argc, char **argv) {
  nd_cli_option opts[] = {{"--dot", 1, NULL}, {"--json", 0, NULL}, {"--nodes", 1, NULL}};
  nd_config *cfg;
  int status = nd_cli_parse(argc, argv, opts, 3, &cfg);
  if (status) return status;
  nd_error err = {0};
  int rc = nd_plan_report(cfg, stdout, opts[1].value != NULL, opts[0].value, &err);
  if (!rc && !opts[1].value) rc = nd_placement_report(cfg, stdout, &err);
  if (!rc && opts[2].value) rc = nd_nodes_report(cfg, atoi(opts[2].value), stdout, &err);
  nd_config_free(cfg);
  return rc ? nd_cli_fail(rc, &err) : 0;
}
