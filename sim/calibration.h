/* Calibration files: what `ndgraph calibrate` measured (or a person wrote
 * for a machine that is not here), read into the simulator's duration model
 * and the machine's device memory and bus. The format is in docs/planner.md. */
#ifndef ND_SIM_CALIBRATION_H
#define ND_SIM_CALIBRATION_H

#include <stdio.h>

#include "common/error.h"
#include "sim/sim.h"

typedef struct nd_calibration {
  nd_sim_model model;
  int64_t memory[ND_BACKEND_COUNT]; /* bytes per device of that kind; 0: unknown (cpu: this machine's RAM) */
  double host_device_bps, device_device_bps, latency_s; /* 0: unknown */
  char machine[128];
} nd_calibration;

/* The built-in estimates (graph/priority.c's cost models) for when no file is given. */
void nd_calibration_default(nd_calibration *c);
/* Reads path; a bad file is one error naming the file and the problem (ND_ECONFIG). */
int nd_calibration_load(nd_calibration *c, const char *path, nd_error *err);
int nd_calibration_save(const nd_calibration *c, const char *path, nd_error *err);

#endif
