/* The planner simulates the placement that runs (issue 56): for every layout
 * `plan --auto` ranks for tests/test_planner.sh's small model on this
 * machine (one and two CPU workers; one CPU worker and one OpenCL device
 * where the build and PoCL have one, with runtime.deterministic, the
 * default, and without),
 * the simulator's rank map (sim/sched.c) equals the one run applies
 * (tasks/schedule.c): the same units, of the same kinds and in the same
 * order, per rank; and each task's home and allowed workers in the
 * simulator's schedule equal those nd_sched_apply gave the executor. Workers
 * are compared by kind and position among their kind's, since StarPU numbers
 * its workers in an order of its own. On the 8-GPU topology with its calibration (as test_planner.sh plans it),
 * which no run here has, the simulator's ranks sit on the GPUs `ndgraph plan`
 * reports. */
#include <stdlib.h>
#include <string.h>

#include "common/device.h"
#include "common/topology.h"
#include "placement/placement.h"
#include "scheduler/hints.h"
#include "sim/planner.h"
#include "sim/sched.h"
#include "tasks/exec.h"
#include "tasks/schedule.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define MAX_IDS 256

/* test_planner.sh's small model */
static const char *const small[] = {"model.n_layer=2", "model.n_embd=32", "model.n_head=4", "model.seq_len=16", NULL};

/* canon[id]: unit id's place among pl's units counted kind by kind (enum
 * order), each kind's in id order. */
static void canonical(const nd_rank_map *pl, int *canon) {
  int at = 0;
  for (int k = 0; k < ND_BACKEND_COUNT; k++)
    for (int id = 0; id < MAX_IDS; id++)
      for (int u = 0; u < pl->n_units; u++)
        if (pl->units[u].id == id && pl->units[u].kind == k) canon[id] = at++;
}

/* The bitmap of mask (words 32-bit words, bit id) over canonical places. */
static uint64_t canon_mask(const uint32_t *mask, int words, const int *canon) {
  uint64_t m = 0;
  for (int id = 0; mask && id < words * 32 && id < MAX_IDS; id++)
    if (mask[id / 32] >> (id % 32) & 1) m |= UINT64_C(1) << canon[id];
  return m;
}

/* Compares run's placement of g (StarPU started for cfg) with the simulator's on machine m; 0: the same, else
 * why not in why. */
