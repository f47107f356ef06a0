/* `ndgraph plan`: what one training step becomes, and where its ranks are
 * placed; with --auto, the best layouts for the machine, simulated. */
#include <limits.h>
#include <stdio.h>

#include "cli/commands.h"

int nd_cli_plan(int argc, char **argv) {
  nd_cli_option opts[] = {{"--dot", ND_CLI_VALUE, NULL},
                          {"--json", ND_CLI_FLAG, NULL},
                          {"--auto", ND_CLI_FLAG, NULL},
                          {"--calibration", ND_CLI_VALUE, NULL},
                          {"--nodes", ND_CLI_VALUE, NULL}};
  nd_config *cfg;
  int status = nd_cli_parse(argc, argv, opts, 5, &cfg);
  if (status) return status;
  long long nodes = 0;
  /* under mpirun, the plan of that launch, said once (process 0) */
  int process, launched = nd_launched_processes(&process);
  /* a calibration the plan would not read: said, not ignored */
  if (opts[3].value && !opts[2].value) {
    fprintf(stderr, "ndgraph: --calibration %s: only plan --auto reads it\n", opts[3].value);
    status = ND_EXIT_BAD_INPUT;
  } else if (opts[4].value)
    status = nd_cli_count("--nodes", opts[4].value, INT_MAX, &nodes);
  else if (launched > 1)
    nodes = launched;
  if (status || process != 0) {
    nd_config_free(cfg);
    return status;
  }
  nd_error err = {0};
  int rc;
  if (opts[2].value)
    rc = nd_plan_auto(cfg, opts[3].value, nodes ? (int)nodes : 1, stdout, opts[1].value != NULL, &err);
  else
    rc = nd_plan_report(cfg, stdout, opts[1].value != NULL, opts[0].value, &err);
  if (!rc && !opts[1].value && !opts[2].value) rc = nd_placement_report(cfg, stdout, &err);
  /* with --auto, the cut of the best plan (cfg now holds it) */
  if (!rc && nodes) rc = nd_nodes_report(cfg, (int)nodes, stdout, &err);
  nd_config_free(cfg);
  return rc ? nd_cli_fail(rc, &err) : 0;
}
