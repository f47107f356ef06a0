/* Scheduling information derived from the graph: each task's upward rank
 * (longest remaining path to the end of the step) under a simple time model,
 * the priorities that follow from it, and the task orders of the textbook
 * pipeline schedules. */
#ifndef ND_GRAPH_PRIORITY_H
#define ND_GRAPH_PRIORITY_H

#include "graph/ir.h"

/* time = flops / flops_per_s + bytes / bytes_per_s + comm_bytes / comm_bytes_per_s + overhead_s */
typedef struct nd_cost_model {
  double flops_per_s, bytes_per_s, comm_bytes_per_s, overhead_s;
} nd_cost_model;

/* One CPU core of the kind ndgraph runs on: OpenBLAS about 60 GFLOP/s, memory
 * about 10 GB/s, StarPU about 5 us per task. */
extern const nd_cost_model nd_cost_cpu;
/* An OpenCL device of the kind ndgraph is tested on (PoCL on one core, CLBlast
 * GEMMs): about 15 GFLOP/s, and more overhead per task (kernel launches). */
extern const nd_cost_model nd_cost_opencl;

double nd_task_seconds(const nd_task *t, const nd_cost_model *m);

/* rank[i] = seconds(i) + max over successors of rank[succ]; seconds from
 * `duration` (measured, per task) when not NULL, else from the model. */
void nd_upward_rank(const nd_graph *g, const nd_edges *e, const double *duration, const nd_cost_model *m, double *rank);

/* Priorities in [lo, hi], higher first, spread over the range (all lo when
 * lo == hi). ND_PRIORITY_CRITICAL_PATH: by upward rank (to a microsecond),
 * ties broken by phase, B before collectives, F and W. ND_PRIORITY_PIPELINE:
 * the earliest start in `start` first (nd_zb_timeline; NULL: none), then by
 * phase, then the oldest micro-batch, then upward rank. Upward rank
 * alone is myopic on a pipeline: it prefers a later micro-batch's forward to
 * the backward that frees a slot and feeds the previous stage, which makes the
 * stages take turns (measured in bench/schedule, docs/scheduler.md). */
int nd_priorities_from_rank(const nd_graph *g, const double *rank, const double *start, enum nd_priority_order order,
                            int lo, int hi, int *prio);

/* start[i]: when task i starts in the zero-bubble timeline (zb_times in
 * priority.c) under g's pools, one worker per stage, each stage's F, B and W
 * as long as `seconds` (per task; NULL: the CPU cost model) make them on
 * average. Collectives start with what they wait for, per-step tasks after
 * the timeline. A dynamic scheduler that takes the earliest of its ready
 * tasks reproduces ZB-H1 where the times match and fills gaps where they do
 * not. */
int nd_zb_timeline(const nd_graph *g, const nd_edges *e, const double *seconds, double *start);

/* The priorities of a dynamic policy from each task's seconds: upward ranks,
 * and under ND_PRIORITY_PIPELINE with pp > 1 the zero-bubble timeline. */
int nd_priorities(const nd_graph *g, const nd_edges *e, const double *seconds, enum nd_priority_order order, int lo,
                  int hi, int *prio);

/* The textbook pipeline schedules; ND_FIXED_1F1B_SPLIT is 1F1B whose stages
 * send the input gradient after B and run W after the send. */
enum nd_fixed_schedule { ND_FIXED_GPIPE, ND_FIXED_1F1B, ND_FIXED_ZBH1, ND_FIXED_ZBH2, ND_FIXED_1F1B_SPLIT };
/* The schedule a fixed policy name runs (gpipe, 1f1b, zbh1, zbh2,
 * 1f1b-split), or -1. */
int nd_fixed_schedule_of(const char *policy);

/* A topological order of every task of g that follows, on each stage, the
 * schedule's order of micro-batch forwards (F) and backwards (B and W
 * together): GPipe runs all forwards then all backwards; 1F1B runs
 * pp - 1 - stage warm-up forwards, then one forward, one backward, then the
 * remaining backwards; both send a stage's input gradient after its whole
 * backward, 1F1B_SPLIT after its B (W then follows the send); ZB-H1 and
 * ZB-H2 run B and W apart (zb_times in priority.c). Collectives follow what
 * they wait for; per-step tasks (optimizer) come last. Where the graph forbids the textbook order (too few
 * activation slots), the order waits as the graph requires. */
int nd_fixed_order(const nd_graph *g, const nd_edges *e, enum nd_fixed_schedule kind, int32_t *order);

#endif