static int compare(const nd_graph *g, const nd_config *cfg, const nd_planning *p, const nd_candidate *c, char *why,
                   size_t size) {
  nd_rank_map rt = {0}, sim = {0};
  nd_sim_schedule s = {0};
  nd_edges e = {0};
  nd_exec *ex = NULL;
  nd_error err = {0};
  int rc_canon[MAX_IDS] = {0}, sim_canon[MAX_IDS] = {0}, bad = 1;
  if (nd_exec_create(&ex, g, &err) || nd_sched_apply(ex, 0, g, cfg, NULL, &err) || nd_sched_place(g, &rt, &err)) {
    snprintf(why, size, "run: %.200s", err.msg);
    goto done;
  }
  if (nd_graph_edges(g, &e) || nd_sim_rank_map(&p->machine, g, &sim) ||
      nd_sim_schedule_build(g, &e, &p->machine, &p->cal.model, c->scheduler, c->placement, cfg->runtime.deterministic,
                            cfg->runtime.priorities, &s)) {
    snprintf(why, size, "simulator: no schedule");
    goto done;
  }
  int kinds_rt[ND_BACKEND_COUNT] = {0}, kinds_sim[ND_BACKEND_COUNT] = {0};
  for (int u = 0; u < rt.n_units; u++) kinds_rt[rt.units[u].kind]++;
  for (int u = 0; u < sim.n_units; u++) kinds_sim[sim.units[u].kind]++;
  if (memcmp(kinds_rt, kinds_sim, sizeof kinds_rt)) {
    snprintf(why, size, "%d units run, %d simulated, or of other kinds", rt.n_units, sim.n_units);
    goto done;
  }
  canonical(&rt, rc_canon);
  canonical(&sim, sim_canon);
  for (int r = 0; r < g->dp * g->pp * g->tp; r++) {
    if (rt.count[r] != sim.count[r]) {
      snprintf(why, size, "rank %d: %d units run, %d simulated", r, rt.count[r], sim.count[r]);
      goto done;
    }
    for (int i = 0; i < rt.count[r]; i++) {
      const nd_unit *a = &rt.units[rt.first[r] + i], *b = &sim.units[sim.first[r] + i];
      if (a->kind != b->kind || rc_canon[a->id] != sim_canon[b->id]) {
        snprintf(why, size, "rank %d unit %d: run %s worker %d (place %d), simulated %s worker %d (place %d)", r, i,
                 nd_device_name(a->kind), a->id, rc_canon[a->id], nd_device_name(b->kind), b->id, sim_canon[b->id]);
        goto done;
      }
    }
  }
  const int *home;
  const uint32_t *workers;
  int words;
  nd_exec_placement(ex, 0, &home, &workers, &words);
  for (int32_t i = 0; i < g->n_tasks; i++) {
    int h_rt = home && home[i] >= 0 ? rc_canon[home[i]] : -1, h_sim = s.home[i] >= 0 ? sim_canon[s.home[i]] : -1;
    uint64_t w_rt = canon_mask(workers ? &workers[(size_t)i * (size_t)words] : NULL, words, rc_canon);
    uint32_t sim_words[2] = {(uint32_t)s.allowed[i], (uint32_t)(s.allowed[i] >> 32)};
    uint64_t w_sim = canon_mask(sim_words, 2, sim_canon);
    if (h_rt != h_sim || w_rt != w_sim) {
      snprintf(why, size, "task %d (%s): run home %d allowed %#llx, simulated home %d allowed %#llx", i,
               nd_task_kind_name(g->tasks[i].kind), h_rt, (unsigned long long)w_rt, h_sim, (unsigned long long)w_sim);
      goto done;
    }
  }
  bad = 0;
done:
  nd_sim_schedule_free(&s);
  nd_edges_free(&e);
  nd_rank_map_free(&rt);
  nd_rank_map_free(&sim);
  nd_exec_free(ex);
  return bad;
}

/* Layouts the planner never ranks, with more stages than workers: a
 * replica's stages share its workers in V order (placement/placement.c),
 * where an even split would give consecutive stages one worker. */
static int shared_stages(const nd_planning *p, nd_candidate *extra) {
  int n = 0, m = p->global_batch % 4 ? 1 : 4;
  static const char *const scheds[] = {"ndws", "1f1b"};
  for (int k = 0; k < 2; k++)
    for (int pl = 0; pl < 3; pl++)
      extra[n++] = (nd_candidate){.dp = 1,
                                  .cp = 1,
                                  .tp = 1,
                                  .pp = 3,
                                  .micro_batches = m,
                                  .micro_batch_size = (int)(p->global_batch / m),
                                  .slots = m < 3 ? m : 3,
                                  .placement = (enum nd_placement)pl};
  for (int i = 0; i < n; i++) snprintf(extra[i].scheduler, sizeof extra[i].scheduler, "%s", scheds[i / 3]);
  return n;
}

/* Every layout the planner ranks for `model` with `machine`'s settings (and, with shared, shared_stages'), run
 * against simulated; n gets how many were compared. 0: all equal; -1: no OpenCL device to start (why says so). */
