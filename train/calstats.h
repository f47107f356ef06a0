/* The statistics of `ndgraph calibrate` (train/calibrate.c), apart from the
 * runs that feed them so that tests can check them on numbers given by
 * hand: the fit of a task kind's time, and the gaps between tasks. */
#ifndef ND_TRAIN_CALSTATS_H
#define ND_TRAIN_CALSTATS_H

#include <stdint.h>

#include "graph/ir.h"
#include "ndgraph/kernel.h"
#include "sim/sim.h"

/* A CPU task of a probe with an OpenCL device: PoCL's threads share the cores */
enum { ND_ALONE, ND_BESIDE_IDLE, ND_BESIDE_BUSY /* the device computed when it started */ };

typedef struct nd__cal_sample {
  int kind, dev;
  int beside; /* ND_ALONE for the CPU probes' tasks and the device's */
  double flops, bytes, s;
  double mean_s; /* over the steps, where s is their median */
} nd__cal_sample;

/* The time of one task kind on one device kind from its samples:
 * overhead + flops / rate + bytes / bandwidth, in relative least squares. */
nd_sim_fit nd__cal_fit(const nd__cal_sample *v, int64_t n);

/* Gaps between the tasks of each worker, summed per device kind: from the
 * later of a task's end and the next one's ready time to its start; [1]
 * when the worker waited ND_SIM_POLL_S or more for it, else [0]. */
typedef struct nd__cal_gaps {
  double us[2][ND_BACKEND_COUNT];
  int64_t n[2][ND_BACKEND_COUNT];
} nd__cal_gaps;

/* Adds one step's tasks of g: start_us, us (duration) and worker per task;
 * backend(worker): the worker's device kind. */
int nd__cal_gaps_add(nd__cal_gaps *acc, const nd_graph *g, const nd_edges *e, const double *start_us,
                     const double *us, const int *worker, int (*backend)(int worker));

#endif
