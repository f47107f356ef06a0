/* tasks/forward.c: which outputs a task sends ahead when it ends. The graph
 * is the tiny model's, its stages homed on two memory nodes as on a mixed
 * node (stage 0 on node 0, the last stage on node 1, batches loaded on node
 * 0); the lists must be exactly the cross-node reads of the submission order,
 * found here by brute force, one copy per tensor and node. */
#include <stdint.h>
#include <stdlib.h>

#include "tasks/forward.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

typedef struct triple {
  int32_t w, x;
  unsigned node;
} triple;

static int triple_cmp(const void *pa, const void *pb) {
  const triple *a = pa, *b = pb;
  if (a->w != b->w) return a->w < b->w ? -1 : 1;
  if (a->x != b->x) return a->x < b->x ? -1 : 1;
  return a->node < b->node ? -1 : a->node > b->node;
}

/* The last task before j that writes tensor x, or -1. */
static int32_t last_writer(const nd_graph *g, int32_t j, int32_t x) {
  for (int32_t w = j - 1; w >= 0; w--) {
    const nd_access *acc = nd_task_access(g, &g->tasks[w]);
    for (int a = 0; a < g->tasks[w].n_access; a++)
      if (acc[a].tensor == x && (acc[a].mode & ND_ACCESS_W)) return w;
  }
  return -1;
}

/* Does producer w's list hold a copy of tensor x to node? */
static int listed(const nd__forward *f, int32_t w, int32_t x, unsigned node) {
  for (int32_t k = f->start[w]; k < f->start[w + 1]; k++)
    if ((intptr_t)f->item[k].handle == x + 1 && f->item[k].node == node) return 1;
  return 0;
}

static void check(const char *what, const char *const *ov) {
  nd_config *cfg = tiny_config(ov);
  nd_graph *g = NULL;
  nd_error err = {0};
  if (!ok(cfg && nd_graph_build(&g, cfg, 0, &err) == 0, "%s: builds %s", what, err.msg)) goto done;
  int n = g->n_tasks;
  int *home = malloc((size_t)n * sizeof *home), *none = malloc((size_t)n * sizeof *none);
  int32_t *tensor = malloc((size_t)g->n_tensors * sizeof *tensor);
  starpu_data_handle_t *handle = malloc((size_t)g->n_tensors * sizeof *handle);
  unsigned node_of[STARPU_NMAXWORKERS] = {0}, one_node[STARPU_NMAXWORKERS] = {0};
  /* worker = stage index; the last stage's worker is on node 1 */
  node_of[g->pp - 1] = 1;
  for (int32_t i = 0; i < n; i++) {
    home[i] = g->tasks[i].kind == ND_TASK_LOAD_BATCH ? 0 : g->tasks[i].rank.pp;
    none[i] = -1;
  }
  for (int32_t t = 0; t < g->n_tensors; t++) tensor[t] = t, handle[t] = (starpu_data_handle_t)(intptr_t)(t + 1);
  nd__forward f = {0}, same = {0}, homeless = {0};
  int rc = nd__forward_build(&f, g, home, node_of, tensor, handle);
  rc |= nd__forward_build(&same, g, home, one_node, tensor, handle);
  rc |= nd__forward_build(&homeless, g, none, node_of, tensor, handle);
  if (!ok(rc == 0, "%s: the lists are built", what)) goto free_all;

  /* every cross-node read is listed at its producer, and nothing else */
  int expected = 0, missing = 0, targets = 0, distinct = 0;
  triple *want = malloc((size_t)(g->n_access ? g->n_access : 1) * sizeof *want);
  for (int32_t j = 0; j < n; j++) {
    const nd_access *acc = nd_task_access(g, &g->tasks[j]);
    for (int a = 0; a < g->tasks[j].n_access; a++) {
      int32_t x = acc[a].tensor, w = (acc[a].mode & ND_ACCESS_R) ? last_writer(g, j, x) : -1;
      if (w < 0 || node_of[home[w]] == node_of[home[j]]) continue;
      want[expected++] = (triple){w, x, node_of[home[j]]};
      missing += !listed(&f, w, x, node_of[home[j]]);
    }
  }
  qsort(want, (size_t)expected, sizeof *want, triple_cmp);
  for (int k = 0; k < expected; k++) distinct += k == 0 || triple_cmp(&want[k], &want[k - 1]) != 0;
  free(want);
  int listed_total = f.start[n], wrong_node = 0;
  for (int32_t w = 0; w < n; w++)
    for (int32_t k = f.start[w]; k < f.start[w + 1]; k++) {
      wrong_node += f.item[k].node == node_of[home[w]];
      for (int32_t k2 = f.start[w]; k2 < k; k2++)
        wrong_node += f.item[k2].handle == f.item[k].handle && f.item[k2].node == f.item[k].node; /* duplicates */
      if (g->tasks[w].kind == ND_TASK_LOAD_BATCH && g->tasks[w].rank.pp == g->pp - 1) targets++;
    }
  ok(expected > 0 && missing == 0, "%s: each of the %d cross-node reads has its copy at its producer", what, expected);
  ok(listed_total == distinct && wrong_node == 0,
     "%s: %d copies (one per tensor and node: %d), each to another node than its producer's, none twice", what,
     listed_total, distinct);
  ok(targets == g->micro_batches * g->tp, "%s: the last stage's targets go ahead once per micro-batch and shard (%d)",
     what, targets);
  ok(same.start[n] == 0 && homeless.start[n] == 0, "%s: one memory node, or no homes: nothing sent ahead", what);
free_all:
  nd__forward_free(&f);
  nd__forward_free(&same);
  nd__forward_free(&homeless);
  free(home);
  free(none);
  free(tensor);
  free(handle);
done:
  nd_graph_free(g);
  nd_config_free(cfg);
}

int main(void) {
  const char *pp2[] = {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=4",
                       "train.micro_batch_size=2", "parallelism.activation_slots=2", NULL};
  const char *pp2_tp2[] = {"parallelism.pipeline_parallel_size=2", "parallelism.tensor_parallel_size=2",
                           "parallelism.micro_batches=4",          "train.micro_batch_size=2",
                           "parallelism.activation_slots=2",       NULL};
  check("pp 2", pp2);
  check("pp 2, tp 2", pp2_tp2);
  return done_testing();
}
