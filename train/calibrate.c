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
#include "sim/planner.h"
#include "sim/sched.h"
#include "train/calstats.h"
#include "train/trainer_internal.h"

#define ND_CAL_STEPS 3 /* per probe, after one step that compiles kernels and calibrates priorities */

typedef nd__cal_sample sample;

typedef struct samples {
  sample *v;
  int64_t n, cap;
  double *us, *start; /* per task of the probe graph, this step */
  int *worker;
  nd__cal_gaps gaps;
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

static double median(double *v, int n) {
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++)
      if (v[b] < v[a]) {
        double t = v[a];
        v[a] = v[b], v[b] = t;
      }
  return n ? v[n / 2] : 0;
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
  nd_edges e = {0};
  rc = s->us && s->worker && s->start && !nd_graph_edges(g, &e) ? 0
                                                                : nd__fail(err, ND_ENOMEM, "calibrate: out of memory");
  nd_step_result res;
  int64_t base = s->n;
  if (!rc) rc = nd_trainer_step(tr, &res, err);
  /* the observed steps time the tasks; the unobserved ones the step */
  for (int k = 0; k < ND_CAL_STEPS && !rc; k++) {
    nd_exec_observe(ex, &(nd_exec_observer){task_done, s});
    rc = nd_trainer_step(tr, &res, err);
    nd_exec_observe(ex, NULL);
    if (!rc && nd__cal_gaps_add(&s->gaps, g, &e, s->start, s->us, s->worker, nd__worker_backend)) rc = nd__fail(err, ND_ENOMEM, "calibrate: out of memory");
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
                                (double)t->flops, (double)(t->bytes + t->comm_bytes), s->us[i] * 1e-6, 0};
    }
    if (!rc) rc = nd_trainer_step(tr, &res, err);
    steps[k] = res.step_ms * 1e-3;
  }
  /* each task's median over the steps: a burst of other load on the
   * machine (it is shared) slows one step's tasks, not the fit; the mean
   * keeps what the load takes on average */
  for (int32_t i = 0; i < g->n_tasks && !rc; i++) {
    sample *v = s->v + base, m[ND_CAL_STEPS];
    double sum = 0;
    for (int k = 0; k < ND_CAL_STEPS; k++) m[k] = v[(int64_t)k * g->n_tasks + i], sum += m[k].s;
    qsort(m, ND_CAL_STEPS, sizeof *m, cmp_seconds);
    v[i] = m[ND_CAL_STEPS / 2];
    v[i].mean_s = sum / ND_CAL_STEPS;
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
  pr->step_s = median(steps, ND_CAL_STEPS);
  if (!rc && log) fprintf(log, "calibrate: probe %s: %d tasks, step %.2f ms\n", what, g->n_tasks, pr->step_s * 1e3);
  free(s->us), free(s->worker), free(s->start);
  nd_edges_free(&e);
  nd_trainer_close(tr);
  return rc;
}

/* The simulated step of the probe cfg with the calibration so far. */
static int simulate_probe(const nd_config *cfg, nd_calibration *cal, double *step_s, nd_error *err) {
  nd_sim_machine m;
  nd_graph *g = NULL;
  nd_edges e = {0};
  nd_sim_schedule s = {0};
  nd_sim_result r = {0};
  int rc = nd_sim_machine_from(cfg, cal, &m, err);
  if (rc) return rc;
  rc = nd_graph_build(&g, cfg, 0, err);
  if (!rc) rc = nd_graph_edges(g, &e);
  if (!rc)
    rc = nd_sim_schedule_build(g, &e, &m, &cal->model, cfg->runtime.scheduler, cfg->runtime.placement,
                               cfg->runtime.deterministic, cfg->runtime.priorities, &s);
  if (!rc) rc = nd_sim_run(g, &e, &m, &cal->model, NULL, &s, &r);
  *step_s = r.step_s;
  nd_sim_schedule_free(&s);
  nd_edges_free(&e);
  nd_graph_free(g);
  nd_sim_machine_free(&m);
  return rc ? nd__fail(err, rc, "calibrate: simulating the probe failed") : 0;
}

