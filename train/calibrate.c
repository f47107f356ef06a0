/* `ndgraph calibrate`: short probe runs of the configuration's model on this
 * machine's devices, with StarPU's profiling (the executor's observer) timing
 * every task on the worker that ran it. Per task kind and kind of device,
 * time is fitted against FLOPs and bytes by least squares over the probes'
 * shapes (micro-batch sizes, tensor-parallel shards); StarPU's bus model
 * gives the transfer figures; the scheduling gap between tasks is what makes
 * the simulated probe step match the measured one. We time tasks ourselves
 * rather than read StarPU's history models: those are keyed by data-size
 * footprints, not by FLOPs, and hold no figure for a shape never run. */
#include <math.h>
#include <starpu.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "kernels/backend.h"
#include "sim/calibration.h"
#include "sim/machine.h"
#include "sim/sched.h"
#include "train/trainer_internal.h"

#define ND_CAL_STEPS 3 /* per probe, after one step that compiles kernels and calibrates priorities */

/* A CPU task of a probe with an OpenCL device: PoCL's threads share the cores */
enum { ND_ALONE, ND_BESIDE_IDLE, ND_BESIDE_BUSY /* the device computed when it started */ };

typedef struct sample {
  int kind, dev;
  int beside; /* ND_ALONE for the CPU probes' tasks and the device's */
  double flops, bytes, s;
} sample;

typedef struct samples {
  sample *v;
  int64_t n, cap;
  double *us, *start; /* per task of the probe graph, this step */
  int *worker;
} samples;

static void task_done(void *user, int graph, int32_t task, double start, double end, int worker) {
  samples *s = user;
  if (graph == 0) s->us[task] = end - start, s->start[task] = start, s->worker[task] = worker;
}

/* Where task i of this step ran: beside an OpenCL device computing when it
 * started (the simulator's rule), beside an idle one, or on no CPU of a
 * machine with a device. */
static int beside(const samples *s, int32_t n, int32_t i) {
  if (nd__worker_backend(s->worker[i]) != ND_BACKEND_CPU || !nd_runtime_devices(ND_BACKEND_OPENCL)) return ND_ALONE;
  for (int32_t j = 0; j < n; j++)
    if (nd__worker_backend(s->worker[j]) == ND_BACKEND_OPENCL && s->start[j] <= s->start[i] &&
        s->start[i] < s->start[j] + s->us[j])
      return ND_BESIDE_BUSY;
  return ND_BESIDE_IDLE;
}

/* Least squares of s against the columns `use` of (1, flops, bytes); 0 when
 * the system is singular or a coefficient comes out negative. */
