/* Metrics files read back (JSON Lines, one object per line, as `ndgraph run
 * --metrics` writes them): each plotted quantity of a run as points
 * (step, value) in step order. */
#ifndef ND_METRICS_SERIES_H
#define ND_METRICS_SERIES_H

#include <stdint.h>

#include "ndgraph/ndgraph.h"

/* The quantities a chart shows, each a key of the lines. */
enum nd_metric { ND_METRIC_LOSS, ND_METRIC_VAL_LOSS, ND_METRIC_LR, ND_METRIC_TOKENS_PER_S, ND_METRIC_COUNT };

typedef struct nd_metric_info {
  const char *key;   /* "val_loss" */
  const char *label; /* "validation loss" */
  int panel;         /* the chart's panel it is drawn in (losses share one) */
  int dashed;
} nd_metric_info;

extern const nd_metric_info nd__metric_info[ND_METRIC_COUNT];
#define ND_METRIC_PANELS 3

typedef struct nd_points {
  double *step, *value; /* (n,) each, step increasing */
  int64_t n;
} nd_points;

typedef struct nd_metrics_run {
  char *name;                        /* the file, as given */
  nd_points series[ND_METRIC_COUNT]; /* a quantity the file never gives: n 0 */
  int64_t left_out;                  /* values that were not finite */
} nd_metrics_run;

/* Reads path. A line that is not a JSON object, lacks a finite "step", or
 * gives a quantity that is not a number is an error naming FILE:LINE
 * (ND_EDATA); so is a file without a single line. A step written twice (a
 * run resumed from an earlier checkpoint appends its steps again) keeps the
 * later value. */
int nd__metrics_run_read(nd_metrics_run *run, const char *path, nd_error *err);
void nd__metrics_run_free(nd_metrics_run *run);

#endif