/* The gap of device kind `kind` that makes the simulated probe step the measured one. */
static int fit_gap(const nd_config *cfg, nd_calibration *cal, int kind, double measured, nd_error *err) {
  double at[2] = {0, 50e-6}, step[2];
  int rc = 0;
  for (int k = 0; k < 2 && !rc; k++) {
    cal->model.gap_s[kind] = at[k];
    rc = simulate_probe(cfg, cal, &step[k], err);
  }
  if (rc) return rc;
  double slope = (step[1] - step[0]) / at[1];
  cal->model.gap_s[kind] = slope > 0 && measured > step[0] ? (measured - step[0]) / slope : 0;
  return 0;
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
   * it per micro-batch; two tensor-parallel shards when the heads allow; two
   * pipeline stages with the most micro-batches the planner tries, so that
   * the smallest tasks a layout can have are measured, not extrapolated
   * from larger ones, and the stages' sends are timed between CPU workers */
  struct {
    int tp, m, pp, opencl;
  } probes[] = {{1, 1, 1, 0}, {1, 4, 1, 0}, {2, 2, 1, 0}, {1, ND_PLAN_MAX_MICRO, 2, 0}, {1, 1, 2, 1}, {1, 4, 2, 1}};
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
      cal.model.fit[s.v[a].kind][s.v[a].dev] = nd__cal_fit(s.v + a, u > a ? u - a : b - a);
    }
    double busy = 0, alone = 0; /* CPU tasks beside the device computing: measured, and as the CPU fit has them */
    for (int64_t i = 0; i < s.n; i++) {
      const nd_sim_fit *f = &cal.model.fit[s.v[i].kind][ND_BACKEND_CPU];
      if (s.v[i].beside != ND_BESIDE_BUSY) continue;
      busy += s.v[i].s;
      alone += f->overhead_s + s.v[i].flops * f->s_per_flop + s.v[i].bytes * f->s_per_byte;
    }
    cal.model.cpu_beside_opencl = alone > 0 ? busy / alone : 0;
    /* the CPU tasks' mean time over the fit's: on a machine that other
     * processes share, a task loses its core now and then, the longer it
     * runs the more often; the median of three runs, which the fit takes,
     * leaves that out, and on the 2 cores of the tests at a load of 6 to 9
     * the mean was several times the median */
    double mean = 0, fitted = 0;
    for (int64_t i = 0; i < s.n; i++) {
      const nd_sim_fit *f = &cal.model.fit[s.v[i].kind][ND_BACKEND_CPU];
      if (s.v[i].dev != ND_BACKEND_CPU || s.v[i].beside != ND_ALONE) continue;
      mean += s.v[i].mean_s;
      fitted += f->overhead_s + s.v[i].flops * f->s_per_flop + s.v[i].bytes * f->s_per_byte;
    }
    cal.model.cpu_shared = fitted > 0 ? fmax(1, mean / fitted) : 0;
    /* the CPU's gaps as measured (the simulated probe steps beside the
     * measured ones show what the model leaves out); then the device's gap
     * from the mixed probes, the CPU's fixed */
    int cpu = ND_BACKEND_CPU, n_dev = 0;
    double gaps[N_PROBES];
    for (int w = 0; w < 2; w++) {
      double *to = w ? cal.model.wake_s : cal.model.gap_s;
      to[cpu] = s.gaps.n[w][cpu] ? s.gaps.us[w][cpu] / (double)s.gaps.n[w][cpu] * 1e-6 : 0;
    }
    if (log)
      fprintf(log, "calibrate: CPU gap %.1f us (%lld), wake-up %.1f us (%lld), tasks %.3f times their median\n",
              cal.model.gap_s[cpu] * 1e6, (long long)s.gaps.n[0][cpu], cal.model.wake_s[cpu] * 1e6,
              (long long)s.gaps.n[1][cpu], cal.model.cpu_shared);
    for (int i = 0; i < n_probes && !rc && log; i++) {
      double sim_s;
      if (!pr[i].opencl && !(rc = simulate_probe(&pc[i], &cal, &sim_s, err)))
        fprintf(log, "calibrate: probe %d: measured %.2f ms, simulated %.2f ms\n", i + 1, pr[i].step_s * 1e3,
                sim_s * 1e3);
    }
    for (int i = 0; i < n_probes && !rc; i++)
      if (pr[i].opencl && !(rc = fit_gap(&pc[i], &cal, ND_BACKEND_OPENCL, pr[i].step_s, err)))
        gaps[n_dev++] = cal.model.gap_s[ND_BACKEND_OPENCL];
    cal.model.gap_s[ND_BACKEND_OPENCL] = median(gaps, n_dev);
  }
  snprintf(cal.machine, sizeof cal.machine, "this machine, calibrated on %.60s (%lld task timings)",
           cfg->source[0] ? cfg->source : "the quick start", (long long)s.n);
  if (!rc) rc = nd_calibration_save(&cal, path, err);
  if (!rc && log) fprintf(log, "calibrate: wrote %s\n", path);
  free(s.v);
  return rc;
}
