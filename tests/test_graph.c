/* The IR of a training step for every data, tensor and pipeline size in
 * {1, 2, 4} and micro-batches in {1, 3, 8}: acyclic, every read has a producer
 * (or is state), collectives span exactly their group, task counts and FLOPs
 * equal closed-form counts of the model. */
#include <stdlib.h>
#include <string.h>

#include "graph/ir.h"
#include "graph/kinds.h"
#include "graph/plan.h"
#include "tests/tap.h"

enum { L = 4, C = 64, NH = 4, T = 16, V = 256, B = 2 };

static nd_config *config(int dp, int tp, int pp, int mb) {
  nd_config *cfg;
  nd_error err;
  char kv[16][64];
  int n = 0;
  snprintf(kv[n++], 64, "model.n_layer=%d", L);
  snprintf(kv[n++], 64, "model.n_embd=%d", C);
  snprintf(kv[n++], 64, "model.n_head=%d", NH);
  snprintf(kv[n++], 64, "model.seq_len=%d", T);
  snprintf(kv[n++], 64, "model.vocab_size=%d", V);
  snprintf(kv[n++], 64, "train.micro_batch_size=%d", B);
  snprintf(kv[n++], 64, "parallelism.data_parallel_size=%d", dp);
  snprintf(kv[n++], 64, "parallelism.tensor_parallel_size=%d", tp);
  snprintf(kv[n++], 64, "parallelism.pipeline_parallel_size=%d", pp);
  snprintf(kv[n++], 64, "parallelism.micro_batches=%d", mb);
  snprintf(kv[n++], 64, "parallelism.activation_slots=2");
  if (nd_config_new(&cfg)) return NULL;
  for (int i = 0; i < n; i++)
    if (nd_config_set_assignment(cfg, kv[i], &err)) {
      diag("%s", err.msg);
      nd_config_free(cfg);
      return NULL;
    }
  return cfg;
}

/* Kahn's algorithm over the derived edges: every task is reached. */
static int acyclic(const nd_graph *g, const nd_edges *e) {
  int32_t *indeg = calloc((size_t)g->n_tasks, sizeof *indeg), *queue = malloc((size_t)g->n_tasks * sizeof *queue);
  int32_t head = 0, tail = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) indeg[i] = e->pred_off[i + 1] - e->pred_off[i];
  for (int32_t i = 0; i < g->n_tasks; i++)
    if (!indeg[i]) queue[tail++] = i;
  while (head < tail) {
    int32_t i = queue[head++];
    for (int32_t k = e->succ_off[i]; k < e->succ_off[i + 1]; k++)
      if (--indeg[e->succ[k]] == 0) queue[tail++] = e->succ[k];
  }
  free(indeg);
  free(queue);
  return tail == g->n_tasks;
}

/* Reads of activations, inputs, gradients and statistics come after a write in
 * the same step; parameters and optimizer states carry over from the last step. */
static int32_t first_unproduced_read(const nd_graph *g) {
  char *written = calloc((size_t)g->n_tensors, 1);
  int32_t bad = -1;
  for (int32_t i = 0; i < g->n_tasks && bad < 0; i++) {
    const nd_task *t = &g->tasks[i];
    const nd_access *acc = nd_task_access(g, t);
    for (int a = 0; a < t->n_access; a++) {
      const nd_tensor *x = &g->tensors[acc[a].tensor];
      int state = x->kind == ND_TENSOR_PARAM || x->kind == ND_TENSOR_OPTSTATE;
      if ((acc[a].mode & ND_ACCESS_R) && !state && !written[acc[a].tensor]) bad = i;
    }
    for (int a = 0; a < t->n_access; a++)
      if (acc[a].mode & ND_ACCESS_W) written[acc[a].tensor] = 1;
  }
  free(written);
  return bad;
}

static int same(nd_rank a, nd_rank b) { return a.dp == b.dp && a.pp == b.pp && a.tp == b.tp; }

/* Does rank r belong to the group of collective t? */
static int in_group(const nd_graph *g, const nd_task *t, nd_rank r) {
  nd_rank h = t->rank;
  switch (t->group) {
  case ND_GROUP_TP:
    return r.dp == h.dp && r.pp == h.pp;
  case ND_GROUP_DP:
    return r.pp == h.pp && r.tp == h.tp;
  case ND_GROUP_PP_NEXT:
    return r.dp == h.dp && r.tp == h.tp && (r.pp == h.pp || r.pp == h.pp + 1);
  case ND_GROUP_PP_PREV:
    return r.dp == h.dp && r.tp == h.tp && (r.pp == h.pp || r.pp == h.pp - 1);
  case ND_GROUP_TIED:
    return r.dp == h.dp && r.tp == h.tp && (r.pp == 0 || r.pp == g->pp - 1);
  case ND_GROUP_ALL:
    return 1;
  case ND_GROUP_NONE:
    return same(r, h);
  }
  return 0;
}

