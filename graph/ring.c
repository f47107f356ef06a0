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
  return (struct nd_ring_args){g->B, g->T, g->NH / g->tp, g->C / g->NH, g->NKV / g->tp, g->cp, r.dp % g->cp, kr};
}

void nd__ring_attention_fwd(nd__builder *b, nd_rank r, int mb, int layer, int32_t out, int32_t lse, const nd__ring_qkv *x,
                            int32_t part, int32_t part_lse) {
  nd_graph *g = b->g;
  int c = r.dp % g->cp, packed = !x->k;
  for (int kr = 0; kr < g->cp; kr++) {
    if (kr == c) continue;
    nd__task_spec s;
    nd__spec_init(&s, packed ? ND_TASK_RING_ATTN_FWD : ND_TASK_RING_GQA_FWD, ND_PHASE_F, r, mb, layer);
    s.t.a.ring = ring_args(g, r, kr);
    nd__acc(&s, part, ND_ACCESS_W);
    nd__acc(&s, part_lse, ND_ACCESS_W);
    nd__acc(&s, x->q[c], ND_ACCESS_R);
    if (packed) {
      nd__acc(&s, x->q[kr], ND_ACCESS_R);
      s.t.comm_bytes = g->tensors[x->q[kr]].bytes;
    } else {
      nd__acc(&s, x->k[kr], ND_ACCESS_R);
      nd__acc(&s, x->v[kr], ND_ACCESS_R);
      s.t.comm_bytes = g->tensors[x->k[kr]].bytes + g->tensors[x->v[kr]].bytes;
    }
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

void nd__ring_attention_bwd(nd__builder *b, nd_rank r, int kr, int mb, int layer, const nd__ring_qkv *dx,
                            int32_t dout, const nd__ring_qkv *x, int32_t out, int32_t lse, int32_t part_k,
                            int32_t part_v) {
  nd_graph *g = b->g;
  int c = r.dp % g->cp, packed = !x->k;
  nd__task_spec s;
  nd__spec_init(&s, packed ? ND_TASK_RING_ATTN_BWD : ND_TASK_RING_GQA_BWD, ND_PHASE_B, r, mb, layer);
  s.t.a.ring = ring_args(g, r, kr);
  nd__acc(&s, dx->q[c], ND_ACCESS_RW);
  nd__acc(&s, part_k, ND_ACCESS_W);
  if (!packed) nd__acc(&s, part_v, ND_ACCESS_W);
  nd__acc(&s, dout, ND_ACCESS_R);
  nd__acc(&s, x->q[c], ND_ACCESS_R);
  if (packed) {
    nd__acc(&s, x->q[kr], ND_ACCESS_R);
  } else {
    nd__acc(&s, x->k[kr], ND_ACCESS_R);
    nd__acc(&s, x->v[kr], ND_ACCESS_R);
  }
  nd__acc(&s, out, ND_ACCESS_R);
  nd__acc(&s, lse, ND_ACCESS_R);
  s.t.comm_bytes = packed ? g->tensors[x->q[kr]].bytes : g->tensors[x->k[kr]].bytes + g->tensors[x->v[kr]].bytes;
  nd__emit(b, &s);
  /* on the keys' owner: the parts come back to it */
  nd_rank owner = nd__rank(r.dp - c + kr, r.pp, r.tp);
  nd__spec_init(&s, packed ? ND_TASK_RING_KV_ADD : ND_TASK_RING_GQA_KV_ADD, ND_PHASE_B, owner, mb, layer);
  s.t.a.ring = ring_args(g, r, kr);
  if (packed) {
    nd__acc(&s, dx->q[kr], ND_ACCESS_RW);
    nd__acc(&s, part_k, ND_ACCESS_R);
    s.t.comm_bytes = g->tensors[part_k].bytes;
  } else {
    nd__acc(&s, dx->k[kr], ND_ACCESS_RW);
    nd__acc(&s, dx->v[kr], ND_ACCESS_RW);
    nd__acc(&s, part_k, ND_ACCESS_R);
    nd__acc(&s, part_v, ND_ACCESS_R);
    s.t.comm_bytes = g->tensors[part_k].bytes + g->tensors[part_v].bytes;
  }
  nd__emit(b, &s);
}

void nd__ring_rope(nd__builder *b, enum nd_phase ph, nd_rank r, int mb, int layer, int32_t out, int32_t in,
                   const struct nd_rope_args *a) {
  nd__task_spec s;
  nd__spec_init(&s, ph == ND_PHASE_F ? ND_TASK_RING_ROPE_FWD : ND_TASK_RING_ROPE_BWD, ph, r, mb, layer);
  s.t.a.ring_rope = (struct nd_ring_rope_args){*a, b->g->cp, r.dp % b->g->cp};
  nd__acc(&s, out, ND_ACCESS_W);
  nd__acc(&s, in, ND_ACCESS_R);
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
