/* Placement, restrictions and priorities of a graph's tasks. */
#include "scheduler/hints.h"

#include <starpu.h>
#include <stdlib.h>
#include <string.h>

#include "common/device.h"
#include "common/error.h"
#include "graph/priority.h"
#include "kernels/backend.h"
#include "scheduler/policies.h"

int nd_coll_gpu_units(const nd_graph *g, const nd_rank_map *pl, const nd_task *t, int *unit) {
  if (t->kind != ND_TASK_ALLREDUCE) return 0;
  const nd_access *acc = nd_task_access(g, t);
  for (int p = 0; p < t->a.coll.nparts; p++) {
    unit[p] = pl->first[nd_rank_index(g, g->tensors[acc[p].tensor].home)];
    if (pl->units[unit[p]].kind != nd_device_gpu_kind()) return 0;
    for (int q = 0; q < p; q++)
      if (pl->units[unit[q]].devid == pl->units[unit[p]].devid) return 0;
  }
  return 1;
}

/* Two GPUs of one NVLink group (the topology's NVLinkGroup info): their
 * peer copies do not cross PCIe. */
static int same_nvlink(const nd_unit *a, const nd_unit *b) {
  if (a->kind != nd_device_gpu_kind() || b->kind != nd_device_gpu_kind() || !a->obj || !b->obj) return 0;
  const char *ga = hwloc_obj_get_info_by_name(a->obj, "NVLinkGroup");
  const char *gb = hwloc_obj_get_info_by_name(b->obj, "NVLinkGroup");
  return ga && gb && strcmp(ga, gb) == 0;
}

int64_t nd_cross_node_bytes(const nd_graph *g, const nd_rank_map *pl, const nd_unit_check *can, int64_t *nvlink) {
  int64_t bytes = 0;
  if (nvlink) *nvlink = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    const nd_unit *to = &pl->units[nd_task_unit(g, pl, can, t, 1)];
    const nd_access *acc = nd_task_access(g, t);
    for (int a = 0; a < t->n_access; a++) {
      const nd_tensor *x = &g->tensors[acc[a].tensor];
      const nd_unit *from = &pl->units[pl->first[nd_rank_index(g, x->home)]];
      if (!(acc[a].mode & ND_ACCESS_R) || from->node == to->node) continue;
      bytes += x->bytes;
      if (nvlink && same_nvlink(from, to)) *nvlink += x->bytes;
    }
  }
  return bytes;
}

/* A device runs the same task slower or faster than a core: the upward ranks
 * weigh each task with the cost model of the unit it runs on. */
static const nd_cost_model *unit_cost(int kind) { return kind == ND_BACKEND_CPU ? &nd_cost_cpu : &nd_cost_opencl; }

/* Tasks that do the same work on the same kind of unit: one kind, FLOPs and
 * bytes (the sizes StarPU's history models key on). */
typedef struct work_class {
  int kind, unit;
  int64_t flops, bytes;
  int32_t task;
} work_class;

static int class_cmp(const void *pa, const void *pb) {
  const work_class *a = pa, *b = pb;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  if (a->unit != b->unit) return a->unit < b->unit ? -1 : 1;
  if (a->flops != b->flops) return a->flops < b->flops ? -1 : 1;
  if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
  return a->task < b->task ? -1 : a->task > b->task;
}

static int same_class(const work_class *a, const work_class *b) {
  return a->kind == b->kind && a->unit == b->unit && a->flops == b->flops && a->bytes == b->bytes;
}

static int seconds_cmp(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return a < b ? -1 : a > b;
}

/* The measured step is the first, cold one: its first micro-batches write
 * fresh buffers (page faults), and another process's burst lands on a few
 * tasks; both only slow tasks down. Each task gets the lower quartile of its
 * class's measured durations instead of its own (docs/scheduler.md, Priorities). */
static int typical_durations(const nd_graph *g, const int *unit_kind, const double *measured, double *seconds) {
  size_t n = (size_t)(g->n_tasks ? g->n_tasks : 1);
  work_class *c = malloc(n * sizeof *c);
  double *sample = malloc(n * sizeof *sample);
  int rc = c && sample ? 0 : ND_ENOMEM;
  for (int32_t i = 0; i < g->n_tasks && !rc; i++) {
    const nd_task *t = &g->tasks[i];
    c[i] = (work_class){t->kind, unit_kind[i], t->flops, t->bytes, i};
  }
  if (!rc) qsort(c, (size_t)g->n_tasks, sizeof *c, class_cmp);
  for (int32_t lo = 0, hi; lo < g->n_tasks && !rc; lo = hi) {
    int n_sample = 0;
    for (hi = lo; hi < g->n_tasks && same_class(&c[lo], &c[hi]); hi++)
      if (measured[c[hi].task] > 0) sample[n_sample++] = measured[c[hi].task];
    if (!n_sample) continue;
    qsort(sample, (size_t)n_sample, sizeof *sample, seconds_cmp);
    for (int32_t k = lo; k < hi; k++) seconds[c[k].task] = sample[(n_sample - 1) / 4];
  }
  free(c);
  free(sample);
  return rc;
}

