/* `ndgraph plan --auto`: every layout of the configuration's model and
 * global batch that fits the machine, simulated and ranked. */
#ifndef ND_SIM_PLANNER_H
#define ND_SIM_PLANNER_H

#include "configs/config.h"
#include "sim/calibration.h"
#include "sim/sim.h"

#define ND_PLAN_MAX_SETS 10

typedef struct nd_candidate {
  int dp, tp, pp, micro_batches, micro_batch_size, slots, uneven;
  int stage_layers[ND_MAX_STAGES];
  enum nd_placement placement;
  char scheduler[16];
  double step_s, bubble, tokens_per_s;
  int64_t peak[ND_SIM_MAX_NODES];
  double busy_s[ND_SIM_MAX_WORKERS]; /* per worker */
  char reason[200];                  /* rejected: why */
} nd_candidate;

typedef struct nd_planning {
  nd_sim_machine machine;
  nd_calibration cal;
  nd_candidate *plans; /* simulated, fastest first */
  int n_plans;
  nd_candidate *rejected;
  int n_rejected;
  int64_t global_batch, seq_len;
  double seconds; /* spent planning */
} nd_planning;

/* Enumerates, rejects what exceeds a device's memory, simulates the rest.
 * calibration: a calibration file, or NULL for the built-in estimates. */
int nd_planning_run(nd_planning *p, const nd_config *cfg, const char *calibration, nd_error *err);
void nd_planning_free(nd_planning *p);

/* The --set assignments ("section.key=value") that turn the configuration
 * into candidate c; returns how many (at most ND_PLAN_MAX_SETS). */
int nd_candidate_sets(const nd_candidate *c, char sets[][64]);

#endif