static int every_layout(const char *const *model, const char *const *machine, int shared, int *n, char *why,
                        size_t size) {
  nd_config *base = tiny_config(model);
  nd_error err = {0};
  nd_planning p;
  nd_candidate extra[6];
  *n = 0;
  int set = 0;
  for (const char *const *kv = machine; base && *kv && !set; kv++) set = nd_config_set_assignment(base, *kv, &err);
  if (!base || set || nd_planning_run(&p, base, NULL, 1, &err)) {
    snprintf(why, size, "plan --auto: %.200s", err.msg);
    nd_config_free(base);
    return 1;
  }
  int bad = 0, n_extra = shared ? shared_stages(&p, extra) : 0;
  /* StarPU starts once per policy: its scheduler is chosen at start */
  static const char *const policies[] = {"ndws", "1f1b", "zbh1", "zbh2", "gpipe"};
  for (size_t k = 0; k < sizeof policies / sizeof *policies && !bad; k++) {
    int started = 0;
    for (int i = 0; i < p.n_plans + n_extra && !bad; i++) {
      const nd_candidate *c = i < p.n_plans ? &p.plans[i] : &extra[i - p.n_plans];
      if (strcmp(c->scheduler, policies[k])) continue;
      nd_config cfg = *base;
      char sets[ND_PLAN_MAX_SETS][64];
      int ns = nd_candidate_sets(c, sets);
      for (int j = 0; j < ns && !bad; j++) bad = nd_config_set_assignment(&cfg, sets[j], &err);
      nd_graph *g = NULL;
      if (!bad) bad = nd_config_validate(&cfg, &err) || nd_graph_build(&g, &cfg, 0, &err);
      if (bad) {
        snprintf(why, size, "layout %d: %.200s", i, err.msg);
        nd_graph_free(g);
        break;
      }
      if (!started && (nd_runtime_start(&cfg, &err) || cfg.runtime.devices[ND_BACKEND_OPENCL] > nd_runtime_devices(ND_BACKEND_OPENCL))) {
        /* no device: PoCL missing here, not a placement that differs */
        int none = cfg.runtime.devices[ND_BACKEND_OPENCL] > 0;
        if (!err.msg[0]) nd_runtime_stop();
        snprintf(why, size, "%.200s", err.msg[0] ? err.msg : "no OpenCL device started");
        nd_graph_free(g);
        nd_planning_free(&p);
        nd_config_free(base);
        return none ? -1 : 1;
      }
      started = 1;
      char what[300];
      bad = compare(g, &cfg, &p, c, what, sizeof what);
      if (bad)
        snprintf(why, size, "dp %d tp %d pp %d, %d micro-batches, %s, %s: %s", c->dp, c->tp, c->pp, c->micro_batches,
                 c->scheduler, sets[7], what);
      *n += !bad;
      nd_graph_free(g);
    }
    if (started) nd_runtime_stop();
  }
  nd_planning_free(&p);
  nd_config_free(base);
  return bad;
}

/* The 8-GPU topology: the simulator's ranks on the GPUs `ndgraph plan` places them on (scheduler/report.c's
 * units), for every layout the planner ranks there. */
