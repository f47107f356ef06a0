/* Gantt SVG. Each task is one <rect class="task"> (with data-phase and
 * data-micro-batch) so that tools and tests can count and filter boxes. */
#include "trace/svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "common/error.h"
#include "common/svg.h"

#define WIDTH 1200.0
#define LEFT  120.0
#define RIGHT 20.0
#define TOP   30.0
#define ROW   24.0
#define GAP   6.0

static const struct {
  const char *phase, *label, *colour;
} palette[] = {
    {"F", "forward", "#4e79a7"},           {"B", "input gradient", "#f28e2b"},
    {"W", "weight gradient", "#59a14f"},   {"collective", "collective", "#e15759"},
    {"optimizer", "optimizer", "#b07aa1"}, {"", "other", "#9d9d9d"},
};
#define N_PALETTE (sizeof palette / sizeof palette[0])

static const char *colour_of(const char *phase) {
  for (size_t i = 0; i + 1 < N_PALETTE; i++)
    if (strcmp(palette[i].phase, phase) == 0) return palette[i].colour;
  return palette[N_PALETTE - 1].colour;
}

static void axis(FILE *f, double span, double scale, double y) {
  double step = nd__svg_tick_step(span, 8);
  int in_ms = span >= 1000;
  fprintf(f, "<g class=\"axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", LEFT, y,
          LEFT + span * scale, y);
  /* counted, not accumulated: a step below the span's resolution (a span of
   * 1e-320 us, say) must not loop forever */
  for (int k = 0; k <= 20 && k * step <= span * (1 + 1e-9); k++) {
    double t = k * step, x = LEFT + t * scale;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", x, y, x, y + 5);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", x, TOP, x, y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x, y + 17, in_ms ? t / 1e3 : t);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">time (%s)</text></g>\n", LEFT - 14, y + 17,
          in_ms ? "ms" : "us");
}

static void legend(FILE *f, double y) {
  fprintf(f, "<g class=\"legend\">\n");
  for (size_t i = 0; i < N_PALETTE; i++) {
    double x = LEFT + (double)i * 150;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>", x, y, palette[i].colour);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 20, y + 12, palette[i].label);
  }
  fprintf(f, "</g>\n");
}

static void box(FILE *f, const nd_trace_model *m, const nd_trace_slice *x, const int *row, double t0, double scale) {
  double px = LEFT + (x->ts - t0) * scale, w = fmax(x->dur * scale, 0.5), y = TOP + row[x->thread] * (ROW + GAP);
  fprintf(f, "<rect class=\"task\" data-phase=\"");
  nd__svg_text(f, x->phase);
  fprintf(f, "\" data-micro-batch=\"%d\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>",
          x->micro_batch, px, y, w, ROW, colour_of(x->phase));
  nd__svg_text(f, x->name);
  fprintf(f, " (%s", x->phase[0] ? "" : "-");
  nd__svg_text(f, x->phase);
  fprintf(f, ", micro-batch %d, %.3f ms on ", x->micro_batch, x->dur / 1e3);
  nd__svg_text(f, m->threads[x->thread].name);
  fprintf(f, ")</title></rect>\n");
  char label[16];
  int n = snprintf(label, sizeof label, "%d", x->micro_batch);
  if (x->micro_batch >= 0 && w >= 7.0 * n + 3)
    fprintf(f, "<text class=\"mb\" x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"white\">%s</text>\n", px + w / 2,
            y + ROW / 2 + 4, label);
}

static void chart(FILE *f, const nd_trace_model *m, int *row) {
  int rows = 0;
  double t0 = 0, t1 = 0;
  for (int t = 0; t < m->n_threads; t++) row[t] = nd_trace_is_worker(&m->threads[t]) ? rows++ : -1;
  for (int32_t i = 0; i < m->n_slices; i++) {
    const nd_trace_slice *x = &m->slices[i];
    if (i == 0 || x->ts < t0) t0 = x->ts;
    if (i == 0 || x->ts + x->dur > t1) t1 = x->ts + x->dur;
  }
  double span = t1 > t0 ? t1 - t0 : 1, scale = (WIDTH - LEFT - RIGHT) / span;
  double axis_y = TOP + rows * (ROW + GAP) + 4, height = axis_y + 60;
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
          "<text x=\"%.1f\" y=\"18\" font-size=\"13\">%d tasks on %d workers, span %.3f ms from %.3f ms</text>\n",
          WIDTH, height, WIDTH, height, LEFT, m->n_slices, rows, span / 1e3, t0 / 1e3);
  axis(f, span, scale, axis_y);
  for (int t = 0; t < m->n_threads; t++) {
    if (row[t] < 0) continue;
    fprintf(f, "<text class=\"worker\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", LEFT - 8,
            TOP + row[t] * (ROW + GAP) + ROW / 2 + 4);
    nd__svg_text(f, m->threads[t].name);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "<g class=\"tasks\" stroke=\"white\" stroke-width=\"0.3\">\n");
  for (int32_t i = 0; i < m->n_slices; i++) box(f, m, &m->slices[i], row, t0, scale);
  fprintf(f, "</g>\n");
  legend(f, axis_y + 32);
  fprintf(f, "</svg>\n");
}

int nd_trace_svg_write(const nd_trace_model *m, const char *path, nd_error *err) {
  char *text = NULL;
  size_t len = 0;
  int *row = malloc((size_t)(m->n_threads ? m->n_threads : 1) * sizeof *row);
  FILE *f = row ? open_memstream(&text, &len) : NULL;
  if (!f) {
    free(row);
    return nd__fail(err, ND_ENOMEM, "%s: out of memory drawing the chart", path);
  }
  chart(f, m, row);
  int rc = fclose(f) ? nd__fail(err, ND_ENOMEM, "%s: out of memory drawing the chart", path)
                     : nd_write_file_atomic(path, text, len, err);
  free(text);
  free(row);
  return rc;
}
