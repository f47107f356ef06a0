/* The chart of `ndgraph plot`: one panel per kind of quantity (losses,
 * learning rate, tokens/s) against step, every run overlaid. */
#ifndef ND_METRICS_CHART_H
#define ND_METRICS_CHART_H

#include <stdio.h>

#include "metrics/series.h"

/* The SVG of runs[0..n) to f. Each series is one <polyline class="series"
 * data-run="FILE" data-metric="KEY">; each panel a <g class="panel"
 * data-panel="N"> holding its two <g class="axis"> (x, then y). A series of
 * more points than a panel has pixels keeps, in each pixel column, its
 * lowest and highest point: the same picture, in bounded size. */
void nd__metrics_chart(FILE *f, const nd_metrics_run *runs, int n);

#endif
