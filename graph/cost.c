/* The cost model: floating-point operations per task, from its sizes.
 * Matrix products count 2 per multiply-add; elementwise work counts a few
 * operations per element, so that cheap tasks are not free to the planner. */
#include "graph/builder.h"

int64_t nd__task_flops(const nd_task *t) {
  const nd_task_args *a = &t->a;
  switch (t->kind) {
  case ND_TASK_MATMUL_FWD:
  case ND_TASK_MATMUL_BWD_W:
    return 2LL * a->mm.M * a->mm.K * a->mm.N + (a->mm.has_bias ? (int64_t)a->mm.M * a->mm.N : 0);
  case ND_TASK_MATMUL_BWD_IN:
    return 2LL * a->mm.M * a->mm.K * a->mm.N;
  case ND_TASK_ATTN_FWD: /* QK^T and att.V over the causal triangle, plus the softmax */
  case ND_TASK_ATTN_BWD: {
    int64_t pairs = (int64_t)a->attn.B * a->attn.NH * a->attn.T * (a->attn.T + 1) / 2;
    int64_t fwd = pairs * (4LL * a->attn.hs + 5);
    return t->kind == ND_TASK_ATTN_FWD ? fwd : 2 * fwd;
  }
  case ND_TASK_LN_FWD:
    return 8LL * a->ln.N * a->ln.C;
  case ND_TASK_LN_BWD_IN:
    return 10LL * a->ln.N * a->ln.C;
  case ND_TASK_LN_BWD_W:
    return 4LL * a->ln.N * a->ln.C;
  case ND_TASK_ACT_FWD:
    return 8 * a->ew.n;
  case ND_TASK_ACT_BWD:
    return 12 * a->ew.n;
  case ND_TASK_RESIDUAL_FWD:
    return a->ew.n;
  case ND_TASK_EMBED_FWD: /* a gather of token rows (no arithmetic), plus the position rows */
  case ND_TASK_EMBED_BWD: /* the position gradient's sums; the token rows' scatter counts as data movement */
    return a->emb.wpe ? (int64_t)a->emb.B * a->emb.T * a->emb.C : 0;
  case ND_TASK_CE_STATS:
  case ND_TASK_CE_BWD:
    return 3LL * a->ce.N * a->ce.Vs;
  case ND_TASK_CE_COMBINE: /* per row: the log-sum-exp and the loss term */
    return 4LL * a->ce.N;
  case ND_TASK_ALLREDUCE:
    return (int64_t)(a->coll.nparts - 1) * a->coll.n;
  case ND_TASK_ADAMW:
    return 12 * a->adamw.n;
  case ND_TASK_GRAD_SUMSQ:
    return 2 * a->sumsq.n;
  case ND_TASK_LOAD_BATCH:
  case ND_TASK_SENDRECV:
  case ND_TASK_KIND_COUNT:
    break;
  }
  return 0;
}
