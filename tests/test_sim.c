/* The step simulator on graphs built by hand, whose schedules are known
 * exactly: a chain, a fork-join on k workers, a 1F1B pipeline with equal
 * stage times (bubble (p - 1) / (m + p - 1)), 1F1B (whole backward and B
 * then W) against ZB-H1 with B and W apart, a transfer between memory nodes, and the peak memory of each node;
 * the gap, the wake-up of a worker that waited and the shared machine's slowdown;
 * a calibration file's device kinds, written and read back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"
#include "graph/builder.h"
#include "sim/calibration.h"
#include "sim/sched.h"
#include "sim/sim.h"
#include "tests/tap.h"

static nd_graph *new_graph(int pp, int m) {
  nd_graph *g = calloc(1, sizeof *g);
  g->dp = g->tp = 1, g->pp = pp, g->micro_batches = m, g->slots = m;
  return g;
}

static int32_t tensor(nd_graph *g, int stage, int64_t bytes) {
  nd_tensor t = {.kind = ND_TENSOR_ACTIVATION,
                 .dtype = ND_F32,
                 .ndim = 1,
                 .bytes = bytes,
                 .home = {0, stage, 0},
                 .layer = -1,
                 .slot = -1,
                 .param = -1};
  snprintf(t.name, sizeof t.name, "x%d", g->n_tensors);
  return nd__graph_add_tensor(g, &t);
}

/* A task of stage `stage` reading `in` (n of them) and writing `out`. */
static int32_t task(nd_graph *g, enum nd_phase ph, int stage, int mb, const int32_t *in, int n, int32_t out) {
  nd_access acc[64];
  for (int i = 0; i < n; i++) acc[i] = (nd_access){in[i], ND_ACCESS_R};
  acc[n] = (nd_access){out, ND_ACCESS_W};
  nd_task t = {.kind = ND_TASK_RESIDUAL_FWD, .phase = ph, .rank = {0, stage, 0}, .micro_batch = mb, .layer = -1};
  return nd__graph_add_task(g, &t, acc, n + 1);
}

static nd_sim_machine cpus(int n) {
  nd_sim_machine m = {.n_workers = n, .n_nodes = 1};
  snprintf(m.node_name[0], sizeof m.node_name[0], "host");
  return m;
}

static nd_sim_model any_model(void) {
  nd_sim_model model;
  memset(&model, 0, sizeof model);
  for (int k = 0; k < ND_TASK_KIND_COUNT; k++)
    for (int d = 0; d < ND_BACKEND_COUNT; d++) model.fit[k][d].valid = 1;
  return model;
}

/* Simulates g with per-task durations under policy/placement. */
static int simulate(nd_graph *g, const nd_sim_machine *m, const double *dur, const char *policy,
                    enum nd_placement placement, nd_sim_result *r) {
  nd_edges e;
  nd_sim_schedule s;
  nd_sim_model model = any_model();
  int rc = nd_graph_edges(g, &e);
  if (!rc) rc = nd_sim_schedule_build(g, &e, m, &model, policy, placement, 0, ND_PRIORITY_PIPELINE, &s);
  if (!rc) rc = nd_sim_run(g, &e, m, &model, dur, &s, r);
  nd_sim_schedule_free(&s);
  nd_edges_free(&e);
  return rc;
}

static void chain(void) {
  nd_graph *g = new_graph(1, 1);
  int32_t x = tensor(g, 0, 4);
  double dur[3] = {1, 2, 3};
  for (int i = 0; i < 3; i++) {
    int32_t y = tensor(g, 0, 4);
    task(g, ND_PHASE_F, 0, 0, &x, 1, y);
    x = y;
  }
  nd_sim_machine m = cpus(2);
  nd_sim_result r = {0};
  int rc = simulate(g, &m, dur, "ndws", ND_PLACEMENT_AFFINITY, &r);
  ok(rc == 0 && r.step_s == 6.0, "a chain of 1, 2 and 3 s on 2 workers takes 6 s (got %g)", r.step_s);
  ok(r.bubble == 0.5, "its bubble is half of the 2 workers' time (got %g)", r.bubble);
  ok(r.peak_bytes[0] == 16, "peak host memory is its 4 tensors, 16 bytes (got %lld)", (long long)r.peak_bytes[0]);
  nd_graph_free(g);
}

