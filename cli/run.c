#include <stdio.h>

#include "cli/commands.h"

int nd_cli_run(int argc, char **argv) {
  nd_cli_option opts[] = {{"--metrics", 1, NULL}, {"--resume", 1, NULL}, {"--trace", 1, NULL}};
  nd_config *cfg;
  int status = nd_cli_parse(argc, argv, opts, 3, &cfg);
  if (status) return status;
  nd_run_options ro = {opts[0].value, opts[1].value, opts[2].value};
  nd_error err = {0};
  int rc = nd_run(cfg, &ro, &err);
  nd_config_free(cfg);
  if (rc) {
    fprintf(stderr, "ndgraph: %s\n", err.msg[0] ? err.msg : nd_strerror(rc));
    return rc == ND_ECONFIG || rc == ND_ENODEV || rc == ND_EPLUGIN ? 2 : 1;
  }
  return 0;
}
