#include "metrics/chart.h"

#include <math.h>

#include "common/svg.h"

#define WIDTH   960.0
#define LEFT    90.0
#define RIGHT   30.0
#define TOP     50.0
#define PANEL_H 220.0
#define GAP     60.0 /* below a panel: its x labels, then the next title */

static const char *const colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define N_COLOURS (sizeof colours / sizeof colours[0])

static const char *const panel_titles[ND_METRIC_PANELS] = {"loss", "learning rate", "tokens/s"};

typedef struct range {
  double lo, hi;
} range;

static void widen(range *r, double v) {
  if (v < r->lo) r->lo = v;
  if (v > r->hi) r->hi = v;
}

/* A range of some width around a single value, so that scales are finite. */
static range padded(range r) {
  if (r.hi * 0.5 - r.lo * 0.5 > 0) return r;
  double v = r.lo, pad = fabs(v) * 0.05;
  if (!(pad > 0)) pad = 1;
  r.lo = v - pad, r.hi = v + pad;
  if (!isfinite(r.hi)) r.hi = v, r.lo = v - 2 * pad;
  if (!isfinite(r.lo)) r.lo = v, r.hi = v + 2 * pad;
  return r;
}

/* Where v lies in r, from 0 to 1. In halves, so that no finite value
 * overflows, however far apart the ends (1e308 and -1e308). */
static double frac(double v, range r) {
  return (v * 0.5 - r.lo * 0.5) / (r.hi * 0.5 - r.lo * 0.5);
}

static double tick_step(range r, int ticks) {
  double span = r.hi - r.lo;
  return isfinite(span) ? nd__svg_tick_step(span, ticks) : 2 * nd__svg_tick_step(r.hi * 0.5 - r.lo * 0.5, ticks);
}

/* A panel's frame: x axis (steps) at the bottom, y axis at the left. */
static void axes(FILE *f, range x, range y, double top, const char *title) {
  const double width = WIDTH - LEFT - RIGHT, bottom = top + PANEL_H;
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\">%s</text>\n", LEFT, top - 8, title);
  fprintf(f, "<g class=\"axis\" data-axis=\"x\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
          LEFT, bottom, WIDTH - RIGHT, bottom);
  /* counted, not accumulated: a step below the span's resolution must not loop forever */
  double step = tick_step(x, 10), first = ceil(x.lo / step) * step;
  for (int k = 0; k <= 20 && frac(first + k * step, x) <= 1 + 1e-9; k++) {
    double t = first + k * step, px = LEFT + frac(t, x) * width;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", px, top, px, bottom);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", px, bottom + 16, t);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">step</text></g>\n", WIDTH - RIGHT, bottom + 32);
  fprintf(f, "<g class=\"axis\" data-axis=\"y\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
          LEFT, top, LEFT, bottom);
  step = tick_step(y, 5), first = ceil(y.lo / step) * step;
  for (int k = 0; k <= 20 && frac(first + k * step, y) <= 1 + 1e-9; k++) {
    double v = first + k * step, py = bottom - frac(v, y) * PANEL_H;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>", LEFT, py, WIDTH - RIGHT, py);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.6g</text>\n", LEFT - 6, py + 4, v);
  }
  fprintf(f, "</g>\n");
}

static void point(FILE *f, const nd_points *p, int64_t i, range x, range y, double top) {
  fprintf(f, "%.2f,%.2f ", LEFT + frac(p->step[i], x) * (WIDTH - LEFT - RIGHT), top + PANEL_H - frac(p->value[i], y) * PANEL_H);
}

/* One series as a polyline. In each pixel column only its lowest and
 * highest points are kept, in step order. */
