/* The public face of the trace tools: a trace read once, then summarized or
 * drawn (`ndgraph trace`). */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "trace/model.h"
#include "trace/summary.h"
#include "trace/svg.h"

struct nd_trace {
  nd_trace_model model;
  char *path; /* names the trace in the summary */
};

int nd_trace_read(nd_trace **out, const char *path, nd_error *err) {
  nd_trace *t = calloc(1, sizeof *t);
  if (!t || !(t->path = strdup(path))) {
    free(t);
    return nd__fail(err, ND_ENOMEM, "%s: out of memory reading the trace", path);
  }
  int rc = nd_trace_model_load(&t->model, path, err);
  if (rc) {
    free(t->path);
    free(t);
    return rc;
  }
  *out = t;
  return 0;
}

void nd_trace_free(nd_trace *t) {
  if (!t) return;
  nd_trace_model_free(&t->model);
  free(t->path);
  free(t);
}

int nd_trace_summary_write(const nd_trace *t, FILE *out, int json, nd_error *err) {
  nd_trace_summary s;
  int rc = nd_trace_summarize(&t->model, &s);
  if (!rc) rc = nd_trace_summary_print(out, t->path, &t->model, &s, json);
  nd_trace_summary_free(&s);
  return rc ? nd__fail(err, rc, "%s: %s", t->path, nd_strerror(rc)) : 0;
}

int nd_trace_svg_save(const nd_trace *t, const char *svg_path, nd_error *err) {
  return nd_trace_svg_write(&t->model, svg_path, err);
}
