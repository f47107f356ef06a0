/* The planner: layouts (data × tensor × pipeline ranks fitting the workers,
 * micro-batches dividing the fixed global batch, activation slots, an even
 * or a device-balanced split of the layers, placement, scheduler), each
 * built as the IR, checked against every device's memory and simulated. */
#include "sim/planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/device.h"
#include "graph/split.h"
#include "sim/machine.h"
#include "sim/sched.h"

#define ND_PLAN_MAX_MICRO 16

static const char *const placement_names[] = {"affinity", "strict", "free"};

int nd_candidate_sets(const nd_candidate *c, char sets[][64]) {
  int n = 0;
  snprintf(sets[n++], 64, "parallelism.data_parallel_size=%d", c->dp);
  snprintf(sets[n++], 64, "parallelism.tensor_parallel_size=%d", c->tp);
  snprintf(sets[n++], 64, "parallelism.pipeline_parallel_size=%d", c->pp);
  snprintf(sets[n++], 64, "parallelism.micro_batches=%d", c->micro_batches);
  snprintf(sets[n++], 64, "parallelism.activation_slots=%d", c->slots);
  int at = snprintf(sets[n], 64, "parallelism.stage_layers=[");
  for (int s = 0; c->uneven && s < c->pp && at < 60; s++)
    at += snprintf(sets[n] + at, (size_t)(64 - at), s ? ",%d" : "%d", c->stage_layers[s]);
  snprintf(sets[n++] + at, (size_t)(64 - at), "]");
  snprintf(sets[n++], 64, "train.micro_batch_size=%d", c->micro_batch_size);
  snprintf(sets[n++], 64, "runtime.placement=%s", placement_names[c->placement]);
  snprintf(sets[n++], 64, "runtime.scheduler=%s", c->scheduler);
  return n;
}

/* Appends to a growable array of candidates. */
static int append(nd_candidate **arr, int *n, const nd_candidate *c) {
  if ((*n & (*n - 1)) == 0) { /* 0, 1, 2, 4, ...: grow to the next power of two */
    nd_candidate *p = realloc(*arr, (size_t)(*n ? 2 * *n : 1) * sizeof *p);
    if (!p) return ND_ENOMEM;
    *arr = p;
  }
  (*arr)[(*n)++] = *c;
  return 0;
}

