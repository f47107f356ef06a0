/* `ndgraph plan --auto`: every layout of the configuration's model and
 * global batch that fits the machine, simulated and ranked. */
#ifndef ND_SIM_PLANNER_H
#define ND_SIM_PLANNER_H

#include "configs/config.h"
#include "sim/calibration.h"
#include "sim/sim.h"

#define ND_PLAN_MAX_SETS 13

/* the most micro-batches a layout is given (ndgraph calibrate probes as many) */
#define ND_PLAN_MAX_MICRO 16

/* Stages longer than ND_PLAN_LAYERS_WHOLE layers are not simulated layer by
 * layer: every layer of a stage is the same work, so once a few dozen are in
 * flight a step grows by a constant per layer. The candidate is simulated
 * with ND_PLAN_LAYERS_STEP and twice as many layers in its shortest stage
 * (every stage shortened alike) and extrapolated from the two (docs/planner.md:
 * within 2% of the whole simulation). Shorter stages, every layout of the
 * tests included, are simulated whole. */
#define ND_PLAN_LAYERS_STEP  32
#define ND_PLAN_LAYERS_WHOLE (3 * ND_PLAN_LAYERS_STEP)

typedef struct nd_candidate {
  int dp, tp, pp, micro_batches, micro_batch_size, slots, uneven;
  int cp; /* context ranks a replica: dp x cp x tp x pp ranks */
  int stage_layers[ND_MAX_STAGES];
  enum nd_recompute recompute;
  enum nd_dp_shard shard; /* over the whole data-parallel group */
  enum nd_placement placement;
  char scheduler[16];
  double step_s, bubble, tokens_per_s;
  int64_t peak[ND_SIM_MAX_NODES];
  int64_t rank_bytes; /* the tensors of the rank that holds the most */
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
  int n_extrapolated; /* layouts with stages too long to simulate whole (sim/planner.c) */
  int64_t rank_limit; /* bytes a rank may hold (runtime.device_memory); 0: no limit */
  int n_untimed;      /* sharded, recomputed or context-parallel layouts with a task kind the calibration does not time */
  int untimed_kind;   /* the first such kind */
  int64_t global_batch, seq_len;
  double seconds; /* spent planning */
} nd_planning;

/* Enumerates, rejects what exceeds a device's memory, simulates the rest.
 * calibration: a calibration file, or NULL for the built-in estimates;
 * processes: the launch's (mpirun -np, plan --nodes; 1 alone): up to that
 * many times the workers' ranks, only layouts that cut across them, and
 * ndws alone (docs/nodes.md). */
int nd_planning_run(nd_planning *p, const nd_config *cfg, const char *calibration, int processes, nd_error *err);
void nd_planning_free(nd_planning *p);

/* The --set assignments ("section.key=value") that turn the configuration
 * into candidate c; returns how many (at most ND_PLAN_MAX_SETS). */
int nd_candidate_sets(const nd_candidate *c, char sets[][64]);
/* "none", "attention", "layer": train.recompute as the configuration writes it */
const char *nd_recompute_name(enum nd_recompute r);

#endif
