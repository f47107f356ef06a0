/* The planner: layouts (data × context × tensor × pipeline ranks fitting the workers,
 * micro-batches dividing the fixed global batch, activation slots, an even
 * or a device-balanced split of the layers, data-parallel sharding and
 * recomputation, placement, scheduler), each built as the IR, checked
 * against every device's memory and runtime.device_memory, and simulated. */
#include "sim/planner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/device.h"
#include "graph/shard.h"
#include "graph/split.h"
#include "sim/machine.h"
#include "sim/sched.h"

static const char *const placement_names[] = {"affinity", "strict", "free"};

const char *nd_recompute_name(enum nd_recompute r) {
  static const char *const names[] = {"none", "attention", "layer"};
  return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

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
  snprintf(sets[n++], 64, "train.recompute=%s", nd_recompute_name(c->recompute));
  snprintf(sets[n++], 64, "parallelism.data_parallel_shard=%s", nd_dp_shard_name(c->shard));
  snprintf(sets[n++], 64, "parallelism.data_parallel_shard_size=0"); /* the whole group, whatever the configuration's */
  snprintf(sets[n++], 64, "parallelism.context_parallel_size=%d", c->cp);
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
  int processes;            /* the layouts must cut across this many processes */
  int total;                /* layouts to simulate */
  struct timespec started;  /* wall clock, for progress() */
  double reported_s;        /* when progress() last spoke; 0: never */
} ctx;

/* Builds the candidate's graph, with `removed` layers taken off every stage
 * (0: the candidate itself); 1: skipped (the configuration rejects the layout). */
static int build(ctx *c, const nd_candidate *cand, int removed, nd_config *cfg, nd_graph **g) {
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
  if (removed) {
    cfg->model.n_layer = 0;
    cfg->parallelism.n_stage_layers = cand->pp;
    for (int s = 0; s < cand->pp; s++)
      cfg->model.n_layer += cfg->parallelism.stage_layers[s] = cand->stage_layers[s] - removed;
  }
  if (nd_config_validate(cfg, &ignored)) return 1;
  int rc = nd_graph_build(g, cfg, 0, c->err);
  return rc == ND_ENOMEM ? rc : rc ? 1 : 0;
}

/* Memory per node over a device's; 1 and a reason when a device overflows. */
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

/* What one graph of a candidate gives under each policy: the tensors' memory
 * where their ranks live, and per placement and scheduler the step on the
 * machine and, where the runtime's trial would run, on its CPU workers. */
#define ND_PLAN_POLICIES 8
typedef struct outcome {
  int64_t bytes[ND_SIM_MAX_NODES];
  int64_t rank_bytes; /* the tensors of the rank that holds the most: rank_most */
  nd_rank rank_most;
  int n, trial[ND_PLAN_POLICIES];
  enum nd_placement placement[ND_PLAN_POLICIES];
  const char *scheduler[ND_PLAN_POLICIES];
  nd_sim_result r[ND_PLAN_POLICIES], cpu[ND_PLAN_POLICIES];
} outcome;

/* Over runtime.device_memory on the rank that holds the most, or over a
 * device's memory: 1 and the reason. The limit is per rank: ranks on CPU
 * workers share main memory, and a rank's tensors are what `ndgraph run`
 * measures per rank (docs/memory.md). */
static int over_limit(const nd_planning *p, nd_candidate *cand, const outcome *o) {
  if (p->rank_limit > 0 && o->rank_bytes > p->rank_limit) {
    snprintf(cand->reason, sizeof cand->reason,
             "rank dp %d pp %d tp %d needs %.3f GiB (%lld bytes), runtime.device_memory is %.3f GiB (%lld bytes)",
             o->rank_most.dp, o->rank_most.pp, o->rank_most.tp, gib(o->rank_bytes), (long long)o->rank_bytes,
             gib(p->rank_limit), (long long)p->rank_limit);
    return 1;
  }
  return over_memory(p, cand, o->bytes);
}