static int solve(const sample *v, int64_t n, const int *use, double *coef) {
  double A[3][4] = {{0}};
  for (int64_t i = 0; i < n; i++) {
    double x[3] = {1, v[i].flops, v[i].bytes};
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++) A[r][c] += use[r] && use[c] ? x[r] * x[c] : 0;
      A[r][3] += use[r] ? x[r] * v[i].s : 0;
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
static nd_sim_fit fit(const sample *v, int64_t n) {
  static const int tries[][3] = {{1, 1, 1}, {1, 1, 0}, {0, 1, 0}, {1, 0, 1}, {0, 0, 1}, {1, 0, 0}};
  double coef[3];
  for (size_t k = 0; k < sizeof tries / sizeof tries[0]; k++)
    if (solve(v, n, tries[k], coef) && coef[0] + coef[1] + coef[2] > 0)
      return (nd_sim_fit){1, coef[0], coef[1], coef[2]};
  return (nd_sim_fit){1, 0, 0, 0};
}

static int cmp_seconds(const void *a, const void *b) {
  const sample *x = a, *y = b;
  return (x->s > y->s) - (x->s < y->s);
}

static int cmp_sample(const void *a, const void *b) {
  const sample *x = a, *y = b;
  return x->kind != y->kind ? x->kind - y->kind : x->dev != y->dev ? x->dev - y->dev : x->beside - y->beside;
}

static int set(nd_config *c, const char *key, const char *value, nd_error *err) {
  return nd_config_set(c, key, value, err);
}

typedef struct probe_result {
  double step_s; /* median measured step */
  int opencl;    /* OpenCL devices it ran with */
} probe_result;

/* Runs one probe configuration; appends its samples; measures the bus when it has a device. */
static int probe(const nd_config *cfg, const char *what, samples *s, nd_calibration *cal, probe_result *pr, FILE *log,
                 nd_error *err) {
  nd_trainer *tr;
  int rc = nd_trainer_open(&tr, cfg, err);
  if (rc) return rc;
  const nd_graph *g = nd__trainer_graph(tr);
  nd_exec *ex = nd__trainer_exec(tr);
  s->us = calloc((size_t)g->n_tasks + 1, sizeof *s->us);
  s->worker = calloc((size_t)g->n_tasks + 1, sizeof *s->worker);
  s->start = calloc((size_t)g->n_tasks + 1, sizeof *s->start);
  double steps[ND_CAL_STEPS];
  rc = s->us && s->worker && s->start ? 0 : nd__fail(err, ND_ENOMEM, "calibrate: out of memory");
  nd_step_result res;
  int64_t base = s->n;
  if (!rc) rc = nd_trainer_step(tr, &res, err);
  /* the observed steps time the tasks; the unobserved ones the step */
  for (int k = 0; k < ND_CAL_STEPS && !rc; k++) {
    nd_exec_observe(ex, &(nd_exec_observer){task_done, s});
    rc = nd_trainer_step(tr, &res, err);
    nd_exec_observe(ex, NULL);
    for (int32_t i = 0; i < g->n_tasks && !rc; i++) {
      if (s->n == s->cap) {
        sample *p = realloc(s->v, (size_t)(s->cap = s->cap * 2 + 4096) * sizeof *p);
        if (!p)
          rc = nd__fail(err, ND_ENOMEM, "calibrate: out of memory");
        else
          s->v = p;
      }
      const nd_task *t = &g->tasks[i];
      if (!rc)
        s->v[s->n++] = (sample){t->kind,          nd__worker_backend(s->worker[i]),   beside(s, g->n_tasks, i),
                                (double)t->flops, (double)(t->bytes + t->comm_bytes), s->us[i] * 1e-6};
    }
    if (!rc) rc = nd_trainer_step(tr, &res, err);
    steps[k] = res.step_ms * 1e-3;
  }
  /* each task's median over the steps: a burst of other load on the
   * machine (it is shared) slows one step's tasks, not the fit */
  for (int32_t i = 0; i < g->n_tasks && !rc; i++) {
    sample *v = s->v + base, m[ND_CAL_STEPS];
    for (int k = 0; k < ND_CAL_STEPS; k++) m[k] = v[(int64_t)k * g->n_tasks + i];
    qsort(m, ND_CAL_STEPS, sizeof *m, cmp_seconds);
    v[i] = m[ND_CAL_STEPS / 2];
  }
  if (!rc) s->n = base + g->n_tasks;
  int nodes = (int)starpu_memory_nodes_get_count();
  pr->opencl = nd_runtime_devices(ND_BACKEND_OPENCL);
  if (!rc && pr->opencl && nodes > 1) {
    double up = starpu_transfer_bandwidth(0, 1), down = starpu_transfer_bandwidth(1, 0);
    cal->host_device_bps = (up < down ? up : down) * 1e6; /* MB/s */
    cal->latency_s = starpu_transfer_latency(0, 1) * 1e-6;
    cal->memory[ND_BACKEND_OPENCL] = (int64_t)starpu_memory_get_total(1);
  }
  for (int a = 0; a < ND_CAL_STEPS; a++) /* median: sort the three */
    for (int b = a + 1; b < ND_CAL_STEPS; b++)
      if (steps[b] < steps[a]) {
        double t = steps[a];
        steps[a] = steps[b], steps[b] = t;
      }
  pr->step_s = steps[ND_CAL_STEPS / 2];
  if (!rc && log) fprintf(log, "calibrate: probe %s: %d tasks, step %.2f ms\n", what, g->n_tasks, pr->step_s * 1e3);
  free(s->us), free(s->worker), free(s->start);
  nd_trainer_close(tr);
  return rc;
}

/* The gap of device kind `kind` that makes the simulated probe step the measured one. */
static int fit_gap(const nd_config *cfg, nd_calibration *cal, int kind, double measured, nd_error *err) {
  nd_sim_machine m;
  nd_graph *g = NULL;
  nd_edges e = {0};
  nd_sim_schedule s = {0};
  nd_sim_model *model = &cal->model;
  int rc = nd_sim_machine_from(cfg, cal, &m, err);
  if (!rc) rc = nd_graph_build(&g, cfg, 0, err);
  if (!rc) rc = nd_graph_edges(g, &e);
  if (!rc)
    rc = nd_sim_schedule_build(g, &e, &m, model, cfg->runtime.scheduler, cfg->runtime.placement,
                               cfg->runtime.deterministic, cfg->runtime.priorities, &s);
  double at[2] = {0, 50e-6}, step[2];
  for (int k = 0; k < 2 && !rc; k++) {
    nd_sim_result r = {0};
    model->gap_s[kind] = at[k];
    rc = nd_sim_run(g, &e, &m, model, NULL, &s, &r);
    step[k] = r.step_s;
  }
  if (!rc) {
    double slope = (step[1] - step[0]) / at[1];
    cal->model.gap_s[kind] = slope > 0 && measured > step[0] ? (measured - step[0]) / slope : 0;
  }
  nd_sim_schedule_free(&s);
  nd_edges_free(&e);
  nd_graph_free(g);
  nd_sim_machine_free(&m);
  return rc ? nd__fail(err, rc, "calibrate: simulating the probe failed") : 0;
}

int nd_calibrate(const nd_config *cfg, const char *path, FILE *log, nd_error *err) {
  /* before the probes, not after minutes of them */
  int bad = nd_check_writable(path, err);
  if (bad) return bad;
  nd_calibration cal;
  memset(&cal, 0, sizeof cal);
  samples s = {0};
  int64_t G = cfg->train.micro_batch_size * cfg->parallelism.micro_batches * cfg->parallelism.data_parallel_size;
  /* CPU probes: one rank over the workers, the whole batch and a quarter of
   * it per micro-batch; two tensor-parallel shards when the heads allow */
  struct {
    int tp, m, pp, opencl;
  } probes[] = {{1, 1, 1, 0}, {1, 4, 1, 0}, {2, 2, 1, 0}, {1, 1, 2, 1}, {1, 4, 2, 1}};
  enum { N_PROBES = sizeof probes / sizeof probes[0] };
  probe_result pr[N_PROBES] = {{0}};
  nd_config pc[N_PROBES];
  int rc = 0, n_probes = 0;
  int no_device = 0;
  for (int i = 0; i < N_PROBES && !rc; i++) {
    int m = probes[i].m;
    if (probes[i].opencl && no_device) continue;
    while (m > 1 && G % m) m--;
    if (cfg->model.n_head % probes[i].tp || probes[i].pp > cfg->model.n_layer) continue;
    nd_config *c = &pc[n_probes];
    *c = *cfg;
    char v[32];
    /* c keeps the user's file as its source: an error while probing names it */
    char what[96];
    snprintf(what, sizeof what, "tp %d, %d x %lld%s", probes[i].tp, m, (long long)(G / m),
             probes[i].opencl ? ", one CPU worker and one OpenCL device" : "");
    rc = set(c, "parallelism.data_parallel_size", "1", err) || set(c, "parallelism.stage_layers", "[]", err);
    snprintf(v, sizeof v, "%d", probes[i].tp), rc = rc || set(c, "parallelism.tensor_parallel_size", v, err);
    snprintf(v, sizeof v, "%d", probes[i].pp), rc = rc || set(c, "parallelism.pipeline_parallel_size", v, err);
    snprintf(v, sizeof v, "%d", m), rc = rc || set(c, "parallelism.micro_batches", v, err);
    rc = rc || set(c, "parallelism.activation_slots", m < 2 ? "1" : "2", err);
    snprintf(v, sizeof v, "%lld", (long long)(G / m)), rc = rc || set(c, "train.micro_batch_size", v, err);
    rc = rc || set(c, "train.eval_every", "0", err) || set(c, "train.save_dir", "", err) ||
         set(c, "log.metrics", "", err) || set(c, "trace.path", "", err);
    if (probes[i].opencl) {
      /* the layers on the device, the embedding on the core: both kinds timed */
      char split[32];
      snprintf(split, sizeof split, "[1,%lld]", (long long)cfg->model.n_layer - 1);
      rc = rc || set(c, "runtime.workers", "1", err) || set(c, "runtime.opencl_devices", "1", err) ||
           set(c, "runtime.placement", "strict", err) ||
           (cfg->model.n_layer > 1 && set(c, "parallelism.stage_layers", split, err));
    } else {
      rc = rc || set(c, "runtime.opencl_devices", "0", err);
    }
    if (rc || (rc = nd_config_validate(c, err))) break;
    nd_error probe_err = {0};
    int prc = probe(c, what, &s, &cal, &pr[n_probes], log, &probe_err);
    if (prc && probes[i].opencl) { /* no OpenCL device here: calibrate the CPU alone */
      if (log) fprintf(log, "calibrate: no OpenCL probe (%s)\n", probe_err.msg);
      no_device = 1;
      continue;
    }
    if (prc) *err = probe_err, rc = prc;
    n_probes += !prc;
  }
  if (!rc && !s.n) rc = nd__fail(err, ND_ECONFIG, "%s: calibrate: no probe could run", nd__config_origin(cfg, NULL));
  if (!rc) {
    qsort(s.v, (size_t)s.n, sizeof *s.v, cmp_sample);
    /* a CPU kind from the CPU probes alone: beside PoCL's threads the same
     * task is slower, which is the factor below, not the CPU's speed */
    for (int64_t a = 0, b, u; a < s.n; a = b) {
      for (b = a; b < s.n && s.v[b].kind == s.v[a].kind && s.v[b].dev == s.v[a].dev;) b++;
      for (u = a; u < b && s.v[u].beside == ND_ALONE;) u++;
      cal.model.fit[s.v[a].kind][s.v[a].dev] = fit(s.v + a, u > a ? u - a : b - a);
    }
    double busy = 0, alone = 0; /* CPU tasks beside the device computing: measured, and as the CPU fit has them */
    for (int64_t i = 0; i < s.n; i++) {
      const nd_sim_fit *f = &cal.model.fit[s.v[i].kind][ND_BACKEND_CPU];
      if (s.v[i].beside != ND_BESIDE_BUSY) continue;
      busy += s.v[i].s;
      alone += f->overhead_s + s.v[i].flops * f->s_per_flop + s.v[i].bytes * f->s_per_byte;
    }
    cal.model.cpu_beside_opencl = alone > 0 ? busy / alone : 0;
    /* gaps: the CPU's from the CPU probes (their median), then the device's
     * from the mixed probes with the CPU's fixed */
    for (int pass = 0; pass < 2 && !rc; pass++) {
      int kind = pass ? ND_BACKEND_OPENCL : ND_BACKEND_CPU, n_gaps = 0;
      double gaps[N_PROBES];
      for (int i = 0; i < n_probes && !rc; i++)
        if ((pr[i].opencl > 0) == pass && !(rc = fit_gap(&pc[i], &cal, kind, pr[i].step_s, err)))
          gaps[n_gaps++] = cal.model.gap_s[kind];
      for (int a = 0; a < n_gaps; a++)
        for (int b = a + 1; b < n_gaps; b++)
          if (gaps[b] < gaps[a]) {
            double t = gaps[a];
            gaps[a] = gaps[b], gaps[b] = t;
          }
      cal.model.gap_s[kind] = n_gaps ? gaps[n_gaps / 2] : 0;
    }
  }
  snprintf(cal.machine, sizeof cal.machine, "this machine, calibrated on %.60s (%lld task timings)",
           cfg->source[0] ? cfg->source : "the quick start", (long long)s.n);
  if (!rc) rc = nd_calibration_save(&cal, path, err);
  if (!rc && log) fprintf(log, "calibrate: wrote %s\n", path);
  free(s.v);
  return rc;
}
