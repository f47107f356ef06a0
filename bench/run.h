/* What both benchmarks measure: a few training steps of one configuration
 * through the trainer (the first step, unobserved, calibrates the priorities
 * as in training), and for the median step the lower bound
 * max(critical path, work / workers) from that step's measured tasks. */
#ifndef ND_BENCH_RUN_H
#define ND_BENCH_RUN_H

#include <stddef.h>

#include "bench/paired.h"
#include "ndgraph/ndgraph.h"

#define ND_BENCH_MAX_WORKERS 4
#define ND_BENCH_MAX_ROUNDS  64 /* runs of one row: the ROUNDS argument's bound */

typedef struct nd_bench_row {
  double step_ms, bound_ms, cp_ms, work_ms; /* work: the sum of task durations */
  /* max over workers of: the earliest its first task can start (the longest
   * path before it) + the work it ran + the path left after its last task.
   * A lower bound for any order of that run's tasks on those workers: under
   * strict placement, for every policy */
  double worker_bound_ms;
  int workers, is_cpu[ND_BENCH_MAX_WORKERS];       /* StarPU worker w is a CPU worker */
  double bubble[ND_BENCH_MAX_WORKERS], bubble_all; /* idle fraction of the step's span, per worker and overall */
  /* of that idle fraction, the part during which the worker's next task
   * was ready (graph/bound.h nd_ready_idle): the runtime's or the
   * machine's, not the schedule's */
  double ready[ND_BENCH_MAX_WORKERS], ready_all;
  int stage_layers[2];
} nd_bench_row;

/* Sets the assignments kv (NULL-terminated, "section.key=value") on cfg in
 * order; 0, or the first one's error in err. */
int nd_bench_config(nd_config *cfg, const char *const *kv, nd_error *err);

/* In a child process of its own, opens a trainer on the assignments kv
 * (NULL-terminated), runs its warm-up steps and `steps` measured ones; *out
 * gets the median step's row. 0 or an error (printed on stderr). */
int nd_bench_run(const char *const *kv, int steps, nd_bench_row *out);

/* The median (by step time) of n rows, reordering them. */
nd_bench_row nd_bench_median(nd_bench_row *rows, int n);

/* Two rows' runs paired by round (run r of each in the same round): the
 * field at offset `field` of mine[r] (offsetof(nd_bench_row, step_ms), ...)
 * over theirs[r]'s, summarized by bench/paired.h. Before nd_bench_median,
 * which reorders the runs. */
nd_bench_paired nd_bench_pair(const nd_bench_row *mine, const nd_bench_row *theirs, int rounds, size_t field);

/* A command-line count: s as an integer in lo..hi, or -1 after a one-line
 * error on stderr naming the program and the argument. */
int nd_bench_count(const char *prog, const char *name, const char *s, int lo, int hi);

#endif
