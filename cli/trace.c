/* `ndgraph trace summarize FILE [--json]` and `ndgraph trace svg FILE -o OUT`:
 * tools on any Chrome trace file (ours or hand-made). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "trace/model.h"
#include "trace/summary.h"
#include "trace/svg.h"

static int usage(void) {
  fprintf(stderr, "usage: ndgraph trace summarize FILE [--json]\n"
                  "       ndgraph trace svg FILE -o OUT.svg\n");
  return ND_EXIT_BAD_INPUT;
}

int nd_cli_trace(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *what = argv[0], *file = NULL, *out = NULL;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) json = 1;
    else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && i + 1 < argc) out = argv[++i];
    else if (argv[i][0] != '-' && !file) file = argv[i];
    else {
      fprintf(stderr, "ndgraph trace: unexpected argument '%s'\n", argv[i]);
      return usage();
    }
  }
  int summarize = strcmp(what, "summarize") == 0, svg = strcmp(what, "svg") == 0;
  if (!file || (!summarize && !svg) || (svg && !out) || (svg && json)) return usage();
  nd_error err = {0};
  nd_trace_model m;
  int rc = nd_trace_model_load(&m, file, &err);
  if (rc) {
    nd_cli_fail(rc, &err);
    return ND_EXIT_BAD_INPUT; /* the trace is this command's input */
  }
  if (svg) rc = nd_trace_svg_write(&m, out, &err);
  else {
    nd_trace_summary s;
    if (!(rc = nd_trace_summarize(&m, &s))) rc = nd_trace_summary_print(stdout, file, &m, &s, json);
    nd_trace_summary_free(&s);
  }
  nd_trace_model_free(&m);
  return rc ? nd_cli_fail(rc, &err) : 0;
}