static int gpu_topology(int *n, char *why, size_t size) {
  char xml[4096], set[4200], cal[4096];
  const char *src = getenv("ND_SRCDIR");
  snprintf(xml, sizeof xml, "%s/tests/topologies/gpu8-nvlink2x4.xml", src ? src : ".");
  snprintf(cal, sizeof cal, "%s/configs/calibration-8gpu.json", src ? src : ".");
  snprintf(set, sizeof set, "runtime.topology=%s", xml);
  nd_config *cfg = tiny_config((const char *const[]){set, NULL});
  nd_error err = {0};
  nd_planning p;
  hwloc_topology_t topo = NULL;
  nd_unit *units = NULL;
  int gpus = 0, bad = 1, n_units = 0;
  *n = 0;
  if (!cfg || nd_planning_run(&p, cfg, cal, 1, &err)) {
    snprintf(why, size, "plan --auto: %.200s", err.msg);
    nd_config_free(cfg);
    return 1;
  }
  if (nd_topo_load(&topo, xml, &err) || (n_units = nd_plan_units(topo, cfg, &units, &gpus)) < 1) {
    snprintf(why, size, "plan's units: %.200s", err.msg);
    goto done;
  }
  for (int i = 0; i < p.n_plans; i++) {
    const nd_candidate *c = &p.plans[i];
    nd_rank_map plan, sim;
    nd_graph g = {.dp = c->dp, .pp = c->pp, .tp = c->tp};
    if (nd_place(units, n_units, c->dp, c->pp, c->tp, &plan)) goto done;
    if (nd_sim_rank_map(&p.machine, &g, &sim)) {
      nd_rank_map_free(&plan);
      goto done;
    }
    int same = plan.n_units == sim.n_units;
    for (int r = 0; r < plan.n_ranks && same; r++) {
      same = plan.count[r] == sim.count[r];
      for (int u = 0; u < plan.count[r] && same; u++) {
        const nd_unit *a = &plan.units[plan.first[r] + u], *b = &sim.units[sim.first[r] + u];
        same = a->kind == b->kind && a->obj && b->obj && a->obj->logical_index == b->obj->logical_index;
      }
    }
    nd_rank_map_free(&plan);
    nd_rank_map_free(&sim);
    if (!same) {
      snprintf(why, size, "dp %d tp %d pp %d: the ranks sit on other GPUs", c->dp, c->tp, c->pp);
      goto done;
    }
    (*n)++;
  }
  bad = 0;
done:
  free(units);
  if (topo) hwloc_topology_destroy(topo);
  nd_planning_free(&p);
  nd_config_free(cfg);
  return bad;
}

int main(void) {
  /* test_planner.sh's machines (one CPU worker, with and without a
   * device), and two CPU workers; on the tiny model's 3 layers, 3 stages
   * on 2 workers besides the planner's layouts */
  static const struct {
    const char *name;
    const char *const *model;
    int shared;
    const char *const sets[4];
  } machines[] = {
      {"one CPU worker", small, 0, {"runtime.workers=1", "runtime.opencl_devices=0", NULL}},
      {"two CPU workers", small, 0, {"runtime.workers=2", "runtime.opencl_devices=0", NULL}},
      {"one CPU worker and one OpenCL device", small, 0, {"runtime.workers=1", "runtime.opencl_devices=1", NULL}},
      {"one CPU worker and one OpenCL device, runtime.deterministic false",
       small,
       0,
       {"runtime.workers=1", "runtime.opencl_devices=1", "runtime.deterministic=false", NULL}},
      {"3 layers, 3 stages sharing two CPU workers", NULL, 1, {"runtime.workers=2", "runtime.opencl_devices=0", NULL}},
      {"3 layers, 3 stages sharing a CPU worker and an OpenCL device",
       NULL,
       1,
       {"runtime.workers=1", "runtime.opencl_devices=1", NULL}},
  };
  for (size_t i = 0; i < sizeof machines / sizeof *machines; i++) {
    char why[600] = "";
    int n = 0;
    if (strstr(machines[i].name, "OpenCL") && !nd_runtime_has_backend(ND_BACKEND_OPENCL)) {
      skip("%s: built without OpenCL", machines[i].name);
      continue;
    }
    int rc = every_layout(machines[i].model, machines[i].sets, machines[i].shared, &n, why, sizeof why);
    if (rc < 0) {
      skip("%s: %s", machines[i].name, why);
      continue;
    }
    ok(rc == 0 && n > 0, "%s: the simulator places all %d layouts as run does (plan --auto's%s)%s%s", machines[i].name,
       n, machines[i].shared ? " and 6 with more stages than workers" : "", why[0] ? ": " : "", why);
  }
  char why[600] = "";
  int n = 0, rc = gpu_topology(&n, why, sizeof why);
  ok(rc == 0 && n > 0, "8-GPU topology: the simulator's ranks sit on the GPUs plan reports, in all %d layouts%s%s", n,
     why[0] ? ": " : "", why);
  return done_testing();
}
