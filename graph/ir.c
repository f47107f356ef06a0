/* Storage of the IR: tensors, tasks and accesses in growable arrays, and the
 * dependencies that StarPU's sequential consistency derives from them. */
#include "graph/ir.h"
#include "graph/builder.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

const char *nd_phase_name(enum nd_phase phase) {
  static const char *const names[] = {"F", "B", "W", "collective", "optimizer"};
  return (unsigned)phase < ND_PHASE_COUNT ? names[phase] : "unknown";
}

const char *nd_tensor_kind_name(enum nd_tensor_kind kind) {
  static const char *const names[] = {"parameter",       "gradient",           "optimizer_state", "activation",
                                      "input",           "statistic",          "parameter_copy",  "gathered",
                                      "gradient_buffer", "data_parallel_chunk"};
  return (unsigned)kind < ND_TENSOR_KIND_COUNT ? names[kind] : "unknown";
}

int nd_rank_index(const nd_graph *g, nd_rank r) { return (r.dp * g->pp + r.pp) * g->tp + r.tp; }

int nd_process_units(const nd_graph *g) { return g->dp * g->pp * (g->split_tp ? g->tp : 1); }

int nd_process_unit_of(const nd_graph *g, nd_rank r) {
  int pair = r.dp * g->pp + r.pp;
  return g->split_tp ? pair * g->tp + r.tp : pair;
}

int nd_process_of(const nd_graph *g, nd_rank r, int procs) {
  return (int)((int64_t)nd_process_unit_of(g, r) * procs / nd_process_units(g));
}

int nd_dp_spans(const nd_graph *g, int st, int t, int procs) {
  for (int d = 1; d < g->dp; d++)
    if (nd_process_of(g, (nd_rank){d, st, t}, procs) != nd_process_of(g, (nd_rank){0, st, t}, procs)) return 1;
  return 0;
}

int nd_act_slot(const nd_graph *g, int s, enum nd_act_pool pool, int mb) {
  int depth = g->pool_slots[s][pool];
  if (pool == ND_POOL_FWD_W && g->fwd_w_tail[s] && mb == g->micro_batches - 1) return depth;
  return mb % depth;
}

/* Doubles *cap until it holds need elements of size elem. */
static int grow(void **arr, int32_t *cap, int64_t need, size_t elem) {
  if (need <= *cap) return 0;
  int64_t ncap = *cap ? *cap : 256;
  while (ncap < need) ncap *= 2;
  if (ncap > INT32_MAX) return ND_ENOMEM;
  void *p = realloc(*arr, (size_t)ncap * elem);
  if (!p) return ND_ENOMEM;
  *arr = p;
  *cap = (int32_t)ncap;
  return 0;
}

int32_t nd__graph_add_tensor(nd_graph *g, const nd_tensor *t) {
  if (grow((void **)&g->tensors, &g->cap_tensors, (int64_t)g->n_tensors + 1, sizeof *t)) return -1;
  g->tensors[g->n_tensors] = *t;
  return g->n_tensors++;
}

int32_t nd__graph_add_task(nd_graph *g, const nd_task *t, const nd_access *acc, int n) {
  if (grow((void **)&g->tasks, &g->cap_tasks, (int64_t)g->n_tasks + 1, sizeof *t) ||
      grow((void **)&g->access, &g->cap_access, (int64_t)g->n_access + n, sizeof *acc))
    return -1;
  nd_task *dst = &g->tasks[g->n_tasks];
  *dst = *t;
  dst->first_access = g->n_access;
  dst->n_access = n;
  dst->bytes = 0;
  for (int i = 0; i < n; i++) {
    g->access[g->n_access++] = acc[i];
    dst->bytes += g->tensors[acc[i].tensor].bytes;
  }
  return g->n_tasks++;
}

void nd_graph_free(nd_graph *g) {
  if (!g) return;
  free(g->loss);
  free(g->tensors);
  free(g->tasks);
  free(g->access);
  free(g);
}

/* ---------------------------------------------------------------- edges */

typedef struct {
  int32_t *v;
  int64_t n, cap;
} vec32;

static int vec_push(vec32 *v, int32_t x) {
  if (v->n == v->cap) {
    int64_t ncap = v->cap ? v->cap * 2 : 16;
    int32_t *p = realloc(v->v, (size_t)ncap * sizeof *p);
    if (!p) return ND_ENOMEM;
    v->v = p;
    v->cap = ncap;
  }
  v->v[v->n++] = x;
  return 0;
}

