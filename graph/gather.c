/* The gathered block weights of data_parallel_shard parameters
 * (graph/gather.h). The pool's reuse orders everything: a gather writes its
 * buffer after the tasks of the block that used it before have read it, as
 * StarPU derives from the accesses in program order, and a block's tasks
 * read what the gather just before them wrote. */
#include "graph/gather.h"

#include <stdio.h>
#include <string.h>

#include "graph/emit.h"
#include "graph/shard.h"

int nd__gathers(const nd_graph *g) { return g->dp_shard == ND_DP_SHARD_PARAMETERS && g->shard_size > 1; }

int32_t nd__pool_tensor(nd__builder *b, nd_rank r, const nd__param_spec *spec, enum nd_tensor_kind kind,
                        const char *pool, int slot) {
  nd_graph *g = b->g;
  /* one buffer per weight of a block and pool slot: the block's number in
   * the Hugging Face name gives way to the slot */
  char num[16], name[ND_TENSOR_NAME_MAX];
  snprintf(num, sizeof num, ".%d.", spec->layer);
  const char *at = spec->layer >= 0 ? strstr(spec->hf, num) : NULL;
  int head = at ? (int)(at - spec->hf) : 0;
  if (at)
    snprintf(name, sizeof name, "d%dp%dt%d.%s%d.%.*s.*.%s", r.dp, r.pp, r.tp, pool, slot, head, spec->hf, at + strlen(num));
  else
    snprintf(name, sizeof name, "d%dp%dt%d.%s%d.%s", r.dp, r.pp, r.tp, pool, slot, spec->hf);
  for (int32_t i = b->n_state ? b->n_state : g->n_tensors; i-- > 0;)
    if (g->tensors[i].kind == kind && strcmp(g->tensors[i].name, name) == 0) return i;
  nd_tensor t = {0};
  memcpy(t.name, name, sizeof t.name);
  t.kind = kind;
  t.dtype = ND_F32;
  t.ndim = spec->ndim;
  t.shape[0] = spec->shape[0];
  t.shape[1] = spec->shape[1];
  t.full_shape[0] = spec->full[0];
  t.full_shape[1] = spec->full[1];
  t.home = r;
  t.layer = -1; /* every block of its slot */
  t.slot = slot;
  t.shard = spec->shard;
  t.shard_begin = spec->shard_begin;
  t.param = -1;
  return nd__add_tensor(b, &t);
}

int32_t nd__gathered_slot(nd__builder *b, nd_rank r, const nd__param_spec *spec) {
  if (!nd__gathers(b->g)) return -1;
  return nd__pool_tensor(b, r, spec, ND_TENSOR_GATHERED, "gathered", spec->layer % ND__GATHER_DEPTH);
}

void nd__gather_block(nd__builder *b, int d, int st, int mb, int l) {
  nd_graph *g = b->g;
  if (!nd__gathers(g)) return;
  for (int i = 0; i < nd__group_size(g); i++) { /* replica d's context and tensor ranks */
    nd_rank r = nd__group_rank(g, d, st, i);
    int t = r.tp, d0 = r.dp - r.dp % g->shard_size;
    for (int p = 0; p < b->nparams; p++) {
      int32_t dst = nd__param(b, r, p);
      if (dst < 0 || g->tensors[dst].kind != ND_TENSOR_GATHERED) continue;
      int32_t own = nd__param_store(b, r, p);
      if (own >= 0 && g->tensors[own].layer != l) continue;
      if (own < 0 && g->tensors[nd__param_store(b, nd__rank(d0, st, t), p)].layer != l) continue;
      nd__task_spec s;
      nd__spec_init(&s, ND_TASK_PARAM_GATHER, ND_PHASE_COLLECTIVE, r, mb, l);
      s.t.group = ND_GROUP_DP;
      s.t.a.coll.n = g->tensors[dst].bytes / 4;
      s.t.a.coll.dtype = ND_F32;
      s.t.a.coll.chunk = nd_dp_chunk(s.t.a.coll.n, g->shard_size);
      s.t.comm_bytes = g->tensors[dst].bytes - (own >= 0 ? g->tensors[own].bytes : 0);
      nd__acc(&s, dst, ND_ACCESS_W);
      for (int k = d0; k < d0 + g->shard_size; k++) {
        int32_t range = nd__param_store(b, nd__rank(k, st, t), p);
        if (range >= 0) nd__acc(&s, range, ND_ACCESS_R); /* the empty ranges are the last ones */
      }
      s.t.a.coll.nparts = s.n - 1;
      nd__emit(b, &s);
    }
  }
}
