/* ndgraph command line: a thin client of libndgraph.
 *
 *   ndgraph run  [CONFIG] [--set k=v]... [--metrics FILE] [--resume DIR] [--trace FILE] [--calibration FILE]
 *   ndgraph plan [CONFIG] [--set k=v]... [--dot FILE] [--json] [--nodes N [--process P]] [--auto [--calibration FILE]]
 *   ndgraph calibrate [CONFIG] [--set k=v]... [-o FILE]
 *   ndgraph eval [CONFIG] --checkpoint DIR [--data FILE] [--batches N] [--set k=v]...
 *   ndgraph generate [CONFIG] --checkpoint DIR (--prompt TEXT | --prompt-ids LIST) [--tokens N] [--temperature T]
 *                    [--top-k K] [--seed S] [--tokenizer tokenizer.json] [--set k=v]...
 *   ndgraph kernel-check [--timeout SECONDS] PLUGIN.so NAME
 *   ndgraph trace summarize FILE [--json] | ndgraph trace svg FILE -o OUT
 *   ndgraph plot METRICS.jsonl... -o OUT.svg
 *   ndgraph tokenize --tokenizer tokenizer.json IN... -o OUT [--eot ID]
 *
 * Exit status: 0 success, 1 failure at run time, 2 bad input (usage,
 * configuration): one table for every command, in cli/exit.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

static void usage(FILE *f) {
  fprintf(f, "usage: ndgraph COMMAND [CONFIG] [OPTIONS]\n"
             "  run  [CONFIG] [--set section.key=value]... [--metrics FILE] [--resume DIR] [--trace FILE] "
             "[--calibration FILE]\n"
             "       train (CONFIG defaults to the embedded quick start)\n"
             "  plan [CONFIG] [--set ...]... [--dot FILE] [--json] [--nodes N [--process P]] [--auto [--calibration FILE]]\n"
             "       print what one training step becomes; --auto: the best layouts, simulated\n"
             "  calibrate [CONFIG] [--set ...]... [-o FILE]\n"
             "       time every task kind on this machine's devices (a calibration file for plan --auto)\n"
             "  eval [CONFIG] --checkpoint DIR [--data FILE] [--batches N] [--set ...]...\n"
             "       mean cross-entropy of a checkpoint, as one JSON line\n"
             "  generate [CONFIG] --checkpoint DIR (--prompt TEXT | --prompt-ids 1,2,3) [--tokens N]\n"
             "           [--temperature T] [--top-k K] [--seed S] [--tokenizer tokenizer.json] [--set ...]...\n"
             "       text from a checkpoint with a key/value cache (temperature 0: greedy), then tokens/s\n"
             "  kernel-check [--timeout SECONDS] PLUGIN.so NAME\n"
             "       check a plugin's kernel or activation NAME against ndgraph's reference\n"
             "  trace summarize FILE [--json] | trace svg FILE -o OUT.svg\n"
             "       bubbles, critical path and efficiency of a Chrome trace; its Gantt chart\n"
             "  plot METRICS.jsonl... -o OUT.svg\n"
             "       losses, learning rate and tokens/s against step of one or more runs (--metrics files)\n"
             "  tokenize --tokenizer tokenizer.json IN... -o OUT [--eot ID]\n"
             "       text files (one document each) into a token file, through a Hugging Face tokenizer\n"
             "  version\n");
}

static int asks_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
  return 0;
}

int main(int argc, char **argv) {
  /* before anything else, the re-execution included: a run's signals wait
   * for its handler from here on (cli/signals.c) */
  if (argc > 1 && strcmp(argv[1], "run") == 0) nd_cli_signals_hold();
  nd_blas_select_kernels(argv);
  /* `ndgraph run --help` as well as `ndgraph --help`: no file or value is named -h */
  if (argc < 2 || asks_help(argc, argv)) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? ND_EXIT_BAD_INPUT : 0;
  }
  /* one line per subcommand */
  static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
  } commands[] = {
      {"run", nd_cli_run},     {"plan", nd_cli_plan},
      {"eval", nd_cli_eval},   {"kernel-check", nd_cli_kernel_check},
      {"trace", nd_cli_trace}, {"calibrate", nd_cli_calibrate},
      {"plot", nd_cli_plot},
      {"generate", nd_cli_generate},
      {"tokenize", nd_cli_tokenize},
  };
  const char *cmd = argv[1];
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].fn(argc - 2, argv + 2);
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
    nd_build_info b;
    nd_build_describe(&b);
    /* each device backend, built in or not ("OpenCL no"), then MPI */
    printf("ndgraph %s\nStarPU %s\n", NDGRAPH_VERSION, b.starpu_version);
    for (int k = 0; k < ND_BACKEND_COUNT; k++)
      if (k != ND_BACKEND_CPU) printf("%s %s, ", nd_device_label(k), b.backends[k] ? "yes" : "no");
    printf("MPI %s, max CPU workers %d\nOpenBLAS kernels %s\n", b.mpi ? "yes" : "no", b.max_cpus, nd_blas_core());
    return 0;
  }
  fprintf(stderr, "ndgraph: unknown command '%s'\n", cmd);
  usage(stderr);
  return ND_EXIT_BAD_INPUT;
}