static int priorities(const nd_graph *g, const nd_config *cfg, const nd_rank_map *pl, const nd_unit_check *can,
                      const nd_edges *e, const double *measured, const int *home, int lo, int hi, int *prio) {
  const char *policy = cfg->runtime.scheduler;
  if (!nd_sched_is_fixed(policy)) {
    size_t n = (size_t)(g->n_tasks ? g->n_tasks : 1);
    double *seconds = malloc(n * sizeof *seconds);
    int *unit_kind = malloc(n * sizeof *unit_kind);
    int rc = seconds && unit_kind ? 0 : ND_ENOMEM;
    for (int32_t i = 0; i < g->n_tasks && !rc; i++) {
      unit_kind[i] = pl->units[nd_task_unit(g, pl, can, &g->tasks[i], 1)].kind;
      seconds[i] = nd_task_seconds(&g->tasks[i], unit_cost(unit_kind[i]));
    }
    if (!rc && measured) rc = typical_durations(g, unit_kind, measured, seconds);
    if (!rc) rc = nd_priorities(g, e, seconds, cfg->runtime.priorities, lo, hi, prio);
    free(seconds);
    free(unit_kind);
    return rc;
  }
  /* the position of each task in its home worker's sequence */
  int32_t *order = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *order);
  if (!order) return ND_ENOMEM;
  int top = 0;
  for (int32_t i = 0; i < g->n_tasks; i++)
    if (home[i] > top) top = home[i];
  int *next = calloc((size_t)top + 1, sizeof *next); /* per worker: tasks placed so far */
  int rc = next ? nd_fixed_order(g, e, (enum nd_fixed_schedule)nd_fixed_schedule_of(policy), order) : ND_ENOMEM;
  for (int32_t k = 0; k < g->n_tasks && !rc; k++) {
    int w = home[order[k]];
    prio[order[k]] = -next[w >= 0 ? w : 0]++;
  }
  free(order);
  free(next);
  return rc;
}

int nd_hints_compute(const nd_graph *g, const nd_config *cfg, const nd_rank_map *pl, const nd_unit_check *can,
                     const double *measured, int lo, int hi, nd_hints *out) {
  memset(out, 0, sizeof *out);
  size_t n = (size_t)(g->n_tasks ? g->n_tasks : 1);
  const char *policy = cfg->runtime.scheduler;
  int fixed = nd_sched_is_fixed(policy), deterministic = cfg->runtime.deterministic;
  enum nd_placement mode = cfg->runtime.placement;
  int restrict_workers = nd_task_restricted(pl, fixed, mode, deterministic);
  out->priority = malloc(n * sizeof *out->priority);
  out->home = malloc(n * sizeof *out->home);
  out->mask_words = nd_rank_map_mask_words(pl);
  out->workers = restrict_workers ? calloc(n * (size_t)out->mask_words, sizeof *out->workers) : NULL;
  nd_edges e = {0};
  int rc = !out->priority || !out->home || (restrict_workers && !out->workers) ? ND_ENOMEM : 0;
  if (rc || (rc = nd_graph_edges(g, &e))) goto cleanup;
  nd_task_homes(g, pl, can, fixed, mode, deterministic, out->home, out->workers);
  rc = priorities(g, cfg, pl, can, &e, measured, out->home, lo, hi, out->priority);
cleanup:
  nd_edges_free(&e);
  if (rc) nd_hints_free(out);
  return rc;
}

void nd_hints_free(nd_hints *h) {
  free(h->priority);
  free(h->workers);
  free(h->home);
  memset(h, 0, sizeof *h);
}

int nd_runtime_units(nd_unit *units, int max) {
  int n = 0;
  for (unsigned w = 0; w < starpu_worker_get_count() && n < max; w++)
    units[n++] = (nd_unit){starpu_worker_get_hwloc_obj((int)w), (int)w, nd__worker_backend((int)w),
                           (int)starpu_worker_get_memory_node(w), starpu_worker_get_devid((int)w)};
  return n;
}