static void polyline(FILE *f, const nd_points *p, range x, range y, double top, const char *run, int metric,
                     const char *colour) {
  const double width = WIDTH - LEFT - RIGHT;
  fprintf(f, "<polyline class=\"series\" data-run=\"");
  nd__svg_text(f, run);
  fprintf(f, "\" data-metric=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" stroke-linejoin=\"round\" "
             "stroke-linecap=\"round\"%s points=\"",
          nd__metric_info[metric].key, colour, nd__metric_info[metric].dashed ? " stroke-dasharray=\"6 4\"" : "");
  int64_t lo = -1, hi = -1;
  long column = -1;
  for (int64_t i = 0; i <= p->n; i++) {
    long c = i < p->n ? (long)floor(frac(p->step[i], x) * width) : -2;
    if (c != column && lo >= 0) { /* the finished column: its extremes, in step order */
      int64_t a = lo < hi ? lo : hi, b = lo < hi ? hi : lo;
      for (int64_t j = a;; j = b) {
        point(f, p, j, x, y, top);
        if (j == b) break;
      }
      lo = hi = -1;
    }
    if (i == p->n) break;
    column = c;
    if (lo < 0 || p->value[i] < p->value[lo]) lo = i;
    if (hi < 0 || p->value[i] > p->value[hi]) hi = i;
  }
  if (p->n == 1) /* a single point: drawn as a dot */
    point(f, p, 0, x, y, top);
  fprintf(f, "\"><title>");
  nd__svg_text(f, run);
  fprintf(f, ": %s</title></polyline>\n", nd__metric_info[metric].label);
}

static void legend(FILE *f, const nd_metrics_run *runs, int n, double top) {
  fprintf(f, "<g class=\"legend\">\n");
  for (int r = 0; r < n; r++) {
    double y = top + r * 18;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"4\" fill=\"%s\"/>", LEFT, y + 5,
            colours[r % N_COLOURS]);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", LEFT + 20, y + 10);
    nd__svg_text(f, runs[r].name);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">solid: training loss, dashed: validation loss</text>\n</g>\n", LEFT,
          top + n * 18 + 10);
}

void nd__metrics_chart(FILE *f, const nd_metrics_run *runs, int n) {
  range x = {INFINITY, -INFINITY}, y[ND_METRIC_PANELS];
  int shown[ND_METRIC_PANELS] = {0};
  for (int p = 0; p < ND_METRIC_PANELS; p++) y[p] = (range){INFINITY, -INFINITY};
  for (int r = 0; r < n; r++)
    for (int m = 0; m < ND_METRIC_COUNT; m++) {
      const nd_points *s = &runs[r].series[m];
      if (!s->n) continue;
      int p = nd__metric_info[m].panel;
      shown[p] = 1;
      widen(&x, s->step[0]), widen(&x, s->step[s->n - 1]);
      for (int64_t i = 0; i < s->n; i++) widen(&y[p], s->value[i]);
    }
  x = padded(x);
  int panels = 0;
  for (int p = 0; p < ND_METRIC_PANELS; p++) panels += shown[p];
  double height = TOP + panels * (PANEL_H + GAP) + n * 18 + 30;
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
          "<text x=\"%.1f\" y=\"20\" font-size=\"14\">%d run%s, steps %g to %g</text>\n",
          WIDTH, height, WIDTH, height, LEFT, n, n == 1 ? "" : "s", x.lo, x.hi);
  double top = TOP;
  for (int p = 0; p < ND_METRIC_PANELS; p++) {
    if (!shown[p]) continue;
    range yp = padded(y[p]);
    fprintf(f, "<g class=\"panel\" data-panel=\"%s\">\n", panel_titles[p]);
    axes(f, x, yp, top, panel_titles[p]);
    for (int r = 0; r < n; r++)
      for (int m = 0; m < ND_METRIC_COUNT; m++)
        if (nd__metric_info[m].panel == p && runs[r].series[m].n)
          polyline(f, &runs[r].series[m], x, yp, top, runs[r].name, m, colours[r % N_COLOURS]);
    fprintf(f, "</g>\n");
    top += PANEL_H + GAP;
  }
  legend(f, runs, n, top - GAP + 40);
  fprintf(f, "</svg>\n");
}
