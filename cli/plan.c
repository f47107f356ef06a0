/* `ndgraph plan`: what one training step becomes, and where its ranks are
 * placed; with --auto, the best layouts for the machine, simulated; with
 * --nodes N --process P, process P's share alone; with --cluster FILE, the
 * layout (or with --auto every layout) simulated on that cluster's GPUs. */
#include <limits.h>
#include <stdio.h>

#include "cli/commands.h"

int nd_cli_plan(int argc, char **argv) {
  nd_cli_option opts[] = {{"--dot", ND_CLI_VALUE, NULL},
                          {"--json", ND_CLI_FLAG, NULL},
                          {"--auto", ND_CLI_FLAG, NULL},
                          {"--calibration", ND_CLI_VALUE, NULL},
                          {"--nodes", ND_CLI_VALUE, NULL},
                          {"--process", ND_CLI_VALUE, NULL},
                          {"--cluster", ND_CLI_VALUE, NULL}};
  nd_config *cfg;
  int status = nd_cli_parse(argc, argv, opts, 7, &cfg);
  if (status) return status;
  long long nodes = 0, share = -1;
  /* under mpirun, the plan of that launch, said once (process 0) */
  int process, launched = nd_launched_processes(&process);
  /* a calibration the plan would not read: said, not ignored */
  if (opts[3].value && !opts[2].value) {
    fprintf(stderr, "ndgraph: --calibration %s: only plan --auto reads it\n", opts[3].value);
    status = ND_EXIT_BAD_INPUT;
  } else if (opts[6].value && (opts[3].value || opts[5].value || opts[1].value || opts[0].value)) {
    fprintf(stderr, "ndgraph: --cluster %s: goes with plan, plan --auto or plan --nodes N, without --calibration, "
                    "--process, --json or --dot\n", opts[6].value);
    status = ND_EXIT_BAD_INPUT;
  } else if (opts[5].value && (!opts[4].value || opts[1].value || opts[2].value)) {
    fprintf(stderr, "ndgraph: --process %s: goes with --nodes N, without --json or --auto\n", opts[5].value);
    status = ND_EXIT_BAD_INPUT;
  } else if (opts[4].value) {
    status = nd_cli_count("--nodes", opts[4].value, INT_MAX, &nodes);
    if (!status && opts[5].value) status = nd_cli_index("--process", opts[5].value, nodes - 1, &share);
  } else if (launched > 1)
    nodes = launched;
  if (status || process != 0) {
    nd_config_free(cfg);
    return status;
  }
  nd_error err = {0};
  int rc;
  /* a cluster's step is one replica's, simulated: the whole step is not built */
  if (opts[6].value && !opts[4].value)
    rc = nd_plan_cluster(cfg, opts[6].value, opts[2].value != NULL, stdout, &err);
  /* one process's share alone: the step itself is not built */
  else if (share >= 0)
    rc = nd_nodes_report(cfg, (int)nodes, (int)share, stdout, &err);
  else if (opts[2].value)
    rc = nd_plan_auto(cfg, opts[3].value, nodes ? (int)nodes : 1, stdout, opts[1].value != NULL, &err);
  else
    rc = nd_plan_report(cfg, nodes ? (int)nodes : 1, stdout, opts[1].value != NULL, opts[0].value, &err);
  if (!rc && share < 0 && !opts[1].value && !opts[2].value && !opts[6].value) rc = nd_placement_report(cfg, stdout, &err);
  /* with --auto, the cut of the best plan (cfg now holds it) */
  if (!rc && share < 0 && nodes) rc = nd_nodes_report(cfg, (int)nodes, -1, stdout, &err);
  /* --nodes with a cluster: the layout's simulated step there, beside the processes' submission times */
  if (!rc && opts[4].value && opts[6].value) rc = nd_plan_cluster(cfg, opts[6].value, 0, stdout, &err);
  nd_config_free(cfg);
  return rc ? nd_cli_fail(rc, &err) : 0;
}
