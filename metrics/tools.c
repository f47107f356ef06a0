/* The public face of the metrics tools: files read once, then drawn
 * (`ndgraph plot`). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/atomic.h"
#include "common/error.h"
#include "metrics/chart.h"
#include "metrics/series.h"

struct nd_metrics {
  nd_metrics_run *runs;
  int n;
  dev_t *dev; /* the files read, to refuse drawing over one of them */
  ino_t *ino;
};

void nd_metrics_free(nd_metrics *m) {
  if (!m) return;
  for (int r = 0; r < m->n; r++) nd__metrics_run_free(&m->runs[r]);
  free(m->runs);
  free(m->dev);
  free(m->ino);
  free(m);
}

int nd_metrics_read(nd_metrics **out, const char *const *paths, int n, nd_error *err) {
  if (n < 1) return nd__fail(err, ND_EINVAL, "no metrics file to read");
  nd_metrics *m = calloc(1, sizeof *m);
  int rc = 0, points = 0;
  if (!m || !(m->runs = calloc((size_t)n, sizeof *m->runs)) || !(m->dev = calloc((size_t)n, sizeof *m->dev)) ||
      !(m->ino = calloc((size_t)n, sizeof *m->ino))) {
    rc = nd__fail(err, ND_ENOMEM, "%s: out of memory reading the metrics", paths[0]);
    goto fail;
  }
  for (; m->n < n; m->n++) {
    struct stat st;
    if ((rc = nd__metrics_run_read(&m->runs[m->n], paths[m->n], err))) goto fail;
    if (stat(paths[m->n], &st) == 0) m->dev[m->n] = st.st_dev, m->ino[m->n] = st.st_ino;
    for (int s = 0; s < ND_METRIC_COUNT; s++) points += m->runs[m->n].series[s].n > 0;
  }
  if (!points) {
    rc = nd__fail(err, ND_EDATA, "%s%s: nothing to plot: no finite loss, val_loss, lr or tokens_per_s", paths[0],
                  n > 1 ? " and the others" : "");
    goto fail;
  }
  *out = m;
  return 0;
fail:
  nd_metrics_free(m);
  return rc;
}

long long nd_metrics_left_out(const nd_metrics *m) {
  long long total = 0;
  for (int r = 0; r < m->n; r++) total += m->runs[r].left_out;
  return total;
}

int nd_metrics_svg_save(const nd_metrics *m, const char *svg_path, nd_error *err) {
  struct stat st;
  if (stat(svg_path, &st) == 0)
    for (int r = 0; r < m->n; r++)
      if (st.st_dev == m->dev[r] && st.st_ino == m->ino[r])
        return nd__fail(err, ND_EINVAL, "%s: is the metrics file %s: the chart would replace it", svg_path,
                        m->runs[r].name);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return nd__fail(err, ND_ENOMEM, "%s: out of memory drawing the chart", svg_path);
  nd__metrics_chart(f, m->runs, m->n);
  int rc = fclose(f) ? nd__fail(err, ND_ENOMEM, "%s: out of memory drawing the chart", svg_path)
                     : nd_write_file_atomic(svg_path, text, len, err);
  free(text);
  return rc;
}