static int group_size(const nd_graph *g, enum nd_group group) {
  switch (group) {
  case ND_GROUP_TP:
    return g->tp;
  case ND_GROUP_DP:
    return g->dp;
  case ND_GROUP_PP_NEXT:
  case ND_GROUP_PP_PREV:
  case ND_GROUP_TIED:
    return 2;
  case ND_GROUP_ALL:
    return g->dp * g->pp * g->tp;
  case ND_GROUP_NONE:
    return 1;
  }
  return 0;
}

/* Every tensor a task touches lies in its group, and a collective touches every rank of it. */
static int32_t first_bad_group(const nd_graph *g) {
  int n = g->dp * g->pp * g->tp;
  char *seen = malloc((size_t)n);
  int32_t bad = -1;
  for (int32_t i = 0; i < g->n_tasks && bad < 0; i++) {
    const nd_task *t = &g->tasks[i];
    const nd_access *acc = nd_task_access(g, t);
    memset(seen, 0, (size_t)n);
    int distinct = 0;
    for (int a = 0; a < t->n_access; a++) {
      nd_rank r = g->tensors[acc[a].tensor].home;
      if (!in_group(g, t, r)) bad = i;
      int k = nd_rank_index(g, r);
      distinct += !seen[k];
      seen[k] = 1;
    }
    if (distinct != group_size(g, t->group)) bad = i;
  }
  free(seen);
  return bad;
}

/* Attention's forward and backward, and the ring's blocks: the model's FLOPs
 * are 4 hs a causal pair for the forward's two products and 8 hs for the
 * backward's four, plus 5 each for the softmax and its gradient; the total
 * also counts the scores the backward computes again (2 hs a pair). */
static void attention_flops(void) {
  static const enum nd_task_kind kinds[][2] = {{ND_TASK_ATTN_FWD, ND_TASK_ATTN_BWD},
                                               {ND_TASK_GQA_FWD, ND_TASK_GQA_BWD},
                                               {ND_TASK_RING_ATTN_FWD, ND_TASK_RING_ATTN_BWD},
                                               {ND_TASK_RING_GQA_FWD, ND_TASK_RING_GQA_BWD}};
  const int b = 3, t = 10, nh = 4, hs = 16;
  const int64_t pairs = (int64_t)b * nh * t * (t + 1) / 2;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    int64_t model = 0, total = 0;
    for (int k = 0; k < 2; k++) {
      nd_task task = {.kind = kinds[i][k], .a.attn = {b, t, nh, hs}};
      task.flops = nd_kind(task.kind)->flops(&task);
      model += nd_plan_model_flops(&task);
      total += task.flops;
    }
    ok(model == pairs * (12 * hs + 10) && total == pairs * (14 * hs + 10),
       "%s + %s, B %d T %d heads %d hs %d: model FLOPs %lld = pairs x (12 hs + 10) = %lld, total %lld = pairs x (14 "
       "hs + 10) = %lld",
       nd_kind(kinds[i][0])->name, nd_kind(kinds[i][1])->name, b, t, nh, hs, (long long)model,
       (long long)(pairs * (12 * hs + 10)), (long long)total, (long long)(pairs * (14 * hs + 10)));
  }
}

