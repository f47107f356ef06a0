/* The optimizer tail of a training step (graph/optim.h): tied and
 * data-parallel gradient all-reduces, the global gradient norm and AdamW. */
#include "graph/optim.h"

#include "graph/emit.h"

void nd__optimizer_tail(nd__builder *b, int tied) {
  nd_graph *g = b->g;
  int32_t *parts = b->parts;
  /* the tied embedding's two gradients become their sum */
  if (g->pp > 1 && tied >= 0)
    for (int d = 0; d < g->dp; d++)
      for (int t = 0; t < g->tp; t++) {
        parts[0] = nd__grad(b, nd__rank(d, 0, t), tied);
        parts[1] = nd__grad(b, nd__rank(d, g->pp - 1, t), tied);
        nd__allreduce(b, ND_GROUP_TIED, parts, 2, -1, -1);
      }
  /* data parallel: each gradient summed over the replicas, once it is complete */
  for (int st = 0; st < g->pp; st++)
    for (int t = 0; t < g->tp; t++)
      for (int p = 0; p < b->nparams; p++) {
        if (nd__grad(b, nd__rank(0, st, t), p) < 0) continue;
        int n = 0;
        for (int d = 0; d < g->dp; d++) parts[n++] = nd__grad(b, nd__rank(d, st, t), p);
        nd__allreduce(b, ND_GROUP_DP, parts, n, -1, g->tensors[parts[0]].layer);
      }
  /* global gradient norm: each rank sums the squares of its primary gradients
   * (none on data-parallel replicas), then all ranks sum the partial sums */
  int n_norm = 0;
  for (int d = 0; d < g->dp; d++)
    for (int st = 0; st < g->pp; st++)
      for (int t = 0; t < g->tp; t++) {
        nd_rank r = nd__rank(d, st, t);
        nd__task_spec s;
        nd__spec_init(&s, ND_TASK_GRAD_SUMSQ, ND_PHASE_OPTIMIZER, r, -1, -1);
        int32_t out = b->normsq[nd_rank_index(g, r)];
        nd__acc(&s, out, ND_ACCESS_W);
        for (int p = 0; p < b->nparams; p++) {
          int32_t gr = nd__grad(b, r, p);
          if (gr < 0 || !g->tensors[gr].primary) continue;
          nd__acc(&s, gr, ND_ACCESS_R);
          s.t.a.sumsq.n += g->tensors[gr].bytes / 4;
        }
        s.t.a.sumsq.nparts = s.n - 1;
        nd__emit(b, &s);
        parts[n_norm++] = out;
      }
  nd__allreduce(b, ND_GROUP_ALL, parts, n_norm, -1, -1);
  for (int d = 0; d < g->dp; d++)
    for (int st = 0; st < g->pp; st++)
      for (int t = 0; t < g->tp; t++) {
        nd_rank r = nd__rank(d, st, t);
        for (int p = 0; p < b->nparams; p++) {
          int32_t pr = nd__param(b, r, p);
          if (pr < 0) continue;
          nd__task_spec s;
          nd__spec_init(&s, ND_TASK_ADAMW, ND_PHASE_OPTIMIZER, r, -1, g->tensors[pr].layer);
          s.t.replica = !g->tensors[pr].primary;
          s.t.a.adamw.n = g->tensors[pr].bytes / 4;
          s.t.a.adamw.decay = g->tensors[pr].decay;
          nd__acc(&s, pr, ND_ACCESS_RW);
          nd__acc(&s, *nd__pslot(b, b->mom, r, p), ND_ACCESS_RW);
          nd__acc(&s, *nd__pslot(b, b->vel, r, p), ND_ACCESS_RW);
          nd__acc(&s, nd__grad(b, r, p), ND_ACCESS_R);
          nd__acc(&s, b->normsq[nd_rank_index(g, r)], ND_ACCESS_R);
          nd__emit(b, &s);
        }
      }
}
