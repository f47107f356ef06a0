/* `ndgraph plot METRICS.jsonl... -o OUT.svg`: the metrics of one or more
 * runs as one chart (losses, learning rate, tokens/s against step). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

static int usage(void) {
  fprintf(stderr, "usage: ndgraph plot METRICS.jsonl... -o OUT.svg\n");
  return ND_EXIT_BAD_INPUT;
}

int nd_cli_plot(int argc, char **argv) {
  const char *out = NULL;
  const char **files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
  int n = 0, status = 0;
  if (!files) {
    fprintf(stderr, "ndgraph: out of memory\n");
    return ND_EXIT_FAILURE;
  }
  for (int i = 0; i < argc; i++) {
    if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && i + 1 < argc && !out)
      out = argv[++i];
    else if (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)
      files[n++] = argv[i];
    else {
      fprintf(stderr, "ndgraph plot: unexpected argument '%s'\n", argv[i]);
      status = usage();
      goto done;
    }
  }
  if (!n || !out) {
    status = usage();
    goto done;
  }
  nd_error err = {0};
  nd_metrics *m;
  int rc = nd_metrics_read(&m, files, n, &err);
  if (rc) {
    nd_cli_fail(rc, &err);
    status = ND_EXIT_BAD_INPUT; /* the metrics are this command's input */
    goto done;
  }
  long long left_out = nd_metrics_left_out(m);
  if (left_out)
    fprintf(stderr, "ndgraph: note: %lld value%s not finite, left out of the chart\n", left_out,
            left_out == 1 ? " was" : "s were");
  rc = nd_metrics_svg_save(m, out, &err);
  nd_metrics_free(m);
  status = rc ? nd_cli_fail(rc, &err) : 0;
done:
  free(files);
  return status;
}
