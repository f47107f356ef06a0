/* The tasks only generation graphs have (nd_graph_build_generate): the
 * attention of a submission's new tokens over every layer's key/value cache,
 * and GPT-2's position rows added at the submission's position. Both read
 * that position from the submission (nd_step.pos), so the same graph runs
 * every decoding step; the caches are state that lives across submissions. */
#include <stdio.h>

#include "graph/emit.h"

static int32_t cache(nd__builder *b, nd_rank r, int l, const char *which, int heads, int hs) {
  nd_tensor t = {0};
  t.kind = ND_TENSOR_ACTIVATION;
  t.dtype = ND_F32;
  t.ndim = 3;
  t.shape[0] = b->g->gen_cache, t.shape[1] = heads, t.shape[2] = hs;
  t.home = r;
  t.layer = l;
  t.slot = -1; /* across submissions */
  t.param = -1;
  snprintf(t.name, sizeof t.name, "d%dp%dt%d.h%d.%s", r.dp, r.pp, r.tp, l, which);
  return nd__add_tensor(b, &t);
}

void nd__gen_attention(nd__builder *b, nd_rank r, int l, int32_t out, const int32_t *in, int n_in, const nd_rope *rope,
                       int kv_heads) {
  nd_graph *g = b->g;
  int NHs = g->NH / g->tp, hs = g->C / g->NH, KVs = kv_heads / g->tp;
  nd__task_spec s;
  nd__spec_init(&s, n_in == 1 ? ND_TASK_KV_ATTN : ND_TASK_KV_GQA, ND_PHASE_F, r, 0, l);
  s.t.a.cache = (struct nd_cache_args){1, g->T, NHs, hs, KVs, g->gen_cache, rope != NULL, ND_ROPE_DEFAULT(0.0f)};
  if (rope) s.t.a.cache.rope = *rope;
  nd__acc(&s, out, ND_ACCESS_W);
  nd__acc(&s, cache(b, r, l, "kcache", KVs, hs), ND_ACCESS_RW);
  nd__acc(&s, cache(b, r, l, "vcache", KVs, hs), ND_ACCESS_RW);
  for (int i = 0; i < n_in; i++) nd__acc(&s, in[i], ND_ACCESS_R);
  nd__emit(b, &s);
}

void nd__gen_positions(nd__builder *b, nd_rank r, int32_t x, int32_t wpe) {
  nd_graph *g = b->g;
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_POS_ADD, ND_PHASE_F, r, 0, -1);
  s.t.a.cache = (struct nd_cache_args){1, g->T, 1, g->C, 1, g->gen_cache, 0, ND_ROPE_DEFAULT(0.0f)};
  nd__acc(&s, x, ND_ACCESS_RW);
  nd__acc(&s, wpe, ND_ACCESS_R);
  nd__emit(b, &s);
}