static void fork_join(int k, int n) {
  nd_graph *g = new_graph(1, 1);
  int32_t src = tensor(g, 0, 4), out = tensor(g, 0, 4), mid[64];
  task(g, ND_PHASE_F, 0, -1, NULL, 0, src);
  for (int i = 0; i < n; i++) task(g, ND_PHASE_F, 0, -1, &src, 1, mid[i] = tensor(g, 0, 4));
  task(g, ND_PHASE_F, 0, -1, mid, n, out);
  double *dur = malloc((size_t)g->n_tasks * sizeof *dur);
  for (int32_t i = 0; i < g->n_tasks; i++) dur[i] = 1;
  nd_sim_machine m = cpus(k);
  nd_sim_result r = {0};
  int rc = simulate(g, &m, dur, "ndws", ND_PLACEMENT_FREE, &r);
  double want = 2 + ceil((double)n / k);
  ok(rc == 0 && r.step_s == want, "fork-join of %d unit tasks on %d workers takes %g s (got %g)", n, k, want, r.step_s);
  double busy = 0;
  for (int w = 0; w < k; w++) busy += r.busy_s[w];
  ok(busy == n + 2, "the workers are busy %d s in all (got %g)", n + 2, busy);
  free(dur);
  nd_graph_free(g);
}

/* Stage s sends the input gradient `grad` of micro-batch mb to stage s - 1,
 * as a task of stage s (the graph's sendrecv); the copy on stage s - 1. */
static int32_t send_back(nd_graph *g, int s, int mb, int32_t grad) {
  int32_t copy = tensor(g, s - 1, 4);
  nd_access acc[2] = {{grad, ND_ACCESS_R}, {copy, ND_ACCESS_W}};
  nd_task t = {.kind = ND_TASK_SENDRECV,
               .phase = ND_PHASE_COLLECTIVE,
               .group = ND_GROUP_PP_PREV,
               .rank = {0, s, 0},
               .micro_batch = mb,
               .layer = -1};
  nd__graph_add_task(g, &t, acc, 2);
  return copy;
}

/* A p-stage pipeline of mb micro-batches: every forward, then every input
 * gradient (B) from the last stage back, each followed by its stage's
 * weight gradient (W) when with_w (the W tasks of a stage accumulate into
 * one tensor, in micro-batch order), and by its send to the previous stage. */
static nd_graph *pipeline_graph(int p, int mb, int with_w) {
  nd_graph *g = new_graph(p, mb);
  int32_t act[8][32], grad[8][32], dw[8], in = tensor(g, 0, 4);
  for (int s = 0; with_w && s < p; s++) dw[s] = tensor(g, s, 4);
  for (int j = 0; j < mb; j++)
    for (int s = 0; s < p; s++) {
      act[s][j] = tensor(g, s, 4);
      task(g, ND_PHASE_F, s, j, s ? &act[s - 1][j] : &in, 1, act[s][j]);
    }
  for (int j = 0; j < mb; j++)
    for (int s = p - 1; s >= 0; s--) {
      int32_t reads[2] = {act[s][j], s + 1 < p ? send_back(g, s + 1, j, grad[s + 1][j]) : act[s][j]};
      grad[s][j] = tensor(g, s, 4);
      task(g, ND_PHASE_B, s, j, reads, 2, grad[s][j]);
      reads[1] = grad[s][j];
      if (with_w) task(g, ND_PHASE_W, s, j, reads, 2, dw[s]);
    }
  return g;
}

