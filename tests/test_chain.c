/* Chains (tasks/chain.h): which tasks run as one StarPU task. Every task is
 * in exactly one chain; a chain's tasks follow each other in the graph's
 * order and are of one rank, micro-batch, layer and phase (F, B, W or the
 * optimizer; W only without a fixed order), none a collective, all of one
 * class; two neighbours that could join are in one chain; on the
 * benchmark's layout the chains cut the StarPU tasks by more than half, each
 * rank's AdamW tasks of a layer are one, and so are its weight gradients of
 * a layer and micro-batch, with tensor parallelism too. With a fixed order, a chain's tasks are
 * consecutive in their worker's sequence, and the renumbered sequences count
 * each chain once, in the same order; the textbook orders keep each F, B and
 * optimizer chain whole, so they get the chains `ndws` gets but W's. */
#include <stdlib.h>
#include <string.h>

#include "graph/priority.h"
#include "tasks/chain.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

static int joinable(const nd_task *a, const nd_task *b, int fixed) {
  int phase_ok = a->phase == ND_PHASE_F || a->phase == ND_PHASE_B || a->phase == ND_PHASE_OPTIMIZER ||
                 (a->phase == ND_PHASE_W && !fixed);
  return a->group == ND_GROUP_NONE && b->group == ND_GROUP_NONE && phase_ok && a->phase == b->phase &&
         a->micro_batch == b->micro_batch && a->layer == b->layer && a->rank.dp == b->rank.dp &&
         a->rank.pp == b->rank.pp && a->rank.tp == b->rank.tp;
}

/* The chains of len are well formed and maximal; returns how many StarPU tasks they make. */
static int32_t check_chains(const nd_graph *g, const int32_t *len, int fixed, const char *what) {
  int covered = 1, same = 1, maximal = 1;
  int32_t submitted = 0, longest = 0;
  for (int32_t i = 0; i < g->n_tasks;) {
    if (len[i] < 1 || i + len[i] > g->n_tasks) {
      covered = 0;
      break;
    }
    for (int32_t k = i + 1; k < i + len[i]; k++) {
      covered &= len[k] == 0;
      same &= joinable(&g->tasks[i], &g->tasks[k], fixed);
    }
    int32_t next = i + len[i];
    /* position-free chains end only where the next task cannot join */
    if (next < g->n_tasks) maximal &= !joinable(&g->tasks[i], &g->tasks[next], fixed);
    if (len[i] > longest) longest = len[i];
    submitted++;
    i = next;
  }
  ok(covered, "%s: every task in exactly one chain", what);
  ok(same, "%s: a chain's tasks are of one rank, micro-batch, layer and phase (F, B, %soptimizer), no collective",
     what, fixed ? "" : "W, ");
  ok(maximal, "%s: neighbours that can join are in one chain", what);
  diag("%s: %d tasks as %d StarPU tasks, the longest chain %d", what, g->n_tasks, submitted, longest);
  return submitted;
}

static nd_graph *build(const char *const *ov) {
  nd_config *cfg = tiny_config(ov);
  nd_graph *g = NULL;
  nd_error err = {0};
  if (cfg && nd_graph_build(&g, cfg, 0, &err)) diag("graph: %s", err.msg), g = NULL;
  nd_config_free(cfg);
  return g;
}

/* Under a fixed order (home = stage), chains follow it and the renumbered positions count each once. */
static void check_fixed(const nd_graph *g, enum nd_fixed_schedule kind, const char *name) {
  nd_edges e = {0};
  size_t n = (size_t)g->n_tasks;
  int32_t *order = malloc(n * sizeof *order), *len = malloc(n * sizeof *len);
  int *home = malloc(n * sizeof *home), *pos = malloc(n * sizeof *pos), *before = malloc(n * sizeof *before);
  int next[ND_MAX_STAGES] = {0};
  if (!ok(order && len && home && pos && before && nd_graph_edges(g, &e) == 0 &&
              nd_fixed_order(g, &e, kind, order) == 0,
          "%s: order computed", name))
    goto done;
  for (int32_t k = 0; k < g->n_tasks; k++) {
    int32_t i = order[k];
    home[i] = g->tasks[i].rank.pp;
    pos[i] = -next[home[i]]++;
  }
  memcpy(before, pos, n * sizeof *pos);
  if (!ok(nd__chain_plan(g, home, pos, 1, NULL, len) == 0, "%s: chains planned", name)) goto done;
  int consecutive = 1, dense = 1, kept_order = 1;
  for (int32_t i = 0; i < g->n_tasks; i++)
    for (int32_t k = i + 1; len[i] > 1 && k < i + len[i]; k++)
      consecutive &= home[k] == home[i] && before[k] == before[i] - (k - i);
  ok(consecutive, "%s: a chain's tasks follow each other in their worker's sequence", name);
  /* per worker, the positions of chains and lone tasks are 0, 1, 2, ... in the old order */
  for (int w = 0; w < g->pp; w++) {
    int32_t count = 0;
    for (int32_t i = 0; i < g->n_tasks; i++) count += home[i] == w && len[i] > 0;
    char *seen = calloc((size_t)count + 1, 1);
    for (int32_t i = 0; seen && i < g->n_tasks; i++) {
      if (home[i] != w || len[i] == 0) continue;
      int p = -pos[i];
      if (p < 0 || p >= count || seen[p])
        dense = 0;
      else
        seen[p] = 1;
      for (int32_t j = 0; j < g->n_tasks; j++)
        if (home[j] == w && len[j] > 0 && (before[j] > before[i]) != (pos[j] > pos[i]) && j != i) kept_order = 0;
    }
    free(seen);
  }
  ok(dense && kept_order, "%s: each worker's sequence counts a chain once, in the same order", name);
  check_chains(g, len, 1, name);
  int w_alone = 1;
  for (int32_t i = 0; i < g->n_tasks; i++) w_alone &= g->tasks[i].phase != ND_PHASE_W || len[i] == 1;
  ok(w_alone, "%s: every W task alone (the order moves them one at a time)", name);
done:
  nd_edges_free(&e);
  free(order), free(len), free(home), free(pos), free(before);
}