/* The tensors of each rank of g: the most any holds, and which. */
static int rank_bytes(const nd_graph *g, outcome *o) {
  int64_t *bytes = calloc((size_t)(g->dp * g->pp * g->tp), sizeof *bytes);
  if (!bytes) return ND_ENOMEM;
  for (int32_t x = 0; x < g->n_tensors; x++) bytes[nd_rank_index(g, g->tensors[x].home)] += g->tensors[x].bytes;
  o->rank_bytes = -1;
  for (int d = 0; d < g->dp; d++)
    for (int s = 0; s < g->pp; s++)
      for (int t = 0; t < g->tp; t++) {
        nd_rank r = {d, s, t};
        int64_t b = bytes[nd_rank_index(g, r)];
        if (b > o->rank_bytes) o->rank_bytes = b, o->rank_most = r;
      }
  free(bytes);
  return 0;
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

/* Every placement and scheduler of one graph, into o; memory_only: the
 * tensors' memory alone (a longer graph of the candidate is over a device's
 * memory already: it only takes part in the extrapolation of its bytes). */
static int policies(ctx *c, nd_candidate *cand, const nd_graph *g, const nd_config *cfg, int memory_only, outcome *o) {
  nd_planning *p = c->p;
  int untimed = untimed_kind(g, &p->machine, &p->cal.model);
  if (untimed >= 0 && (cand->shard != ND_DP_SHARD_NONE || cand->recompute != ND_RECOMPUTE_NONE || cand->cp > 1)) {
    /* an option the calibration cannot time (`ndgraph calibrate` probes no
     * sharded group and no ring): said in the output, the other layouts still ranked */
    if (!p->n_untimed++) p->untimed_kind = untimed;
    return 1;
  }
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
  memset(o, 0, sizeof *o);
  rc = nd_sim_rank_map(&p->machine, g, &pl);
  for (int32_t x = 0; x < g->n_tensors && !rc; x++)
    o->bytes[pl.units[pl.first[nd_rank_index(g, g->tensors[x].home)]].node] += g->tensors[x].bytes;
  nd_rank_map_free(&pl);
  if (!rc) rc = rank_bytes(g, o);
  if (rc || memory_only || over_limit(p, cand, o)) goto cleanup;
  /* ndgraph's own policies: StarPU's dmda family decides from its history
   * models, which calibrate themselves during the first runs of a shape, so
   * what it does in a short run is not what the simulator replays */
  static const char *const scheds[] = {"ndws", "1f1b", "zbh1", "zbh2", "gpipe"};
  for (size_t k = 0; k < sizeof scheds / sizeof scheds[0] && !rc; k++) {
    int fixed = k >= 1;
    /* several processes: ndws alone, as a fixed order does not finish a
     * step under mpirun today (pp 2, 1f1b, one stage per process waits
     * forever) and parallelism.auto must not pick a layout that hangs */
    if (fixed && (g->pp < 2 || c->processes > 1)) continue;
    for (int place = 0; place < 3 && !rc; place++) {
      /* a fixed order pins every task to its home: placement changes nothing */
      if (fixed && place != ND_PLACEMENT_STRICT) continue;
      int i = o->n++;
      snprintf(cand->scheduler, sizeof cand->scheduler, "%s", scheds[k]);
      cand->placement = o->placement[i] = (enum nd_placement)place;
      o->scheduler[i] = scheds[k];
      nd_sim_machine cpu;
      rc = simulate_on(c, cand, g, &e, cfg, &p->machine, &o->r[i]);
      if (!rc && (o->trial[i] = trial_machine(&p->machine, g, cand, &cpu)))
        rc = simulate_on(c, cand, g, &e, cfg, &cpu, &o->cpu[i]);
    }
  }
cleanup:
  nd_edges_free(&e);
  return rc;
}

/* x at 0 layers removed, from xa at `removed` + STEP and xb at `removed`. */
static double extrapolate(double xa, double xb, int removed) {
  return xb + (xb - xa) * removed / ND_PLAN_LAYERS_STEP;
}
static int64_t extrapolate_bytes(int64_t xa, int64_t xb, int removed) {
  return xb + (xb - xa) * removed / ND_PLAN_LAYERS_STEP;
}

/* The result of the full candidate from those of two shorter graphs. */
static nd_sim_result extrapolate_result(const nd_sim_result *a, const nd_sim_result *b, int removed, int workers) {
  nd_sim_result r = *b;
  double busy = 0;
  r.step_s = extrapolate(a->step_s, b->step_s, removed);
  for (int w = 0; w < workers; w++) busy += r.busy_s[w] = extrapolate(a->busy_s[w], b->busy_s[w], removed);
  for (int n = 0; n < ND_SIM_MAX_NODES; n++)
    r.peak_bytes[n] = extrapolate_bytes(a->peak_bytes[n], b->peak_bytes[n], removed);
  r.transfer_bytes = extrapolate_bytes(a->transfer_bytes, b->transfer_bytes, removed);
  /* busy can come out a hair over the step where both are extrapolated */
  r.bubble = r.step_s > 0 ? fmax(0, 1 - busy / (r.step_s * workers)) : 0;
  return r;
}

/* Files the candidate under each policy of o: a plan, or rejected for memory. */
static int record(ctx *c, nd_candidate *cand, const outcome *o) {
  nd_planning *p = c->p;
  cand->rank_bytes = o->rank_bytes;
  if (over_limit(p, cand, o)) {
    snprintf(cand->scheduler, sizeof cand->scheduler, "any");
    memcpy(cand->peak, o->bytes, sizeof cand->peak);
    return append(&p->rejected, &p->n_rejected, cand);
  }
  int rc = 0;
  for (int i = 0; i < o->n && !rc; i++) {
    const nd_sim_result *r = o->trial[i] && o->cpu[i].step_s < o->r[i].step_s ? &o->cpu[i] : &o->r[i];
    snprintf(cand->scheduler, sizeof cand->scheduler, "%s", o->scheduler[i]);
    cand->placement = o->placement[i];
    cand->step_s = r->step_s, cand->bubble = r->bubble;
    cand->tokens_per_s = r->step_s > 0 ? (double)(p->global_batch * p->seq_len) / r->step_s : 0;
    memcpy(cand->peak, r->peak_bytes, sizeof cand->peak);
    memcpy(cand->busy_s, r->busy_s, sizeof cand->busy_s);
    rc = over_memory(p, cand, r->peak_bytes) ? append(&p->rejected, &p->n_rejected, cand)
                                             : append(&p->plans, &p->n_plans, cand);
  }
  return rc;
}

/* The candidate simulated under every policy, whole or, with long stages,
 * extrapolated; *g: the graph simulated last (the shortest stages), for the
 * caller's per-layer times. 1: skipped (the configuration rejects it). */
static int evaluate(ctx *c, nd_candidate *cand, nd_graph **g, nd_config *cfg) {
  int shortest = cand->stage_layers[0];
  for (int s = 1; s < cand->pp; s++) shortest = cand->stage_layers[s] < shortest ? cand->stage_layers[s] : shortest;
  int removed = shortest > ND_PLAN_LAYERS_WHOLE ? shortest - 2 * ND_PLAN_LAYERS_STEP : 0;
  outcome *o = malloc(2 * sizeof *o);
  if (!o) return ND_ENOMEM;
  /* both graphs built with the same configuration (the scheduler sizes the
   * activation pools), which policies() changes as it goes */
  nd_candidate as_built = *cand;
  int rc = build(c, cand, removed, cfg, g);
  if (!rc && nd_process_units(*g) < c->processes) rc = 1; /* it cannot be cut across the processes */
  if (!rc) rc = policies(c, cand, *g, cfg, 0, &o[1]);
  if (!rc && removed) {
    nd_graph_free(*g);
    *g = NULL;
    rc = build(c, &as_built, removed + ND_PLAN_LAYERS_STEP, cfg, g);
    if (!rc) rc = policies(c, cand, *g, cfg, o[1].n == 0, &o[0]);
    for (int n = 0; n < ND_SIM_MAX_NODES && !rc; n++)
      o[1].bytes[n] = extrapolate_bytes(o[0].bytes[n], o[1].bytes[n], removed);
    if (!rc) o[1].rank_bytes = extrapolate_bytes(o[0].rank_bytes, o[1].rank_bytes, removed);
    for (int i = 0; i < o[1].n && !rc; i++) {
      o[1].r[i] = extrapolate_result(&o[0].r[i], &o[1].r[i], removed, c->p->machine.n_workers);
      if (o[1].trial[i]) {
        int cpus = 0;
        for (int w = 0; w < c->p->machine.n_workers; w++) cpus += c->p->machine.kind[w] == ND_BACKEND_CPU;
        o[1].cpu[i] = extrapolate_result(&o[0].cpu[i], &o[1].cpu[i], removed, cpus);
      }
    }
  }
  int before = c->p->n_plans + c->p->n_rejected;
  if (!rc) rc = record(c, cand, &o[1]);
  if (!rc && removed) c->p->n_extrapolated += c->p->n_plans + c->p->n_rejected - before;
  free(o);
  return rc;
}

/* The even split, and, when the stages land on different kinds of worker,
 * the split balanced by their speeds. */
static int layouts(ctx *c, nd_candidate *cand) {
  nd_config cfg;
  nd_graph *g = NULL;
  int L = (int)c->base->model.n_layer, pp = cand->pp;
  cand->uneven = 0;
  for (int s = 0; s < pp; s++) cand->stage_layers[s] = L / pp + (s < L % pp);
  snprintf(cand->scheduler, sizeof cand->scheduler, "ndws"); /* policies() tries each */
  int rc = evaluate(c, cand, &g, &cfg);
  if (rc) {
    nd_graph_free(g);
    return rc > 0 ? 0 : rc;
  }
  double other[ND_MAX_STAGES] = {0}, per_layer[ND_MAX_STAGES] = {0};
  int mixed = 0;
  nd_rank_map pl;
  /* per layer and outside the layers: the same in a graph of shorter stages */
  if (pp > 1 && L < 257 && !(rc = nd_sim_rank_map(&c->p->machine, g, &pl))) {
    nd_unit_check can = nd_sim_unit_check(&c->p->cal.model);
    for (int32_t i = 0; i < g->n_tasks; i++) {
      const nd_task *t = &g->tasks[i];
      if (t->rank.dp || t->rank.tp) continue;
      int kind = pl.units[nd_task_unit(g, &pl, &can, t, 0)].kind;
      double sec = nd_sim_task_seconds(&c->p->cal.model, t, kind);
      if (t->layer >= 0 && t->layer < g->L)
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
  g = NULL;
  rc = evaluate(c, cand, &g, &cfg);
  nd_graph_free(g);
  return rc > 0 ? 0 : rc;
}

/* Evaluates the candidate as it is set; 1: it fits (a plan recorded), 0:
 * rejected for memory or skipped (the configuration refuses the option),
 * with *skipped saying which; < 0: an error. */
static int fits(ctx *c, nd_candidate *cand, int *skipped) {
  int plans = c->p->n_plans, rejected = c->p->n_rejected, rc = layouts(c, cand);
  *skipped = c->p->n_plans == plans && c->p->n_rejected == rejected;
  return rc < 0 ? rc : c->p->n_plans > plans;
}

/* The layout as it is, and only where it does not fit, under the options
 * that trade time for memory: each data-parallel shard option (dp > 1
 * alone: a group of one shards nothing), each with recomputation where it
 * still does not fit, attention's (a second attention forward) before the
 * layer's (every block's forward again). Recomputing only adds work, and
 * sharding was no faster in 445 of GPT-2 small's 456 layouts on the 8-GPU
 * example and at most 2.6% in the rest, none of them within 1.4 times of
 * the best (docs/planner.md): simulating them for a layout that fits
 * without would cost the planner twice its time for nothing. An option the
 * configuration refuses (a shard option not built yet) is skipped.
 * 1: the layout fits as it is, or the configuration refuses it. */
static int memory_options(ctx *c, nd_candidate *cand) {
  static const enum nd_recompute recomputes[] = {ND_RECOMPUTE_NONE, ND_RECOMPUTE_ATTENTION, ND_RECOMPUTE_LAYER};
  cand->shard = ND_DP_SHARD_NONE, cand->recompute = ND_RECOMPUTE_NONE;
  int skipped, rc = fits(c, cand, &skipped);
  if (rc || skipped) return rc < 0 ? rc : 1;
  for (int shard = ND_DP_SHARD_NONE; shard <= ND_DP_SHARD_PARAMETERS && rc >= 0; shard++) {
    if (shard != ND_DP_SHARD_NONE && cand->dp < 2) break;
    for (size_t r = shard == ND_DP_SHARD_NONE; r < sizeof recomputes / sizeof recomputes[0]; r++) {
      cand->shard = (enum nd_dp_shard)shard, cand->recompute = recomputes[r];
      if ((rc = fits(c, cand, &skipped)) || skipped) break; /* fits, an error, or the option refused */
    }
  }
  return rc < 0 ? rc : 0;
}

/* The layout at cp 1 and, while it does not fit as it is, at cp 2, 4, ...
 * (each sequence in 2 cp chunks, so seq_len divisible by 2 cp; cp more ranks
 * in the workers), each with the memory options. Like them, context
 * parallelism is tried only where memory binds: it splits the activations,
 * not the parameters or their state, and the ring's blocks and merges are
 * more tasks than one rank's attention; where the layout fits, dp over the
 * same ranks divides the same work without a ring. */
static int context_options(ctx *c, nd_candidate *cand, int workers) {
  int rc = 0;
  for (int cp = 1; rc == 0 && cp <= ND_MAX_CONTEXT && (cp == 1 || c->base->model.seq_len % (2 * cp) == 0) &&
                   cand->dp * cp * cand->tp * cand->pp <= workers;
       cp *= 2) {
    cand->cp = cp;
    rc = memory_options(c, cand);
  }
  return rc < 0 ? rc : 0;
}

static int by_step(const void *a, const void *b) {
  const nd_candidate *x = a, *y = b;
  return (x->step_s > y->step_s) - (x->step_s < y->step_s);
}

/* A line on stderr while planning takes long (a model of a thousand layers
 * on a large machine): how far it is, so that a silent minute is not taken
 * for a hang. On a terminal only: a script's capture, a log, keeps the
 * answer alone (an error stays one line whatever the machine's speed). */
#define ND_PLAN_QUIET_S    2.0
#define ND_PLAN_PROGRESS_S 10.0

static void progress(ctx *c, int done) {
  if (!isatty(STDERR_FILENO)) return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double s = (double)(now.tv_sec - c->started.tv_sec) + 1e-9 * (double)(now.tv_nsec - c->started.tv_nsec);
  if (s < (c->reported_s > 0 ? c->reported_s + ND_PLAN_PROGRESS_S : ND_PLAN_QUIET_S)) return;
  c->reported_s = s;
  fprintf(stderr, "ndgraph: plan --auto: %d of %d shapes (dp, tp, pp, micro-batches, slots) simulated in %.0f s\n",
          done, c->total, s);
  fflush(stderr);
}

/* Every dp x tp x pp x micro-batches x slots of the model and global batch
 * that fits the workers: counted (count not NULL), or simulated. */
static int each_layout(ctx *c, int *count) {
  const nd_config *cfg = c->base;
  int64_t heads = cfg->model.n_head, L = cfg->model.n_layer;
  /* N processes bring N machines' workers: the mesh may have that many ranks */
  int workers = c->p->machine.n_workers * c->processes, rc = 0, done = 0;
  for (int dp = 1; dp <= workers && !rc; dp++) {
    if (c->p->global_batch % dp) continue;
    int64_t per_replica = c->p->global_batch / dp;
    for (int tp = 1; dp * tp <= workers && !rc; tp++) {
      if (heads % tp) continue;
      for (int pp = 1; dp * tp * pp <= workers && pp <= L && pp <= ND_MAX_STAGES && !rc; pp++)
        for (int m = 1; m <= ND_PLAN_MAX_MICRO && m <= per_replica && !rc; m++) {
          if (per_replica % m) continue;
          /* slots: the 1F1B minimum and one more (more only adds memory) */
          int lo = pp < m ? pp : m, hi = pp + 1 < m ? pp + 1 : m;
          for (int slots = lo; slots <= hi && !rc; slots++) {
            if (count) {
              ++*count;
              continue;
            }
            nd_candidate cand = {.dp = dp,
                                 .cp = 1,
                                 .tp = tp,
                                 .pp = pp,
                                 .micro_batches = m,
                                 .micro_batch_size = (int)(per_replica / m),
                                 .slots = slots};
            rc = context_options(c, &cand, workers);
            progress(c, ++done);
          }
        }
    }
  }
  return rc;
}

int nd_planning_run(nd_planning *p, const nd_config *cfg, const char *calibration, int processes, nd_error *err) {
  memset(p, 0, sizeof *p);
  clock_t t0 = clock();
  int rc = calibration ? nd_calibration_load(&p->cal, calibration, err) : (nd_calibration_default(&p->cal), 0);
  if (!rc) rc = nd_sim_machine_from(cfg, &p->cal, &p->machine, err);
  if (rc) return rc;
  ctx c = {.p = p, .base = cfg, .err = err, .calibration = calibration, .processes = processes};
  p->global_batch = cfg->train.micro_batch_size * cfg->parallelism.micro_batches * cfg->parallelism.data_parallel_size;
  p->seq_len = cfg->model.seq_len;
  p->rank_limit = cfg->runtime.device_memory * 1024 * 1024;
  each_layout(&c, &c.total);
  clock_gettime(CLOCK_MONOTONIC, &c.started);
  rc = each_layout(&c, NULL);
  if (!rc && p->n_plans > 1) qsort(p->plans, (size_t)p->n_plans, sizeof *p->plans, by_step);
  p->seconds = (double)(clock() - t0) / CLOCKS_PER_SEC;
  if (rc) {
    nd_planning_free(p);
    /* a calibration that cannot time the model has said so */
    if (rc == ND_ECONFIG) return rc;
    return nd__fail(err, rc, "%s: planning failed: %s", nd__config_origin(cfg, NULL), nd_strerror(rc));
  }
  if (!p->n_plans && !p->n_rejected && processes > 1) {
    nd__fail(err, ND_ECONFIG,
             "%s: plan --auto: no layout cuts across %d processes (each takes a data-parallel replica or a "
             "pipeline stage, or a rank with runtime.split_tensor_groups; the global batch, n_head and n_layer "
             "bound them)",
             nd__config_origin(cfg, NULL), processes);
    nd_planning_free(p);
    return ND_ECONFIG;
  }
  if (!p->n_plans) {
    /* the layout that came closest, and by how much it misses: the least
     * of its needs over the limits */
    const nd_candidate *least = NULL;
    double least_over = INFINITY;
    for (int i = 0; i < p->n_rejected; i++) {
      const nd_candidate *r = &p->rejected[i];
      double over = p->rank_limit > 0 ? (double)r->rank_bytes / (double)p->rank_limit : 0;
      for (int n = 0; n < p->machine.n_nodes; n++)
        if (p->machine.memory[n] > 0) over = fmax(over, (double)r->peak[n] / (double)p->machine.memory[n]);
      if (over < least_over) least_over = over, least = r;
    }
    nd__fail(err, ND_ECONFIG,
             "%s: plan --auto: no layout fits the devices (%d rejected for memory; the smallest, dp %d cp %d tp %d "
             "pp %d with %d micro-batches: %s)",
             nd__config_origin(cfg, NULL), p->n_rejected, least ? least->dp : 0, least ? least->cp : 0,
             least ? least->tp : 0,
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
