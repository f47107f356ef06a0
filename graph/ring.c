/* Context parallelism's tasks (graph/emit.h): a sequence of 2 cp chunks,
 * context rank c holding chunks c and 2 cp - 1 - c, so that every rank has
 * the same share of the causal mask. A rank's own block is the family's
 * causal attention (its two chunks are in position order, so the local
 * causal mask is the true one); the block of another rank's keys and values
 * is a ring task that reads that rank's tensor (a data dependency, a send
 * across processes), merged by the log-sum-exp in rank order, so the result
 * does not depend on when the blocks run. */
#include "graph/emit.h"

static struct nd_ring_args ring_args(const nd_graph *g, nd_rank r, int kr) {
  int NH = g->NH / g->tp;
  return (struct nd_ring_args){g->B, g->T, NH, g->C / g->NH, NH, g->cp, r.dp % g->cp, kr};
}

void nd__ring_attention_fwd(nd__builder *b, nd_rank r, int mb, int layer, int32_t out, int32_t lse,
                            const int32_t *qkv_of, int32_t part, int32_t part_lse) {
  nd_graph *g = b->g;
  int c = r.dp % g->cp;
  for (int kr = 0; kr < g->cp; kr++) {
    if (kr == c) continue;
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_RING_ATTN_FWD, ND_PHASE_F, r, mb, layer);
    s.t.a.ring = ring_args(g, r, kr);
    s.t.comm_bytes = g->tensors[qkv_of[kr]].bytes;
    nd__acc(&s, part, ND_ACCESS_W);
    nd__acc(&s, part_lse, ND_ACCESS_W);
    nd__acc(&s, qkv_of[c], ND_ACCESS_R);
    nd__acc(&s, qkv_of[kr], ND_ACCESS_R);
    nd__emit(b, &s);
    nd__spec_init(&s, ND_TASK_RING_ATTN_MERGE, ND_PHASE_F, r, mb, layer);
    s.t.a.ring = ring_args(g, r, kr);
    nd__acc(&s, out, ND_ACCESS_RW);
    nd__acc(&s, lse, ND_ACCESS_RW);
    nd__acc(&s, part, ND_ACCESS_R);
    nd__acc(&s, part_lse, ND_ACCESS_R);
    nd__emit(b, &s);
  }
}

void nd__ring_attention_bwd(nd__builder *b, nd_rank r, int kr, int mb, int layer, const int32_t *dqkv_of,
                            int32_t dout, const int32_t *qkv_of, int32_t out, int32_t lse, int32_t part) {
  nd_graph *g = b->g;
  int c = r.dp % g->cp;
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_RING_ATTN_BWD, ND_PHASE_B, r, mb, layer);
  s.t.a.ring = ring_args(g, r, kr);
  s.t.comm_bytes = g->tensors[qkv_of[kr]].bytes;
  nd__acc(&s, dqkv_of[c], ND_ACCESS_RW);
  nd__acc(&s, part, ND_ACCESS_W);
  nd__acc(&s, dout, ND_ACCESS_R);
  nd__acc(&s, qkv_of[c], ND_ACCESS_R);
  nd__acc(&s, qkv_of[kr], ND_ACCESS_R);
  nd__acc(&s, out, ND_ACCESS_R);
  nd__acc(&s, lse, ND_ACCESS_R);
  nd__emit(b, &s);
  /* on the keys' owner: the part comes back to it */
  nd_rank owner = nd__rank(r.dp - c + kr, r.pp, r.tp);
  nd__spec_init(&s, ND_TASK_RING_KV_ADD, ND_PHASE_B, owner, mb, layer);
  s.t.a.ring = ring_args(g, r, kr);
  s.t.comm_bytes = g->tensors[part].bytes;
  nd__acc(&s, dqkv_of[kr], ND_ACCESS_RW);
  nd__acc(&s, part, ND_ACCESS_R);
  nd__emit(b, &s);
}

static void ring_pos(nd__builder *b, enum nd_task_kind kind, nd_rank r, int mb, int32_t table, int32_t x) {
  nd_graph *g = b->g;
  nd__task_spec s;
  int bwd = kind == ND_TASK_RING_POS_BWD;
  nd__spec_init(&s, kind, bwd ? ND_PHASE_W : ND_PHASE_F, r, mb, -1);
  float beta = 0.0f;
  if (bwd) {
    beta = nd__gacc(b, &s, table);
    nd__acc(&s, x, ND_ACCESS_R);
  } else {
    nd__acc(&s, x, ND_ACCESS_RW);
    nd__acc(&s, table, ND_ACCESS_R);
  }
  s.t.a.emb = (struct nd_emb_args){g->B, g->T, g->C, 0, 0, 1, beta, g->cp, r.dp % g->cp};
  nd__emit(b, &s);
}

void nd__ring_pos_fwd(nd__builder *b, nd_rank r, int mb, int32_t x, int32_t wpe) {
  ring_pos(b, ND_TASK_RING_POS_FWD, r, mb, wpe, x);
}

void nd__ring_pos_bwd(nd__builder *b, nd_rank r, int mb, int32_t dwpe, int32_t dout) {
  ring_pos(b, ND_TASK_RING_POS_BWD, r, mb, dwpe, dout);
}
