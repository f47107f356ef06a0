/* The gradient buffers of sharded gradients (graph/gradbuf.h). The pool's
 * reuse orders everything through StarPU's accesses in program order: the
 * reduce-scatter of block l comes after every write of its buffers (deferred
 * behind the W tasks that write them, graph/emit.c) and before the first
 * write of block l - depth, which then starts the buffer over (beta 0). */
#include "graph/gradbuf.h"

#include <stdlib.h>
#include <string.h>

#include "graph/dpchunk.h"
#include "graph/emit.h"
#include "graph/gather.h"

int nd__grad_ranges(const nd_graph *g) { return g->dp_shard >= ND_DP_SHARD_GRADIENTS && g->shard_size > 1; }

int32_t nd__grad_buffer(nd__builder *b, nd_rank r, const nd__param_spec *spec) {
  const nd_graph *g = b->g;
  int depth = g->micro_batches == 1 ? 2 : g->L;
  return nd__pool_tensor(b, r, spec, ND_TENSOR_GRAD_BUF, "grads", spec->layer >= 0 ? spec->layer % depth : 0);
}

void nd__reduce_grad(nd__builder *b, int st, int t, int p, int mb) {
  nd_graph *g = b->g;
  if (nd__grad(b, nd__rank(0, st, t), p) < 0) return;
  int32_t *parts = b->parts, outs[g->dp];
  for (int d = 0; d < g->dp; d++) {
    parts[d] = nd__grad(b, nd__rank(d, st, t), p);
    outs[d] = nd__grad_sum(b, nd__rank(d, st, t), p);
  }
  int layer = g->tensors[outs[0]].layer, chunked = g->procs > 1 && nd_dp_spans(g, st, t, g->procs);
  if (!nd__grad_ranges(g)) {
    if (chunked)
      nd__dp_chunked_allreduce(b, parts, g->dp, 1, layer);
    else
      nd__allreduce(b, ND_GROUP_DP, parts, g->dp, -1, layer);
    return;
  }
  if (chunked)
    nd__dp_chunked_reduce_scatter(b, parts, outs, g->dp, g->shard_size, mb, layer);
  else
    nd__reduce_scatter(b, g->tensors[parts[0]].home, parts, g->dp, outs, g->dp, g->shard_size, mb, layer);
  for (int d = 0; d < g->dp; d++) b->written[parts[d]] = 0; /* the next block of the slot starts it over */
}

int nd__dp_buckets(const nd_graph *g, int st, int t) {
  return !nd__grad_ranges(g) && g->procs > 1 && nd_dp_spans(g, st, t, g->procs);
}

void nd__reduce_buckets(nd__builder *b, int st, int t) {
  nd_graph *g = b->g;
  int n = b->nparams, *ps = malloc((size_t)n * sizeof *ps);
  char *done = calloc((size_t)n, 1);
  int32_t *grads = malloc((size_t)n * g->dp * sizeof *grads);
  if (!ps || !done || !grads) {
    b->oom = 1;
    goto out;
  }
  for (int p = 0; p < n; p++) {
    int32_t first = nd__grad_sum(b, nd__rank(0, st, t), p);
    if (done[p] || first < 0) continue;
    /* the bucket: the gradients of p's layer, in parameter order */
    int m = 0, layer = g->tensors[first].layer;
    for (int q = p; q < n; q++) {
      int32_t sum = nd__grad_sum(b, nd__rank(0, st, t), q);
      if (!done[q] && sum >= 0 && g->tensors[sum].layer == layer) ps[m++] = q, done[q] = 1;
    }
    for (int d = 0; d < g->dp; d++)
      for (int i = 0; i < m; i++) grads[d * m + i] = nd__grad(b, nd__rank(d, st, t), ps[i]);
    nd__dp_chunked_allreduce(b, grads, g->dp, m, layer);
  }
out:
  free(ps), free(done), free(grads);
}

void nd__reduce_block(nd__builder *b, int st, int mb, int l) {
  nd_graph *g = b->g;
  if (!nd__grad_ranges(g) || mb != g->micro_batches - 1) return;
  for (int t = 0; t < g->tp; t++)
    for (int p = 0; p < b->nparams; p++) {
      int32_t sum = nd__grad_sum(b, nd__rank(0, st, t), p);
      if (sum >= 0 && g->tensors[sum].layer == l) nd__reduce_grad(b, st, t, p, mb);
    }
}
