/* `ndgraph eval`: the mean cross-entropy of a checkpoint, as one JSON line. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"

int nd_cli_eval(int argc, char **argv) {
  nd_cli_option opts[] = {
      {"--checkpoint", ND_CLI_VALUE, NULL}, {"--data", ND_CLI_VALUE, NULL}, {"--batches", ND_CLI_VALUE, NULL}};
  nd_config *cfg;
  int status = nd_cli_parse(argc, argv, opts, 3, &cfg);
  if (status) return status;
  nd_error err = {0};
  nd_trainer *tr = NULL;
  long long batches = 0;
  char buf[32];
  int rc = 0;
  if (!opts[0].value) {
    fprintf(stderr, "ndgraph: eval needs --checkpoint DIR\n");
    nd_config_free(cfg);
    return ND_EXIT_BAD_INPUT;
  }
  if (opts[2].value) {
    /* the bound of train.eval_batches: an evaluation that ends */
    if ((status = nd_cli_count("--batches", opts[2].value, 1LL << 16, &batches))) {
      nd_config_free(cfg);
      return status;
    }
  } else if (nd_config_get(cfg, "train.eval_batches", buf, sizeof buf) == 0) {
    batches = atoll(buf);
  }
  double loss = 0;
  long long tokens = 0;
  nd_process_info procs = {0};
  if (!(rc = nd_trainer_open(&tr, cfg, &err)) && !(rc = nd_trainer_load(tr, opts[0].value, 0, &err)) &&
      !(rc = nd_trainer_eval(tr, opts[1].value, batches, &loss, &tokens, &err)))
    nd_trainer_processes(tr, &procs);
  nd_trainer_close(tr);
  nd_config_free(cfg);
  if (rc) return nd_cli_fail(rc, &err);
  /* under mpirun, process 0 answers for the job */
  if (procs.process == 0) printf("{\"loss\": %.9g, \"tokens\": %lld}\n", loss, tokens);
  return 0;
}