int main(void) {
  attention_flops();
  const int sizes[] = {1, 2, 4}, mbs[] = {1, 3, 8};
  const int64_t H = 4 * C, N = (int64_t)B * T, hs = C / NH;
  const int64_t n_params = (int64_t)V * C + (int64_t)T * C + (int64_t)L * (12 * C * C + 13 * C) + 2 * C;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 3; k++)
        for (int m = 0; m < 3; m++) {
          int D = sizes[i], Tp = sizes[j], P = sizes[k], M = mbs[m];
          char name[64];
          snprintf(name, sizeof name, "dp %d tp %d pp %d micro-batches %d", D, Tp, P, M);
          nd_config *cfg = config(D, Tp, P, M);
          nd_graph *g = NULL;
          nd_error err = {0};
          if (!ok(cfg && nd_graph_build(&g, cfg, 0, &err) == 0, "%s: builds %s", name, err.msg)) {
            nd_config_free(cfg);
            continue;
          }
          nd_edges e;
          nd_plan p;
          nd_graph_edges(g, &e);
          nd_plan_compute(g, &p);
          ok(acyclic(g, &e), "%s: acyclic", name);
          int32_t bad = first_unproduced_read(g);
          ok(bad < 0, "%s: every read has a producer or is state (first offender: task %d)", name, bad);
          bad = first_bad_group(g);
          ok(bad < 0, "%s: every task touches exactly the ranks of its group (first offender: task %d %s)", name, bad,
             bad >= 0 ? nd_task_kind_name(g->tasks[bad].kind) : "");

          /* closed-form task counts */
          int64_t per = (int64_t)D * Tp * M; /* per (replica, shard, micro-batch) */
          int64_t dp0_params = (int64_t)Tp * (1 + (P > 1)) + 1 + 2 * Tp + (int64_t)L * (10 * Tp + 2);
          int64_t want[ND_TASK_KIND_COUNT] = {0};
          want[ND_TASK_LOAD_BATCH] = per * (P > 1 ? 2 : 1);
          want[ND_TASK_EMBED_FWD] = per;
          want[ND_TASK_EMBED_BWD] = (int64_t)D * M * (Tp + 1);
          want[ND_TASK_LN_FWD] = want[ND_TASK_LN_BWD_IN] = want[ND_TASK_LN_BWD_W] = per * (2 * L + 1);
          want[ND_TASK_MATMUL_FWD] = want[ND_TASK_MATMUL_BWD_IN] = want[ND_TASK_MATMUL_BWD_W] = per * (4 * L + 1);
          want[ND_TASK_ATTN_FWD] = want[ND_TASK_ATTN_BWD] = per * L;
          want[ND_TASK_ACT_FWD] = want[ND_TASK_ACT_BWD] = per * L;
          want[ND_TASK_RESIDUAL_FWD] = 2 * per * L;
          want[ND_TASK_CE_STATS] = want[ND_TASK_CE_BWD] = per;
          want[ND_TASK_CE_COMBINE] = (int64_t)D * M;
          want[ND_TASK_CE_LSE] = (int64_t)D * M;
          want[ND_TASK_ALLREDUCE] = (Tp > 1) * (int64_t)D * M * (4 * L + 2) + (P > 1) * (int64_t)D * Tp +
                                    (D > 1) * dp0_params + (D * P * Tp > 1);
          want[ND_TASK_SENDRECV] = 2 * per * (P - 1);
          want[ND_TASK_ALLGATHER] = (Tp > 1) * 2 * (int64_t)D * M * (P - 1); /* the slices of each hand-over */
          want[ND_TASK_GRAD_SUMSQ] = (int64_t)D * P * Tp;
          want[ND_TASK_ADAMW] = D * dp0_params;
          int counts_ok = 1;
          for (int kind = 0; kind < ND_TASK_KIND_COUNT; kind++)
            if (p.per_kind[kind] != want[kind]) {
              counts_ok = 0;
              diag("%s: %s: %lld tasks, expected %lld", name, nd_task_kind_name(kind), (long long)p.per_kind[kind],
                   (long long)want[kind]);
            }
          ok(counts_ok, "%s: task counts per kind equal the closed forms", name);

          /* the model's FLOPs: per micro-batch, then the optimizer */
          int64_t mm = 2 * N * (3 * C * C + C * C + 2 * C * H); /* one pass of a layer's four products */
          int64_t bias = N * (3 * C + C + H + C);
          /* attention's forward: two products and the softmax per causal pair; its backward four products
           * (the scores it recomputes are the forward's) */
          int64_t pairs = (int64_t)B * NH * T * (T + 1) / 2, attn = pairs * (4 * hs + 5) + pairs * (8 * hs + 5);
          int64_t layer = (mm + bias) + mm + (mm + bias) /* F, B, W */ + attn + (8 + 10 + 4) * N * C * 2 +
                          (8 + 12) * N * H + 2 * N * C;
          int64_t head = 3 * 2 * N * C * V + (8 + 10 + 4) * N * C + 3 * N * V * 2 + 4 * N;
          int64_t embed = 2 * N * C; /* position rows, forward and gradient */
          int64_t want_flops = (int64_t)D * M * (L * layer + head + embed) + 2 * n_params + 12 * n_params;
          ok(p.model_flops == want_flops, "%s: model FLOPs %lld equal the analytic count %lld", name,
             (long long)p.model_flops, (long long)want_flops);
          nd_plan_free(&p);
          nd_edges_free(&e);
          nd_graph_free(g);
          nd_config_free(cfg);
        }
  return done_testing();
}