/* Per tensor: the last writer and the readers since it. */
typedef struct {
  int32_t writer;
  vec32 readers;
} tensor_state;

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

int nd_graph_edges(const nd_graph *g, nd_edges *out) { return nd_graph_edges_through(g, NULL, out); }

int nd_graph_edges_through(const nd_graph *g, const uint8_t *through, nd_edges *out) {
  int rc = ND_ENOMEM;
  memset(out, 0, sizeof *out);
  tensor_state *ts = calloc((size_t)g->n_tensors, sizeof *ts);
  vec32 pred = {0}, local = {0};
  int32_t *pred_off = calloc((size_t)g->n_tasks + 1, sizeof *pred_off);
  if (!ts || !pred_off) goto cleanup;
  for (int32_t i = 0; i < g->n_tensors; i++) ts[i].writer = -1;

  for (int32_t t = 0; t < g->n_tasks; t++) {
    const nd_task *task = &g->tasks[t];
    const nd_access *acc = nd_task_access(g, task);
    local.n = 0;
    for (int a = 0; a < task->n_access; a++) {
      tensor_state *s = &ts[acc[a].tensor];
      if (through && !through[acc[a].tensor]) continue;
      if (s->writer >= 0 && vec_push(&local, s->writer)) goto cleanup;
      if (acc[a].mode & ND_ACCESS_W)
        for (int64_t r = 0; r < s->readers.n; r++)
          if (s->readers.v[r] != t && vec_push(&local, s->readers.v[r])) goto cleanup;
    }
    /* dedupe this task's predecessors */
    if (local.n > 1) qsort(local.v, (size_t)local.n, sizeof *local.v, cmp_i32); /* v is NULL while empty */
    pred_off[t] = (int32_t)pred.n;
    for (int64_t k = 0; k < local.n; k++)
      if ((k == 0 || local.v[k] != local.v[k - 1]) && local.v[k] != t && vec_push(&pred, local.v[k])) goto cleanup;
    /* then update the tensors' states */
    for (int a = 0; a < task->n_access; a++) {
      tensor_state *s = &ts[acc[a].tensor];
      if (through && !through[acc[a].tensor]) continue;
      if (acc[a].mode & ND_ACCESS_W) {
        s->writer = t;
        s->readers.n = 0;
      } else if (vec_push(&s->readers, t)) {
        goto cleanup;
      }
    }
  }
  pred_off[g->n_tasks] = (int32_t)pred.n;
  rc = nd_edges_from_preds(out, g->n_tasks, pred_off, pred.v);
  pred_off = NULL;
  pred.v = NULL;

cleanup:
  if (ts)
    for (int32_t i = 0; i < g->n_tensors; i++) free(ts[i].readers.v);
  free(ts);
  free(local.v);
  free(pred.v);
  free(pred_off);
  return rc;
}

int nd_edges_from_preds(nd_edges *out, int32_t n_tasks, int32_t *pred_off, int32_t *pred) {
  int32_t n_edges = pred_off[n_tasks];
  int32_t *succ_off = calloc((size_t)n_tasks + 1, sizeof *succ_off);
  int32_t *succ = malloc((size_t)(n_edges ? n_edges : 1) * sizeof *succ);
  int32_t *fill = calloc((size_t)n_tasks + 1, sizeof *fill);
  if (!pred) pred = malloc(sizeof *pred); /* no edge: a vector never grown */
  memset(out, 0, sizeof *out);
  if (!succ_off || !succ || !fill || !pred) {
    free(succ_off), free(succ), free(fill), free(pred_off), free(pred);
    return ND_ENOMEM;
  }
  /* successors: the transpose */
  for (int32_t e = 0; e < n_edges; e++) succ_off[pred[e] + 1]++;
  for (int32_t t = 0; t < n_tasks; t++) succ_off[t + 1] += succ_off[t];
  for (int32_t t = 0; t < n_tasks; t++)
    for (int32_t e = pred_off[t]; e < pred_off[t + 1]; e++) {
      int32_t p = pred[e];
      succ[succ_off[p] + fill[p]++] = t;
    }
  free(fill);
  *out = (nd_edges){pred_off, pred, succ_off, succ, n_edges};
  return 0;
}

void nd_edges_free(nd_edges *e) {
  free(e->pred_off);
  free(e->pred);
  free(e->succ_off);
  free(e->succ);
  memset(e, 0, sizeof *e);
}