/* Each task's duration: F f, B b, W w, the sends none. */
static double *durations(const nd_graph *g, double f, double b, double w) {
  double *dur = malloc((size_t)g->n_tasks * sizeof *dur);
  for (int32_t i = 0; i < g->n_tasks; i++) {
    enum nd_phase ph = g->tasks[i].phase;
    dur[i] = ph == ND_PHASE_F ? f : ph == ND_PHASE_B ? b : ph == ND_PHASE_W ? w : 0;
  }
  return dur;
}

/* p stages, m micro-batches, F and B of equal times on every stage. */
static void pipeline(int p, int mb, double f, double b, const char *policy) {
  nd_graph *g = pipeline_graph(p, mb, 0);
  double *dur = durations(g, f, b, 0);
  nd_sim_machine m = cpus(p);
  nd_sim_result r = {0};
  int rc = simulate(g, &m, dur, policy, ND_PLACEMENT_STRICT, &r);
  double want = (mb + p - 1) * (f + b), bubble = (double)(p - 1) / (mb + p - 1);
  ok(rc == 0 && fabs(r.step_s - want) < 1e-9, "%s, p %d, m %d: step (m + p - 1)(F + B) = %g (got %g)", policy, p, mb,
     want, r.step_s);
  ok(fabs(r.bubble - bubble) < 1e-12, "%s, p %d, m %d: bubble (p - 1) / (m + p - 1) = %.6f (got %.6f)", policy, p, mb,
     bubble, r.bubble);
  free(dur);
  nd_graph_free(g);
}

/* p stages, m micro-batches, F, B and W of 1 s each, no memory bound (Qi et
 * al., ICLR 2024). 1F1B sends the input gradient after the whole backward
 * and idles (p - 1)(F + B + W) per stage; 1f1b-split sends it after B, W
 * next, (p - 1)(F + B); ZB-H1 postpones W on the later stages into that
 * wait, (p - 1)(F + B - W). */
static void zero_bubble(int p, int mb) {
  nd_graph *g = pipeline_graph(p, mb, 1);
  double *dur = durations(g, 1, 1, 1);
  nd_sim_machine m = cpus(p);
  nd_sim_result one = {0}, split = {0}, zb = {0};
  int rc = simulate(g, &m, dur, "1f1b", ND_PLACEMENT_STRICT, &one);
  rc = rc ? rc : simulate(g, &m, dur, "1f1b-split", ND_PLACEMENT_STRICT, &split);
  rc = rc ? rc : simulate(g, &m, dur, "zbh1", ND_PLACEMENT_STRICT, &zb);
  double work = 3.0 * mb, idle_1f1b = (p - 1) * 3.0, idle_split = (p - 1) * 2.0, idle_zb = (p - 1) * 1.0;
  ok(rc == 0 && one.step_s == work + idle_1f1b,
     "1f1b, p %d, m %d, F = B = W: step 3m + (p - 1)(F + B + W) = %g (got %g)", p, mb, work + idle_1f1b, one.step_s);
  ok(rc == 0 && split.step_s == work + idle_split,
     "1f1b-split, p %d, m %d, F = B = W: step 3m + (p - 1)(F + B) = %g (got %g)", p, mb, work + idle_split,
     split.step_s);
  ok(rc == 0 && zb.step_s == work + idle_zb, "zbh1, p %d, m %d, F = B = W: step 3m + (p - 1)(F + B - W) = %g (got %g)",
     p, mb, work + idle_zb, zb.step_s);
  ok(fabs(zb.bubble - idle_zb / (work + idle_zb)) < 1e-12,
     "zbh1, p %d, m %d: bubble (p - 1) / (3m + p - 1) = %.6f, against 1f1b's %.6f and 1f1b-split's %.6f (got %.6f)", p,
     mb, idle_zb / (work + idle_zb), one.bubble, split.bubble, zb.bubble);
  free(dur);
  nd_graph_free(g);
}

/* A task on a device reads a host tensor: latency + bytes / bandwidth more,
 * and the device then holds a copy. */
