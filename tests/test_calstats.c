/* The statistics of `ndgraph calibrate` on numbers given by hand: the fit
 * of a kind's time over sizes three decades apart (relative least squares:
 * the small tasks are not lost under the large ones), and the gaps between
 * a worker's tasks, told apart by whether the next task was ready. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/builder.h"
#include "train/calstats.h"
#include "tests/tap.h"

static double predict(nd_sim_fit f, double flops) { return f.overhead_s + flops * f.s_per_flop; }

/* A kind timed at three sizes whose times are no straight line (small
 * products run at a lower rate): absolute least squares drew the line
 * through the two large ones and gave the smallest 5.6 times its time. */
static void relative_fit(void) {
  nd__cal_sample v[30];
  int n = 0;
  for (int i = 0; i < 10; i++) {
    v[n++] = (nd__cal_sample){.kind = ND_TASK_MATMUL_FWD, .flops = 1e6, .s = 100e-6};
    v[n++] = (nd__cal_sample){.kind = ND_TASK_MATMUL_FWD, .flops = 1e8, .s = 1.5e-3};
    v[n++] = (nd__cal_sample){.kind = ND_TASK_MATMUL_FWD, .flops = 1e9, .s = 10e-3};
  }
  nd_sim_fit f = nd__cal_fit(v, n);
  double small = predict(f, 1e6) / 100e-6, mid = predict(f, 1e8) / 1.5e-3, large = predict(f, 1e9) / 10e-3;
  ok(f.valid && fabs(small - 1) < 0.5 && fabs(mid - 1) < 0.5 && fabs(large - 1) < 0.5,
     "every size within 50%% of its time (predicted / measured: %.2f, %.2f, %.2f)", small, mid, large);
  ok(f.overhead_s < 100e-6, "the overhead is below the smallest task's time (%.1f us)", f.overhead_s * 1e6);
  /* a kind whose time is a straight line is fitted exactly */
  for (int i = 0; i < n; i++) v[i].s = 5e-6 + v[i].flops / 50e9;
  f = nd__cal_fit(v, n);
  nd_sim_fit flat;
  {
    nd__cal_sample w[3] = {{.flops = 1e6, .s = 10e-6}, {.flops = 2e6, .s = 10e-6 + 1e-20}, {.flops = 4e6, .s = 10e-6}};
    flat = nd__cal_fit(w, 3);
  }
  ok(flat.s_per_flop == 0 && fabs(flat.overhead_s - 10e-6) < 1e-12,
     "a time that does not grow with the FLOPs: no rate beyond a file's bound (%g s/flop)", flat.s_per_flop);
  ok(fabs(f.overhead_s - 5e-6) < 1e-9 && fabs(f.s_per_flop * 50e9 - 1) < 1e-6, "a straight line: 5 us + 50 GFLOP/s (%g us, %g GFLOP/s)",
     f.overhead_s * 1e6, 1e-9 / f.s_per_flop);
}

static int all_cpu(int worker) {
  (void)worker;
  return ND_BACKEND_CPU;
}

/* Worker 0 runs A (0-1000 us) then B, which needs nothing else, at 1002: a
 * gap of 2. Worker 1 runs D (an instant at 0) then C, which needs A, at
 * 1005: it waited 1000 us for A (the polling window), then 5 more to start
 * C: the wake-up. With A ending at 500, the same 5 us are a gap: the worker
 * was still polling. */
static void gaps(void) {
  nd_graph *g = calloc(1, sizeof *g);
  g->dp = g->tp = g->pp = 1, g->micro_batches = g->slots = 1;
  int32_t x[5];
  for (int i = 0; i < 5; i++) {
    nd_tensor t = {.kind = ND_TENSOR_ACTIVATION, .dtype = ND_F32, .ndim = 1, .bytes = 4, .layer = -1, .slot = -1,
                   .param = -1};
    snprintf(t.name, sizeof t.name, "x%d", i);
    x[i] = nd__graph_add_tensor(g, &t);
  }
  /* A writes x1; B writes x2; D writes x3; C reads x1 and writes x4 */
  int32_t reads[4] = {-1, -1, -1, x[1]}, writes[4] = {x[1], x[2], x[3], x[4]};
  for (int i = 0; i < 4; i++) {
    nd_access acc[2] = {{writes[i], ND_ACCESS_W}, {reads[i], ND_ACCESS_R}};
    nd_task t = {.kind = ND_TASK_RESIDUAL_FWD, .phase = ND_PHASE_F, .layer = -1};
    nd__graph_add_task(g, &t, acc, reads[i] < 0 ? 1 : 2);
  }
  double start[4] = {0, 1002, 0, 1005}, us[4] = {1000, 1, 0, 1};
  int worker[4] = {0, 0, 1, 1};
  nd_edges e;
  nd__cal_gaps acc;
  memset(&acc, 0, sizeof acc);
  int rc = nd_graph_edges(g, &e);
  if (!rc) rc = nd__cal_gaps_add(&acc, g, &e, start, us, worker, all_cpu);
  int c = ND_BACKEND_CPU;
  ok(rc == 0 && acc.n[0][c] == 1 && acc.us[0][c] == 2, "one gap before a ready task, 2 us (%lld, %g)",
     (long long)acc.n[0][c], acc.us[0][c]);
  ok(rc == 0 && acc.n[1][c] == 1 && acc.us[1][c] == 5, "one wake-up after a wait, 5 us from ready to start (%lld, %g)",
     (long long)acc.n[1][c], acc.us[1][c]);
  memset(&acc, 0, sizeof acc);
  us[0] = 500, start[1] = 502, start[3] = 505;
  if (!rc) rc = nd__cal_gaps_add(&acc, g, &e, start, us, worker, all_cpu);
  ok(rc == 0 && acc.n[0][c] == 2 && acc.us[0][c] == 7 && acc.n[1][c] == 0,
     "a wait shorter than the polling window: two gaps, 2 + 5 us, no wake-up (%lld, %g, %lld)", (long long)acc.n[0][c],
     acc.us[0][c], (long long)acc.n[1][c]);
  if (!rc) nd_edges_free(&e);
  nd_graph_free(g);
}

int main(void) {
  relative_fit();
  gaps();
  return done_testing();
}
