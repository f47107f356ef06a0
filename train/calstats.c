/* The statistics of `ndgraph calibrate`: the relative least-squares fit of
 * a task kind's time and the measured gaps between tasks (calstats.h). */
#include "train/calstats.h"

#include <math.h>
#include <stdlib.h>

#include "common/error.h"

#define ND_CAL_MIN_S 1e-6 /* a timing below the profiler's resolution weighs as this one */

typedef struct slot {
  int worker;
  double start;
  int32_t task;
} slot;

static int cmp_slot(const void *a, const void *b) {
  const slot *x = a, *y = b;
  return x->worker != y->worker ? x->worker - y->worker : (x->start > y->start) - (x->start < y->start);
}

/* The scheduling gaps, measured: on each worker, from the later of a task's
 * end and the next task's ready time (its predecessors' ends) to that task's
 * start: the wake-up when the worker waited ND_SIM_POLL_S or more (it may
 * have slept), else the gap (it found the task polling: on the loaded
 * machine of the tests, 7 us at the median against 2 ms after a longer
 * wait). Both are means over every task,
 * the long ones included: on a machine other processes share, a worker that
 * waits, or yields its core between tasks, gets it back milliseconds later
 * now and then, and that is part of this machine's step. The gap used to be
 * fitted so that the simulated probe step equalled the measured one: every
 * difference between the two became a cost per task (0.7 ms here, where the
 * runtime takes 4 us when nothing preempts it), and layouts of many small
 * tasks were predicted at several times their step. */
int nd__cal_gaps_add(nd__cal_gaps *acc, const nd_graph *g, const nd_edges *e, const double *start_us,
                     const double *us, const int *worker, int (*backend)(int worker)) {
  slot *v = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *v);
  if (!v) return ND_ENOMEM;
  for (int32_t i = 0; i < g->n_tasks; i++) v[i] = (slot){worker[i], start_us[i], i};
  qsort(v, (size_t)g->n_tasks, sizeof *v, cmp_slot);
  for (int32_t i = 1; i < g->n_tasks; i++) {
    int32_t a = v[i - 1].task, b = v[i].task;
    if (v[i].worker != v[i - 1].worker) continue;
    double free_at = start_us[a] + us[a], ready = 0;
    for (int32_t k = e->pred_off[b]; k < e->pred_off[b + 1]; k++)
      ready = fmax(ready, start_us[e->pred[k]] + us[e->pred[k]]);
    int kind = backend(v[i].worker), waited = ready - free_at >= ND_SIM_POLL_S * 1e6;
    double gap = start_us[b] - fmax(ready, free_at);
    if (gap < 0) continue; /* the profiler's clocks of two workers, a microsecond apart */
    acc->us[waited][kind] += gap, acc->n[waited][kind]++;
  }
  free(v);
  return 0;
}

/* Least squares of s against the columns `use` of (1, flops, bytes), in
 * relative error (each sample weighted by 1 / s^2); 0 when the system is
 * singular or a coefficient comes out negative. Relative, because a kind's
 * shapes span orders of magnitude (the projections and the vocabulary's
 * product are all matmul_fwd; a micro-batch of 1 against one of 16): in
 * absolute error the largest tasks decide the line alone and its intercept
 * can come out at hundreds of microseconds, more than the small tasks take,
 * so a layout of many small tasks was predicted at several times its step. */
static int solve(const nd__cal_sample *v, int64_t n, const int *use, double *coef) {
  double A[3][4] = {{0}};
  for (int64_t i = 0; i < n; i++) {
    double x[3] = {1, v[i].flops, v[i].bytes};
    double w = 1 / fmax(v[i].s * v[i].s, ND_CAL_MIN_S * ND_CAL_MIN_S);
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++) A[r][c] += use[r] && use[c] ? w * x[r] * x[c] : 0;
      A[r][3] += use[r] ? w * x[r] * v[i].s : 0;
    }
  }
  for (int r = 0; r < 3; r++)
    if (!use[r]) A[r][r] = 1, A[r][3] = 0;
  for (int c = 0; c < 3; c++) { /* Gauss-Jordan with partial pivoting */
    int p = c;
    for (int r = c + 1; r < 3; r++)
      if (fabs(A[r][c]) > fabs(A[p][c])) p = r;
    if (fabs(A[p][c]) < 1e-300) return 0;
    for (int k = 0; k < 4; k++) {
      double t = A[c][k];
      A[c][k] = A[p][k], A[p][k] = t;
    }
    for (int r = 0; r < 3; r++) {
      if (r == c) continue;
      double f = A[r][c] / A[c][c];
      for (int k = 0; k < 4; k++) A[r][k] -= f * A[c][k];
    }
  }
  for (int r = 0; r < 3; r++) {
    coef[r] = A[r][3] / A[r][r];
    if (!isfinite(coef[r]) || coef[r] < 0) return 0;
  }
  return 1;
}

/* The fit of one kind on one device kind: every term, then fewer. Within a
 * kind FLOPs and bytes grow together, so the full fit is often ill-posed;
 * a time proportional to the FLOPs (or bytes) still scales to shapes the
 * probes did not run, where a mean would not. */
nd_sim_fit nd__cal_fit(const nd__cal_sample *v, int64_t n) {
  static const int tries[][3] = {{1, 1, 1}, {1, 1, 0}, {0, 1, 0}, {1, 0, 1}, {0, 0, 1}, {1, 0, 0}};
  double coef[3];
  for (size_t k = 0; k < sizeof tries / sizeof tries[0]; k++)
    if (solve(v, n, tries[k], coef) && coef[0] + coef[1] + coef[2] > 0) {
      /* a rate beyond what a calibration file holds (10^9 GB/s or GFLOP/s)
       * adds no measurable time: the term is dropped, as a rate of 0 */
      for (int c = 1; c < 3; c++)
        if (coef[c] < 1e-18) coef[c] = 0;
      return (nd_sim_fit){1, coef[0], coef[1], coef[2]};
    }
  return (nd_sim_fit){1, 0, 0, 0};
}