static void transfer(void) {
  nd_graph *g = new_graph(2, 1);
  int32_t a = tensor(g, 0, 1000), b = tensor(g, 0, 1000), c = tensor(g, 1, 1000);
  task(g, ND_PHASE_F, 0, 0, &a, 1, b);
  task(g, ND_PHASE_F, 1, 0, &b, 1, c);
  nd_sim_machine m = cpus(1);
  m.n_workers = 2, m.n_nodes = 2, m.kind[1] = ND_BACKEND_OPENCL, m.node[1] = 1;
  m.bandwidth[0][1] = m.bandwidth[1][0] = 1000, m.latency_s = 0.5;
  double dur[2] = {1, 1};
  nd_sim_result r = {0};
  int rc = simulate(g, &m, dur, "ndws", ND_PLACEMENT_STRICT, &r);
  ok(rc == 0 && r.step_s == 3.5, "1 s, a 1000-byte copy at 1000 B/s plus 0.5 s latency, 1 s: 3.5 s (got %g)", r.step_s);
  ok(r.peak_bytes[0] == 2000 && r.peak_bytes[1] == 2000,
     "peak memory: host its 2 tensors, the device its own and the copy (%lld, %lld bytes)", (long long)r.peak_bytes[0],
     (long long)r.peak_bytes[1]);
  ok(r.transfer_bytes == 1000, "1000 bytes moved (got %lld)", (long long)r.transfer_bytes);
  nd_graph_free(g);
}

/* PoCL's threads share the cores: a CPU task that starts while the OpenCL
 * worker computes takes model.cpu_beside_opencl times its time. CPU chain
 * A, C of 1 s, device task B of 1.5 s, factor 2: whichever of A and B the
 * simulator starts first at 0, the chain ends at 3 s (A 1 s and C 2 s, or
 * A 2 s and C 1 s), and at 2 s with no factor. */
static void beside_opencl(void) {
  nd_graph *g = new_graph(2, 1);
  int32_t x = tensor(g, 0, 4), y = tensor(g, 0, 4), z = tensor(g, 0, 4), u = tensor(g, 1, 4), v = tensor(g, 1, 4);
  int32_t ids[3] = {task(g, ND_PHASE_F, 0, 0, &x, 1, y), task(g, ND_PHASE_F, 0, 0, &y, 1, z),
                    task(g, ND_PHASE_F, 1, 0, &u, 1, v)};
  g->tasks[ids[0]].flops = g->tasks[ids[1]].flops = 2, g->tasks[ids[2]].flops = 3;
  nd_sim_machine m = cpus(2);
  m.kind[1] = ND_BACKEND_OPENCL;
  nd_sim_model model = any_model();
  for (int d = 0; d < ND_BACKEND_COUNT; d++) model.fit[ND_TASK_RESIDUAL_FWD][d].s_per_flop = 0.5;
  nd_edges e;
  nd_sim_schedule s;
  nd_sim_result r[2] = {{0}};
  int rc = nd_graph_edges(g, &e);
  if (!rc) rc = nd_sim_schedule_build(g, &e, &m, &model, "ndws", ND_PLACEMENT_STRICT, 0, ND_PRIORITY_PIPELINE, &s);
  for (int k = 0; k < 2 && !rc; k++) {
    model.cpu_beside_opencl = k ? 2 : 0;
    rc = nd_sim_run(g, &e, &m, &model, NULL, &s, &r[k]);
  }
  ok(rc == 0 && r[0].step_s == 2 && r[1].step_s == 3,
     "CPU chain of 1 + 1 s beside a 1.5 s OpenCL task: 2 s, and 3 s when CPU tasks beside it take twice as long "
     "(got %g, %g)",
     r[0].step_s, r[1].step_s);
  ok(rc == 0 && r[1].busy_s[0] == 3 && r[1].busy_s[1] == 1.5,
     "the CPU worker is busy 3 s, the device 1.5 s (got %g, %g)", r[1].busy_s[0], r[1].busy_s[1]);
  nd_sim_schedule_free(&s);
  nd_edges_free(&e);
  nd_graph_free(g);
}

