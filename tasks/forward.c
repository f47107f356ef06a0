/* Sending a task's outputs ahead to the memory node of their next reader
 * when that reader lives on a device. */
#include "tasks/forward.h"

#include <stdlib.h>

#include "common/error.h"

typedef struct edge {
  int32_t task, tensor; /* the producer, and what it wrote */
  unsigned node;        /* where the next reader runs */
} edge;

static int edge_cmp(const void *pa, const void *pb) {
  const edge *a = pa, *b = pb;
  if (a->task != b->task) return a->task < b->task ? -1 : 1;
  if (a->tensor != b->tensor) return a->tensor < b->tensor ? -1 : 1;
  return a->node < b->node ? -1 : a->node > b->node;
}

/* One pass in the graph's order, which is StarPU's submission order: each
 * read is of the last write before it. */
static int cross_node_reads(const nd_graph *g, const int *home, const unsigned *node_of, edge **out, int32_t *n_out) {
  int32_t *writer = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *writer);
  edge *e = malloc((size_t)(g->n_access ? g->n_access : 1) * sizeof *e);
  if (!writer || !e) {
    free(writer);
    free(e);
    return ND_ENOMEM;
  }
  int32_t n = 0;
  for (int32_t x = 0; x < g->n_tensors; x++) writer[x] = -1;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    const nd_access *acc = nd_task_access(g, t);
    for (int a = 0; a < t->n_access; a++) {
      int32_t x = acc[a].tensor, w = writer[x];
      if (!(acc[a].mode & ND_ACCESS_R) || w < 0 || home[i] < 0 || home[w] < 0) continue;
      if (node_of[home[i]] != node_of[home[w]]) e[n++] = (edge){w, x, node_of[home[i]]};
    }
    for (int a = 0; a < t->n_access; a++)
      if (acc[a].mode & ND_ACCESS_W) writer[acc[a].tensor] = i;
  }
  free(writer);
  *out = e;
  *n_out = n;
  return 0;
}

int nd__forward_build(nd__forward *f, const nd_graph *g, const int *home, const unsigned *node_of,
                      const int32_t *tensor, const starpu_data_handle_t *handles) {
  edge *e = NULL;
  int32_t n = 0;
  f->start = calloc((size_t)g->n_tasks + 1, sizeof *f->start);
  int rc = f->start ? cross_node_reads(g, home, node_of, &e, &n) : ND_ENOMEM;
  if (!rc) qsort(e, (size_t)n, sizeof *e, edge_cmp);
  f->item = rc ? NULL : malloc((size_t)(n ? n : 1) * sizeof *f->item);
  if (!rc && !f->item) rc = ND_ENOMEM;
  int32_t kept = 0;
  for (int32_t k = 0; k < n && !rc; k++) {
    if (k && !edge_cmp(&e[k], &e[k - 1])) continue; /* several readers on one node: one copy */
    f->item[kept++] = (nd__forward_item){handles[tensor[e[k].tensor]], e[k].node};
    f->start[e[k].task + 1]++;
  }
  for (int32_t i = 0; i < g->n_tasks && !rc; i++) f->start[i + 1] += f->start[i];
  free(e);
  if (rc) nd__forward_free(f);
  return rc;
}

void nd__forward_free(nd__forward *f) {
  free(f->start);
  free(f->item);
  f->start = NULL;
  f->item = NULL;
}

void nd__forward_start(const nd__forward *f, int32_t i) {
  if (!f->start) return;
  for (int32_t k = f->start[i]; k < f->start[i + 1]; k++)
    starpu_data_prefetch_on_node(f->item[k].handle, f->item[k].node, 1);
}
