/* The textbook pipeline orders (graph/priority.c) that the fixed policies
 * run: each is a topological order of the whole graph, and each stage sees
 * its schedule's order of micro-batch units. 1F1B keeps a micro-batch's W
 * beside its B; ZB-H1 lets the last stage postpone W behind the next forward;
 * ZB-H2 runs more warm-up forwards on the first stage. */
#include <stdlib.h>

#include "graph/priority.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

/* Position in `order` of the first task of stage st, micro-batch mb, phase ph. */
static int32_t first_at(const nd_graph *g, const int32_t *order, int st, int mb, enum nd_phase ph) {
  for (int32_t k = 0; k < g->n_tasks; k++) {
    const nd_task *t = &g->tasks[order[k]];
    if (t->rank.pp == st && t->micro_batch == mb && t->phase == ph) return k;
  }
  return -1;
}

int main(void) {
  const char *ov[] = {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=8",
                      "parallelism.activation_slots=3", "train.micro_batch_size=1", NULL};
  nd_config *cfg = tiny_config(ov);
  nd_graph *g = NULL;
  nd_edges e = {0};
  nd_error err = {0};
  if (!ok(cfg && nd_graph_build(&g, cfg, 0, &err) == 0 && nd_graph_edges(g, &e) == 0, "graph builds %s", err.msg))
    goto done;
  static const char *const names[] = {"gpipe", "1f1b", "zbh1", "zbh2"};
  int32_t *order = malloc((size_t)g->n_tasks * sizeof *order), *pos = malloc((size_t)g->n_tasks * sizeof *pos);
  for (int kind = 0; kind < 4; kind++) {
    ok(nd_fixed_schedule_of(names[kind]) == kind, "%s is a fixed schedule", names[kind]);
    if (!ok(nd_fixed_order(g, &e, (enum nd_fixed_schedule)kind, order) == 0, "%s: order computed", names[kind]))
      continue;
    for (int32_t k = 0; k < g->n_tasks; k++) pos[k] = -1;
    int perm = 1, topo = 1;
    for (int32_t k = 0; k < g->n_tasks; k++) {
      if (order[k] < 0 || order[k] >= g->n_tasks || pos[order[k]] >= 0)
        perm = 0;
      else
        pos[order[k]] = k;
    }
    for (int32_t i = 0; i < g->n_tasks && perm; i++)
      for (int32_t k = e.pred_off[i]; k < e.pred_off[i + 1]; k++) topo &= pos[e.pred[k]] < pos[i];
    ok(perm && topo, "%s: every task once, each after its predecessors", names[kind]);
    int last = g->pp - 1;
    int32_t w0 = first_at(g, order, last, 0, ND_PHASE_W), f1 = first_at(g, order, last, 1, ND_PHASE_F);
    int32_t f2 = first_at(g, order, 0, 2, ND_PHASE_F), b0 = first_at(g, order, 0, 0, ND_PHASE_B);
    if (kind == 1) ok(w0 < f1, "1f1b: the last stage runs W of micro-batch 0 before the forward of 1");
    if (kind == 2) ok(w0 > f1, "zbh1: the last stage postpones W of micro-batch 0 behind the forward of 1");
    if (kind == 2) ok(f2 > b0, "zbh1: the first stage keeps 1F1B's two micro-batches in flight");
    if (kind == 3) ok(f2 < b0, "zbh2: the first stage runs a third forward before its first B");
  }
  free(order);
  free(pos);
done:
  nd_edges_free(&e);
  nd_graph_free(g);
  nd_config_free(cfg);
  return done_testing();
}
