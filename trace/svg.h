/* A Gantt chart of a trace as SVG: one row per worker, one box per task
 * coloured by phase, micro-batch numbers on the boxes, a time axis, a legend. */
#ifndef ND_TRACE_SVG_H
#define ND_TRACE_SVG_H

#include "trace/model.h"

/* Writes the chart to path, atomically. */
int nd_trace_svg_write(const nd_trace_model *m, const char *path, nd_error *err);

#endif