/* Stage 0 runs X then Z (1 s each), stage 1 runs Y after X, each on its
 * own worker: Z follows X on a busy worker (the gap, 0.1 s), Y starts on a
 * worker that waited 1.1 s, past the polling window (the wake-up, 0.5 s):
 * step 1.1 + 0.5 + 1 = 2.6 s; and with CPU tasks twice their fit on a
 * shared machine, 0.1 + 2 + 0.5 + 2. With X taking 0.5 ms, Y's worker is
 * still polling when X ends: the gap. */
static void wake_and_shared(void) {
  nd_graph *g = new_graph(2, 1);
  int32_t a = tensor(g, 0, 4), b = tensor(g, 0, 4), c = tensor(g, 0, 4), d = tensor(g, 1, 4);
  int32_t ids[3] = {task(g, ND_PHASE_F, 0, 0, &a, 1, b), task(g, ND_PHASE_F, 0, 0, &b, 1, c),
                    task(g, ND_PHASE_F, 1, 0, &b, 1, d)};
  for (int i = 0; i < 3; i++) g->tasks[ids[i]].flops = 2;
  nd_sim_machine m = cpus(2);
  nd_sim_model model = any_model();
  for (int d = 0; d < ND_BACKEND_COUNT; d++) model.fit[ND_TASK_RESIDUAL_FWD][d].s_per_flop = 0.5;
  model.gap_s[ND_BACKEND_CPU] = 0.1;
  nd_edges e;
  nd_sim_schedule s;
  nd_sim_result r[3] = {{0}};
  int rc = nd_graph_edges(g, &e);
  if (!rc) rc = nd_sim_schedule_build(g, &e, &m, &model, "ndws", ND_PLACEMENT_STRICT, 0, ND_PRIORITY_PIPELINE, &s);
  for (int k = 0; k < 3 && !rc; k++) {
    model.wake_s[ND_BACKEND_CPU] = k ? 0.5 : 0;
    model.cpu_shared = k == 2 ? 2 : 0;
    rc = nd_sim_run(g, &e, &m, &model, NULL, &s, &r[k]);
  }
  ok(rc == 0 && fabs(r[0].step_s - 2.2) < 1e-12, "without a wake-up time, the waiting worker starts Y after the gap: 2.2 s (got %g)",
     r[0].step_s);
  ok(rc == 0 && fabs(r[1].step_s - 2.6) < 1e-12, "with a wake-up of 0.5 s: 2.6 s (got %g)", r[1].step_s);
  ok(rc == 0 && fabs(r[2].step_s - 4.6) < 1e-12 && r[2].busy_s[0] == 4,
     "CPU tasks twice their fit (slowdown_shared 2): 4.6 s, worker 0 busy 4 s (got %g, %g)", r[2].step_s,
     r[2].busy_s[0]);
  /* X of another kind, 0.5 ms; gaps of 0.1 ms */
  model.cpu_shared = 0, model.gap_s[ND_BACKEND_CPU] = 1e-4;
  g->tasks[ids[0]].kind = ND_TASK_ACT_FWD;
  model.fit[ND_TASK_ACT_FWD][ND_BACKEND_CPU].s_per_flop = 0.25e-3;
  if (!rc) rc = nd_sim_run(g, &e, &m, &model, NULL, &s, &r[0]);
  ok(rc == 0 && fabs(r[0].step_s - 1.0007) < 1e-12,
     "a wait shorter than the polling window: the gap, 1.0007 s (got %.6f)", r[0].step_s);
  nd_sim_schedule_free(&s);
  nd_edges_free(&e);
  nd_graph_free(g);
}

/* A calibration file names device kinds by string, listed cpu, opencl, cuda
 * (docs/planner.md) whatever the device enum's numbers, and reads back to
 * the same kinds. */
