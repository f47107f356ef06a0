/* The cost model: floating-point operations per task, from its sizes, one
 * function per kind family (graph/kinds.c names each kind's). Matrix products
 * count 2 per multiply-add; elementwise work counts a few operations per
 * element, so that cheap tasks are not free to the planner. */
#include "graph/builder.h"

int64_t nd__flops_none(const nd_task *t) {
  (void)t;
  return 0;
}

int64_t nd__flops_matmul(const nd_task *t) {
  const struct nd_mm_args *m = &t->a.mm;
  int64_t bias = t->kind != ND_TASK_MATMUL_BWD_IN && m->has_bias ? (int64_t)m->M * m->N : 0;
  return 2LL * m->M * m->K * m->N + bias;
}

static int64_t attention_pairs(const nd_task *t) {
  const struct nd_attn_args *a = &t->a.attn;
  return (int64_t)a->B * a->NH * a->T * (a->T + 1) / 2;
}

/* Over the causal triangle of (query, key) pairs: the forward's two products
 * (QK^T, P.V) and its online softmax; the backward's five (the scores again,
 * dout.V^T, dV, dQ, dK) and the probabilities' recomputation and gradient.
 * A ring block (graph/ring.c) is its attention kind's call on another rank's
 * keys and values. */
int64_t nd__flops_attention(const nd_task *t) {
  int fwd = t->kind == ND_TASK_ATTN_FWD || t->kind == ND_TASK_GQA_FWD || t->kind == ND_TASK_RING_ATTN_FWD ||
            t->kind == ND_TASK_RING_GQA_FWD;
  return attention_pairs(t) * (fwd ? 4LL * t->a.attn.hs + 5 : 10LL * t->a.attn.hs + 5);
}

/* the backward's scores QK^T, the forward's product again: the model's
 * arithmetic counts the backward as twice the forward's products (8 hs a pair) */
int64_t nd__repeated_attention(const nd_task *t) { return attention_pairs(t) * 2LL * t->a.attn.hs; }

/* generation: each new token's query against the cache up to it (at most S
 * positions, the cost of the longest); the position add one per element */
int64_t nd__flops_kv_attention(const nd_task *t) {
  const struct nd_cache_args *a = &t->a.cache;
  if (t->kind == ND_TASK_POS_ADD) return (int64_t)a->T * a->hs;
  return (int64_t)a->T * a->NH * a->positions * (4LL * a->hs + 5);
}

int64_t nd__flops_layernorm(const nd_task *t) {
  int per = t->kind == ND_TASK_LN_FWD || t->kind == ND_TASK_RMSNORM_FWD         ? 8
            : t->kind == ND_TASK_LN_BWD_IN || t->kind == ND_TASK_RMSNORM_BWD_IN ? 10
                                                                                : 4;
  return per * (int64_t)t->a.ln.N * t->a.ln.C;
}

int64_t nd__flops_elementwise(const nd_task *t) {
  int per = t->kind == ND_TASK_ACT_FWD || t->kind == ND_TASK_SWIGLU_FWD   ? 8
            : t->kind == ND_TASK_ACT_BWD || t->kind == ND_TASK_SWIGLU_BWD ? 12
            : t->kind == ND_TASK_ROPE_FWD || t->kind == ND_TASK_ROPE_BWD  ? 4
                                                                          : 1;
  return per * t->a.ew.n;
}

/* forward: a gather of token rows (no arithmetic), plus the position rows;
 * backward: the position gradient's sums, the token rows' scatter counts as data movement */
int64_t nd__flops_embedding(const nd_task *t) {
  const struct nd_emb_args *e = &t->a.emb;
  return e->wpe ? (int64_t)e->B * e->T * e->C : 0;
}

/* stats and backward: a pass over the logits; combine: per row the
 * log-sum-exp and the loss term; lse: the log-sum-exp again */
int64_t nd__flops_crossentropy(const nd_task *t) {
  const struct nd_ce_args *c = &t->a.ce;
  if (t->kind == ND_TASK_CE_LSE) return 3LL * c->N;
  return t->kind == ND_TASK_CE_COMBINE ? 4LL * c->N : 3LL * c->N * c->Vs;
}

int64_t nd__flops_allreduce(const nd_task *t) { return (int64_t)(t->a.coll.nparts - 1) * t->a.coll.n; }
int64_t nd__flops_adamw(const nd_task *t) { return 12 * t->a.adamw.n; }
int64_t nd__flops_sumsq(const nd_task *t) { return 2 * t->a.sumsq.n; }
