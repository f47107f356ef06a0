/* `ndgraph trace summarize FILE [--json]` and `ndgraph trace svg FILE -o OUT`:
 * tools on any Chrome trace file (ours or hand-made). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

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
    if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && i + 1 < argc)
      out = argv[++i];
    else if (argv[i][0] != '-' && !file)
      file = argv[i];
    else {
      fprintf(stderr, "ndgraph trace: unexpected argument '%s'\n", argv[i]);
      return usage();
    }
  }
  int summarize = strcmp(what, "summarize") == 0, svg = strcmp(what, "svg") == 0;
  if (!file || (!summarize && !svg) || (svg && !out) || (svg && json)) return usage();
  nd_error err = {0};
  nd_trace *t;
  int rc = nd_trace_read(&t, file, &err);
  if (rc) {
    nd_cli_fail(rc, &err);
    return ND_EXIT_BAD_INPUT; /* the trace is this command's input */
  }
  rc = svg ? nd_trace_svg_save(t, out, &err) : nd_trace_summary_write(t, stdout, json, &err);
  nd_trace_free(t);
  return rc ? nd_cli_fail(rc, &err) : 0;
}