static void calibration_file(void) {
  char dir[] = "/tmp/nd-test-sim-XXXXXX", path[64];
  if (!ok(mkdtemp(dir) != NULL, "a temporary directory")) return;
  snprintf(path, sizeof path, "%s/cal.json", dir);
  nd_calibration c, back;
  nd_calibration_default(&c);
  c.model.fit[ND_TASK_MATMUL_FWD][ND_BACKEND_CUDA] = (nd_sim_fit){1, 1e-5, 1e-12, 0};
  c.memory[ND_BACKEND_CUDA] = INT64_C(1) << 30, c.memory[ND_BACKEND_OPENCL] = INT64_C(1) << 20;
  nd_error err = {0};
  char *text = NULL;
  int rc = nd_calibration_save(&c, path, &err);
  if (!rc) rc = nd__read_file(path, 1 << 20, &text, NULL);
  /* the devices come first in the file, then each kind's entries */
  const char *cpu = rc ? NULL : strstr(text, "\"cpu\""), *ocl = rc ? NULL : strstr(text, "\"opencl\""),
             *cuda = rc ? NULL : strstr(text, "\"cuda\""), *mm = rc ? NULL : strstr(text, "\"matmul_fwd\"");
  ok(cpu && ocl && cuda && cpu < ocl && ocl < cuda, "the devices are listed cpu, opencl, cuda");
  const char *mm_cpu = mm ? strstr(mm, "\"cpu\"") : NULL, *mm_ocl = mm ? strstr(mm, "\"opencl\"") : NULL,
             *mm_cuda = mm ? strstr(mm, "\"cuda\"") : NULL;
  ok(mm_cpu && mm_ocl && mm_cuda && mm_cpu < mm_ocl && mm_ocl < mm_cuda, "so are matmul_fwd's entries");
  if (!rc) rc = nd_calibration_load(&back, path, &err);
  ok(rc == 0 && back.memory[ND_BACKEND_CUDA] == INT64_C(1) << 30 &&
         back.memory[ND_BACKEND_OPENCL] == INT64_C(1) << 20 &&
         back.model.fit[ND_TASK_MATMUL_FWD][ND_BACKEND_CUDA].valid &&
         !back.model.fit[ND_TASK_ADAMW][ND_BACKEND_CUDA].valid &&
         back.model.fit[ND_TASK_LOAD_BATCH][ND_BACKEND_CPU].valid &&
         !back.model.fit[ND_TASK_LOAD_BATCH][ND_BACKEND_OPENCL].valid,
     "read back: each kind's memory and timings under its own device kind");
  if (rc) diag("%s", err.msg);
  free(text);
  remove(path);
  rmdir(dir);
}

/* Every key of a hand-written file lands in its own field: the values are
 * all different, so a reader that took one key's value for another's (the
 * bus's two bandwidths, say) fails here. */