static double gib(int64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

typedef struct ctx {
  nd_planning *p;
  const nd_config *base;
  nd_error *err;
  const char *calibration; /* its file, NULL: the built-in estimates */
} ctx;

/* Builds the candidate's graph; 1: skipped (the configuration rejects the layout). */
static int build(ctx *c, const nd_candidate *cand, nd_config *cfg, nd_graph **g) {
  char sets[ND_PLAN_MAX_SETS][64];
  int n = nd_candidate_sets(cand, sets);
  *cfg = *c->base;
  nd_error ignored = {0};
  for (int i = 0; i < n; i++) {
    char *eq = strchr(sets[i], '=');
    *eq = 0;
    int rc = nd_config_set(cfg, sets[i], eq + 1, &ignored);
    *eq = '=';
    if (rc) return 1;
  }
  if (nd_config_validate(cfg, &ignored)) return 1;
  int rc = nd_graph_build(g, cfg, 0, c->err);
  return rc == ND_ENOMEM ? rc : rc ? 1 : 0;
}

/* Static memory per node (every tensor where its rank lives); 1 and a reason when a device overflows. */
static int over_memory(const nd_planning *p, nd_candidate *cand, const int64_t *bytes) {
  for (int n = 0; n < p->machine.n_nodes; n++)
    if (p->machine.memory[n] > 0 && bytes[n] > p->machine.memory[n]) {
      snprintf(cand->reason, sizeof cand->reason, "device %s needs %.3f GiB (%lld bytes), has %.3f GiB (%lld bytes)",
               p->machine.node_name[n], gib(bytes[n]), (long long)bytes[n], gib(p->machine.memory[n]),
               (long long)p->machine.memory[n]);
      return 1;
    }
  return 0;
}

/* One simulated step of the candidate on machine m. */
static int simulate_on(ctx *c, const nd_candidate *cand, const nd_graph *g, const nd_edges *e, const nd_config *cfg,
                       const nd_sim_machine *m, nd_sim_result *r) {
  nd_sim_schedule s;
  int rc = nd_sim_schedule_build(g, e, m, &c->p->cal.model, cand->scheduler, cand->placement,
                                 cfg->runtime.deterministic, cfg->runtime.priorities, &s);
  if (rc) return rc;
  rc = nd_sim_run(g, e, m, &c->p->cal.model, NULL, &s, r);
  nd_sim_schedule_free(&s);
  return rc;
}

/* The CPU workers of m alone, when its ranks would land on CPU workers and
 * devices both: the runtime then times a step with and without the devices
 * and keeps the faster (train/trainer.c), unless placement is strict or the
 * order fixed. 0: no such trial. */
static int trial_machine(const nd_sim_machine *m, const nd_graph *g, const nd_candidate *cand, nd_sim_machine *cpu) {
  nd_rank_map pl;
  int mixed = 0;
  if (cand->placement == ND_PLACEMENT_STRICT || strcmp(cand->scheduler, "ndws") || nd_sim_rank_map(m, g, &pl)) return 0;
  for (int r = 0; r < pl.n_ranks; r++)
    for (int u = pl.first[r]; u < pl.first[r] + pl.count[r]; u++)
      mixed |= pl.units[u].kind != pl.units[pl.first[0]].kind;
  nd_rank_map_free(&pl);
  if (!mixed) return 0;
  *cpu = *m;
  cpu->n_workers = 0;
  for (int w = 0; w < m->n_workers; w++)
    if (m->kind[w] == ND_BACKEND_CPU) {
      cpu->obj[cpu->n_workers] = m->obj[w];
      cpu->kind[cpu->n_workers] = m->kind[w];
      cpu->node[cpu->n_workers++] = m->node[w];
    }
  return cpu->n_workers > 0;
}

static int simulate(ctx *c, nd_candidate *cand, const nd_graph *g, const nd_edges *e, const nd_config *cfg) {
  nd_planning *p = c->p;
  nd_sim_result r = {0}, cpu_r = {0};
  nd_sim_machine cpu;
  int rc = simulate_on(c, cand, g, e, cfg, &p->machine, &r);
  if (!rc && trial_machine(&p->machine, g, cand, &cpu) && !(rc = simulate_on(c, cand, g, e, cfg, &cpu, &cpu_r)) &&
      cpu_r.step_s < r.step_s)
    r = cpu_r;
  if (rc) return rc;
  cand->step_s = r.step_s, cand->bubble = r.bubble;
  cand->tokens_per_s = r.step_s > 0 ? (double)(p->global_batch * p->seq_len) / r.step_s : 0;
  memcpy(cand->peak, r.peak_bytes, sizeof cand->peak);
  memcpy(cand->busy_s, r.busy_s, sizeof cand->busy_s);
  return over_memory(p, cand, r.peak_bytes) ? append(&p->rejected, &p->n_rejected, cand)
                                            : append(&p->plans, &p->n_plans, cand);
}

/* A task kind of g that the calibration times on none of m's workers, or -1. */
static int untimed_kind(const nd_graph *g, const nd_sim_machine *m, const nd_sim_model *model) {
  for (int32_t i = 0; i < g->n_tasks; i++) {
    int timed = 0;
    for (int w = 0; w < m->n_workers && !timed; w++) timed = model->fit[g->tasks[i].kind][m->kind[w]].valid;
    if (!timed) return (int)g->tasks[i].kind;
  }
  return -1;
}

/* Every placement and scheduler of one graph. */
static int policies(ctx *c, nd_candidate *cand, const nd_graph *g, const nd_config *cfg) {
  nd_planning *p = c->p;
  int untimed = untimed_kind(g, &p->machine, &p->cal.model);
  if (untimed >= 0) {
    char kinds[64] = "";
    for (int k = 0, seen = 0; k < ND_BACKEND_COUNT; k++)
      for (int w = 0; w < p->machine.n_workers; w++)
        if (p->machine.kind[w] == k) {
          snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", seen++ ? ", " : "", nd_device_name(k));
          break;
        }
    return nd__fail(c->err, ND_ECONFIG, "%s: kinds.%s: no timing for this machine's workers (%s): no layout can run it",
                    c->calibration ? c->calibration : "the built-in estimates", nd_task_kind_name(untimed), kinds);
  }
  nd_edges e;
  int rc = nd_graph_edges(g, &e);
  if (rc) return rc;
  /* memory of the tensors where their ranks live, before any simulation */
  nd_rank_map pl = {0};
  int64_t bytes[ND_SIM_MAX_NODES] = {0};
  rc = nd_sim_rank_map(&p->machine, g, &pl);
  for (int32_t x = 0; x < g->n_tensors && !rc; x++)
    bytes[pl.units[pl.first[nd_rank_index(g, g->tensors[x].home)]].node] += g->tensors[x].bytes;
  if (!rc && over_memory(p, cand, bytes)) {
    snprintf(cand->scheduler, sizeof cand->scheduler, "any");
    memcpy(cand->peak, bytes, sizeof bytes);
    rc = append(&p->rejected, &p->n_rejected, cand);
    goto cleanup;
  }
  /* ndgraph's own policies: StarPU's dmda family decides from its history
   * models, which calibrate themselves during the first runs of a shape, so
   * what it does in a short run is not what the simulator replays */
  static const char *const scheds[] = {"ndws", "1f1b", "zbh1", "zbh2", "gpipe"};
  for (size_t k = 0; k < sizeof scheds / sizeof scheds[0] && !rc; k++) {
    int fixed = k >= 1;
    if (fixed && g->pp < 2) continue;
    for (int pl = 0; pl < 3 && !rc; pl++) {
      /* a fixed order pins every task to its home: placement changes nothing */
      if (fixed && pl != ND_PLACEMENT_STRICT) continue;
      snprintf(cand->scheduler, sizeof cand->scheduler, "%s", scheds[k]);
      cand->placement = (enum nd_placement)pl;
      rc = simulate(c, cand, g, &e, cfg);
    }
  }
cleanup:
  nd_rank_map_free(&pl);
  nd_edges_free(&e);
  return rc;
}

/* The even split, and, when the stages land on different kinds of worker,
 * the split balanced by their speeds. */
static int layouts(ctx *c, nd_candidate *cand) {
  nd_config cfg;
  nd_graph *g = NULL;
  cand->uneven = 0;
  snprintf(cand->scheduler, sizeof cand->scheduler, "ndws"); /* policies() tries each */
  int rc = build(c, cand, &cfg, &g);
  if (rc) return rc > 0 ? 0 : rc;
  rc = policies(c, cand, g, &cfg);
  int pp = g->pp, L = g->L;
  double other[ND_MAX_STAGES] = {0}, per_layer[ND_MAX_STAGES] = {0};
  int mixed = 0;
  nd_rank_map pl;
  if (!rc && pp > 1 && L < 257 && !(rc = nd_sim_rank_map(&c->p->machine, g, &pl))) {
    nd_unit_check can = nd_sim_unit_check(&c->p->cal.model);
    for (int32_t i = 0; i < g->n_tasks; i++) {
      const nd_task *t = &g->tasks[i];
      if (t->rank.dp || t->rank.tp) continue;
      int kind = pl.units[nd_task_unit(g, &pl, &can, t, 0)].kind;
      double sec = nd_sim_task_seconds(&c->p->cal.model, t, kind);
      if (t->layer >= 0 && t->layer < L)
        per_layer[t->rank.pp] += sec > 0 ? sec : 0;
      else
        other[t->rank.pp] += sec > 0 ? sec : 0;
    }
    for (int s = 0; s < pp; s++) {
      per_layer[s] /= g->stage_layers[s];
      mixed |= pl.units[pl.first[nd_rank_index(g, (nd_rank){0, s, 0})]].kind != pl.units[pl.first[0]].kind;
    }
    nd_rank_map_free(&pl);
  }
  nd_graph_free(g);
  if (rc || !mixed) return rc;
  rc = nd_stage_split(pp, L, other, per_layer, cand->stage_layers);
  if (rc) return rc;
  int even = 1;
  for (int s = 0; s < pp; s++) even &= cand->stage_layers[s] == L / pp + (s < L % pp);
  if (even) return 0;
  cand->uneven = 1;
  rc = build(c, cand, &cfg, &g);
  if (rc) return rc > 0 ? 0 : rc;
  rc = policies(c, cand, g, &cfg);
  nd_graph_free(g);
  return rc;
}

static int by_step(const void *a, const void *b) {
  const nd_candidate *x = a, *y = b;
  return (x->step_s > y->step_s) - (x->step_s < y->step_s);
}

int nd_planning_run(nd_planning *p, const nd_config *cfg, const char *calibration, nd_error *err) {
  memset(p, 0, sizeof *p);
  clock_t t0 = clock();
  int rc = calibration ? nd_calibration_load(&p->cal, calibration, err) : (nd_calibration_default(&p->cal), 0);
  if (!rc) rc = nd_sim_machine_from(cfg, &p->cal, &p->machine, err);
  if (rc) return rc;
  ctx c = {p, cfg, err, calibration};
  int64_t dp0 = cfg->parallelism.data_parallel_size, heads = cfg->model.n_head, L = cfg->model.n_layer;
  p->global_batch = cfg->train.micro_batch_size * cfg->parallelism.micro_batches * dp0;
  p->seq_len = cfg->model.seq_len;
  int workers = p->machine.n_workers;
  for (int dp = 1; dp <= workers && !rc; dp++) {
    if (p->global_batch % dp) continue;
    int64_t per_replica = p->global_batch / dp;
    for (int tp = 1; dp * tp <= workers && !rc; tp++) {
      if (heads % tp) continue;
      for (int pp = 1; dp * tp * pp <= workers && pp <= L && pp <= ND_MAX_STAGES && !rc; pp++)
        for (int m = 1; m <= ND_PLAN_MAX_MICRO && m <= per_replica && !rc; m++) {
          if (per_replica % m) continue;
          /* slots: the 1F1B minimum and one more (more only adds memory) */
          int lo = pp < m ? pp : m, hi = pp + 1 < m ? pp + 1 : m;
          for (int slots = lo; slots <= hi && !rc; slots++) {
            nd_candidate cand = {.dp = dp,
                                 .tp = tp,
                                 .pp = pp,
                                 .micro_batches = m,
                                 .micro_batch_size = (int)(per_replica / m),
                                 .slots = slots};
            rc = layouts(&c, &cand);
          }
        }
    }
  }
  if (!rc && p->n_plans > 1) qsort(p->plans, (size_t)p->n_plans, sizeof *p->plans, by_step);
  p->seconds = (double)(clock() - t0) / CLOCKS_PER_SEC;
  if (rc) {
    nd_planning_free(p);
    /* a calibration that cannot time the model has said so */
    if (rc == ND_ECONFIG) return rc;
    return nd__fail(err, rc, "%s: planning failed: %s", nd__config_origin(cfg, NULL), nd_strerror(rc));
  }
  if (!p->n_plans) {
    /* the layout that came closest, and by how much it misses */
    const nd_candidate *least = NULL;
    int64_t least_peak = INT64_MAX;
    for (int i = 0; i < p->n_rejected; i++) {
      int64_t peak = 0;
      for (int n = 0; n < ND_SIM_MAX_NODES; n++) peak = p->rejected[i].peak[n] > peak ? p->rejected[i].peak[n] : peak;
      if (peak < least_peak) least_peak = peak, least = &p->rejected[i];
    }
    nd__fail(err, ND_ECONFIG,
             "%s: plan --auto: no layout fits the devices (%d rejected for memory; the smallest, dp %d tp %d "
             "pp %d with %d micro-batches: %s)",
             nd__config_origin(cfg, NULL), p->n_rejected, least ? least->dp : 0, least ? least->tp : 0,
             least ? least->pp : 0, least ? least->micro_batches : 0, least ? least->reason : "none tried");
    nd_planning_free(p);
    return ND_ECONFIG;
  }
  return 0;
}

void nd_planning_free(nd_planning *p) {
  nd_sim_machine_free(&p->machine);
  free(p->plans);
  free(p->rejected);
  p->plans = p->rejected = NULL;
  p->n_plans = p->n_rejected = 0;
}