int main(void) {
  /* the benchmark's layout (bench/schedule), on the tiny model's width */
  const char *bench[] = {"parallelism.pipeline_parallel_size=2",
                         "parallelism.micro_batches=8",
                         "parallelism.activation_slots=2",
                         "model.n_layer=4",
                         "train.micro_batch_size=4",
                         NULL};
  nd_graph *g = build(bench);
  if (ok(g != NULL, "benchmark layout builds")) {
    int32_t *len = malloc((size_t)g->n_tasks * sizeof *len);
    ok(len && nd__chain_plan(g, NULL, NULL, 0, NULL, len) == 0, "chains planned");
    int32_t submitted = len ? check_chains(g, len, 0, "pp=2, m=8") : g->n_tasks;
    ok(submitted * 2 < g->n_tasks, "pp=2, m=8: fewer than half as many StarPU tasks (%d of %d)", submitted, g->n_tasks);
    /* the optimizer step: one chain per rank and layer, every AdamW in one */
    int adamw = 0, led = 0, whole = 1;
    for (int32_t i = 0; len && i < g->n_tasks; i++) {
      if (g->tasks[i].kind != ND_TASK_ADAMW) continue;
      adamw++;
      if (len[i] == 0) continue;
      led++;
      for (int32_t k = i; k < i + len[i]; k++) whole &= g->tasks[k].kind == ND_TASK_ADAMW;
    }
    int stages = 2, layers_per_stage = 4 / 2; /* and each stage's embeddings or final norm, layer -1 */
    ok(adamw > 0 && whole && led == stages * (layers_per_stage + 1),
       "pp=2, m=8: %d AdamW tasks as %d chains, one per stage and layer (the embeddings and final norm as one)", adamw,
       led);
    /* the weight gradients: one chain per rank, micro-batch and layer */
    int w = 0, w_led = 0, w_whole = 1;
    for (int32_t i = 0; len && i < g->n_tasks; i++) {
      if (g->tasks[i].phase != ND_PHASE_W) continue;
      w++;
      if (len[i] == 0) continue;
      w_led++;
      for (int32_t k = i; k < i + len[i]; k++) w_whole &= g->tasks[k].phase == ND_PHASE_W;
    }
    int m = 8;
    ok(w > w_led && w_whole && w_led <= m * (4 + 2),
       "pp=2, m=8: %d W tasks as %d chains, at most one per micro-batch and layer (and embeddings and head)", w, w_led);
    /* classes: a task that a device cannot run ends the chain before it */
    uint8_t *cls = calloc((size_t)g->n_tasks, 1);
    int32_t *split = malloc((size_t)g->n_tasks * sizeof *split), cut = -1;
    for (int32_t i = 0; len && cls && i < g->n_tasks && cut < 0; i++)
      if (len[i] > 2) cut = i + 1;
    for (int32_t i = 0; cls && cut >= 0 && i < g->n_tasks; i++) cls[i] = i != cut;
    ok(cut >= 0 && split && nd__chain_plan(g, NULL, NULL, 0, cls, split) == 0 && split[cut - 1] == 1 &&
           split[cut] == 1 && (split[cut + 1] >= 1),
       "a member of another class runs alone, its neighbours' chains stop at it");
    free(cls), free(split);
    free(len);
    check_fixed(g, ND_FIXED_1F1B, "1f1b");
    check_fixed(g, ND_FIXED_ZBH1, "zbh1");
  }
  nd_graph_free(g);
  /* tensor parallelism: the chains stop at every all-reduce */
  const char *tp[] = {"parallelism.tensor_parallel_size=2", "parallelism.micro_batches=2", NULL};
  g = build(tp);
  if (ok(g != NULL, "tp=2 layout builds")) {
    int32_t *len = malloc((size_t)g->n_tasks * sizeof *len);
    if (ok(len && nd__chain_plan(g, NULL, NULL, 0, NULL, len) == 0, "tp=2: chains planned"))
      check_chains(g, len, 0, "tp=2");
    /* the builders interleave the tensor ranks' weight gradients between
     * all-reduces: still one chain per rank, micro-batch and layer */
    int w_led = 0, keys = 0;
    for (int32_t i = 0; len && i < g->n_tasks; i++) {
      const nd_task *t = &g->tasks[i];
      if (t->phase != ND_PHASE_W || t->group != ND_GROUP_NONE) continue;
      w_led += len[i] > 0;
      int seen = 0; /* an earlier W task of its rank, micro-batch and layer */
      for (int32_t j = 0; j < i && !seen; j++) {
        const nd_task *u = &g->tasks[j];
        seen = u->phase == ND_PHASE_W && u->group == ND_GROUP_NONE && u->micro_batch == t->micro_batch &&
               u->layer == t->layer && u->rank.dp == t->rank.dp && u->rank.pp == t->rank.pp && u->rank.tp == t->rank.tp;
      }
      keys += !seen;
    }
    ok(len && w_led == keys, "tp=2: %d W chains, one per rank, micro-batch and layer (%d)", w_led, keys);
    free(len);
  }
  nd_graph_free(g);
  return done_testing();
}