static void calibration_keys(void) {
  char dir[] = "/tmp/nd-test-sim-XXXXXX", path[64];
  if (!ok(mkdtemp(dir) != NULL, "a temporary directory")) return;
  snprintf(path, sizeof path, "%s/keys.json", dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs("{\"format\": \"ndgraph-calibration/1\", \"machine\": \"keys\",\n"
          " \"devices\": {\"cpu\": {\"memory_bytes\": 1001, \"gap_us\": 2, \"slowdown_beside_opencl\": 3,\n"
          "                     \"wake_us\": 18, \"slowdown_shared\": 19},\n"
          "             \"opencl\": {\"memory_bytes\": 1004, \"gap_us\": 5, \"wake_us\": 20},\n"
          "             \"cuda\": {\"memory_bytes\": 1006, \"gap_us\": 7}},\n"
          " \"bus\": {\"host_device_gbs\": 8, \"device_device_gbs\": 9, \"latency_us\": 10},\n"
          " \"step_overhead_us\": 11,\n"
          " \"kinds\": {\"matmul_fwd\": {\"cpu\": {\"overhead_us\": 12, \"gflops\": 13, \"gbs\": 14},\n"
          "                           \"cuda\": {\"overhead_us\": 15, \"gflops\": 16, \"gbs\": 17}}}}\n",
          f);
    fclose(f);
  }
  nd_calibration c;
  nd_error err = {0};
  int rc = nd_calibration_load(&c, path, &err);
  ok(rc == 0, "a file giving every key loads (%s)", err.msg);
  const nd_sim_fit *cpu = &c.model.fit[ND_TASK_MATMUL_FWD][ND_BACKEND_CPU],
                   *cuda = &c.model.fit[ND_TASK_MATMUL_FWD][ND_BACKEND_CUDA];
  struct {
    const char *key;
    double got, want;
  } keys[] = {
      {"devices.cpu.memory_bytes", (double)c.memory[ND_BACKEND_CPU], 1001},
      {"devices.cpu.gap_us", c.model.gap_s[ND_BACKEND_CPU], 2e-6},
      {"devices.cpu.slowdown_beside_opencl", c.model.cpu_beside_opencl, 3},
      {"devices.cpu.wake_us", c.model.wake_s[ND_BACKEND_CPU], 18e-6},
      {"devices.cpu.slowdown_shared", c.model.cpu_shared, 19},
      {"devices.opencl.wake_us", c.model.wake_s[ND_BACKEND_OPENCL], 20e-6},
      {"devices.opencl.memory_bytes", (double)c.memory[ND_BACKEND_OPENCL], 1004},
      {"devices.opencl.gap_us", c.model.gap_s[ND_BACKEND_OPENCL], 5e-6},
      {"devices.cuda.memory_bytes", (double)c.memory[ND_BACKEND_CUDA], 1006},
      {"devices.cuda.gap_us", c.model.gap_s[ND_BACKEND_CUDA], 7e-6},
      {"bus.host_device_gbs", c.host_device_bps, 8e9},
      {"bus.device_device_gbs", c.device_device_bps, 9e9},
      {"bus.latency_us", c.latency_s, 10e-6},
      {"step_overhead_us", c.model.step_overhead_s, 11e-6},
      {"kinds.matmul_fwd.cpu.overhead_us", cpu->overhead_s, 12e-6},
      {"kinds.matmul_fwd.cpu.gflops", cpu->s_per_flop, 1 / 13e9},
      {"kinds.matmul_fwd.cpu.gbs", cpu->s_per_byte, 1 / 14e9},
      {"kinds.matmul_fwd.cuda.overhead_us", cuda->overhead_s, 15e-6},
      {"kinds.matmul_fwd.cuda.gflops", cuda->s_per_flop, 1 / 16e9},
      {"kinds.matmul_fwd.cuda.gbs", cuda->s_per_byte, 1 / 17e9},
  };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    ok(rc == 0 && fabs(keys[i].got - keys[i].want) <= 1e-9 * keys[i].want, "read back: %s (got %g, want %g)",
       keys[i].key, keys[i].got, keys[i].want);
  ok(rc == 0 && strcmp(c.machine, "keys") == 0 && !c.model.fit[ND_TASK_MATMUL_FWD][ND_BACKEND_OPENCL].valid,
     "read back: machine, and no opencl entry for matmul_fwd");
  remove(path);
  rmdir(dir);
}

int main(void) {
  chain();
  fork_join(3, 6);
  fork_join(4, 7);
  pipeline(4, 8, 1, 1, "1f1b");
  pipeline(4, 8, 1, 2, "1f1b");
  pipeline(2, 4, 1, 2, "1f1b");
  pipeline(3, 6, 1, 2, "gpipe");
  zero_bubble(2, 8);
  zero_bubble(2, 16);
  transfer();
  beside_opencl();
  wake_and_shared();
  calibration_file();
  calibration_keys();
  return done_testing();
}
