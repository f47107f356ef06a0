/* The optimizer tail of a training step (graph/optim.h): tied and
 * data-parallel gradient all-reduces, the global gradient norm and AdamW,
 * on whole tensors or on data-parallel shards. */
#include "graph/optim.h"

#include "graph/dpchunk.h"
#include "graph/emit.h"
#include "graph/gradbuf.h"
#include "graph/shard.h"

static void adamw(nd__builder *b, nd_rank r, int p) {
  nd_graph *g = b->g;
  int32_t pr = nd__param_store(b, r, p), m = *nd__pslot(b, b->mom, r, p);
  if (pr < 0 || m < 0) return; /* no parameter, or an empty shard of it */
  const nd_tensor *mt = &g->tensors[m];
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_ADAMW, ND_PHASE_OPTIMIZER, r, -1, g->tensors[pr].layer);
  s.t.replica = !mt->primary; /* one primary copy of each element's moments */
  s.t.a.adamw.n = mt->bytes / 4;
  s.t.a.adamw.offset = mt->dp_begin;
  s.t.a.adamw.param_range = g->tensors[pr].dp_numel != 0;
  s.t.a.adamw.grad_range = nd__grad_ranges(g);
  s.t.a.adamw.decay = g->tensors[pr].decay;
  nd__acc(&s, pr, ND_ACCESS_RW);
  nd__acc(&s, m, ND_ACCESS_RW);
  nd__acc(&s, *nd__pslot(b, b->vel, r, p), ND_ACCESS_RW);
  nd__acc(&s, nd__grad_sum(b, r, p), ND_ACCESS_R);
  nd__acc(&s, b->normsq[nd_rank_index(g, r)], ND_ACCESS_R);
  nd__emit(b, &s);
}

/* The layer of parameter p on rank r; -2 where r has none. */
static int layer_of(nd__builder *b, nd_rank r, int p) {
  int32_t pr = nd__param_store(b, r, p);
  return pr < 0 ? -2 : b->g->tensors[pr].layer;
}

/* The all-gather of parameter p across shard group (d0 .. d0 + size - 1,
 * st, t): a task per rank that copies the other ranks' ranges into its own
 * copy. Each reads only the others' own ranges, which no task of the
 * all-gather writes, and writes only its own copy: under several processes
 * a process writes only what it holds. */
static void shard_gather(nd__builder *b, int d0, int st, int t, int p) {
  nd_graph *g = b->g;
  int size = g->shard_size;
  if (g->procs > 1 && nd_dp_spans(g, st, t, g->procs)) {
    int32_t *copies = b->parts;
    for (int own = 0; own < size; own++) copies[own] = nd__param(b, nd__rank(d0 + own, st, t), p);
    nd__dp_chunked_shard_gather(b, copies, size);
    return;
  }
  for (int own = 0; own < size; own++) {
    int32_t id = nd__param(b, nd__rank(d0 + own, st, t), p);
    const nd_tensor *dst = &g->tensors[id];
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_SHARD_GATHER, ND_PHASE_COLLECTIVE, dst->home, -1, dst->layer);
    s.t.group = ND_GROUP_DP;
    s.t.a.coll.nparts = size - 1;
    s.t.a.coll.n = dst->bytes / 4;
    s.t.a.coll.dtype = ND_F32;
    s.t.a.coll.chunk = nd_dp_chunk(dst->bytes / 4, size);
    s.t.a.coll.own = own;
    /* the others' ranges: the tensor less its own range */
    int64_t begin, n;
    nd_dp_range(dst->bytes / 4, size, own, &begin, &n);
    s.t.comm_bytes = dst->bytes - 4 * n;
    nd__acc(&s, id, ND_ACCESS_RW);
    for (int d = d0; d < d0 + size; d++)
      if (d != d0 + own) nd__acc(&s, nd__param(b, nd__rank(d, st, t), p), ND_ACCESS_R);
    nd__emit(b, &s);
  }
}

/* parallelism.data_parallel_shard: each rank of a shard group updates its
 * range of every parameter (its moments hold only that range), then the
 * group's copies of the parameter exchange their ranges. Shard groups are
 * consecutive replicas; every group updates the same way. A rank's updates
 * of one layer come one after the other, so that they run as one chain.
 * Under parameters a block's weights stay ranges: the next step's gathers
 * (graph/gather.h) read them, so there is nothing to exchange. */
static void sharded_update(nd__builder *b) {
  nd_graph *g = b->g;
  int size = g->shard_size;
  for (int st = 0; st < g->pp; st++)
    for (int t = 0; t < g->tp; t++)
      for (int d0 = 0; d0 < g->dp; d0 += size)
        for (int first = 0, end; first < b->nparams; first = end) {
          /* [first, end): the parameters of one layer (or none: -1) */
          int layer = layer_of(b, nd__rank(d0, st, t), first);
          for (end = first + 1; end < b->nparams && layer_of(b, nd__rank(d0, st, t), end) == layer; end++) {}
          for (int d = d0; d < d0 + size; d++)
            for (int p = first; p < end; p++) adamw(b, nd__rank(d, st, t), p);
          for (int p = first; p < end && size > 1; p++) {
            int32_t w = nd__param(b, nd__rank(d0, st, t), p);
            if (w >= 0 && w == nd__param_store(b, nd__rank(d0, st, t), p)) shard_gather(b, d0, st, t, p);
          }
        }
}

/* Rank r's part of the squared gradient norm, into its normsq. With sharded
 * gradients, rank d of the first shard group sums its range of each
 * gradient, continuing the 8 lanes of rank d - 1 (kernels/cpu/lanes.h), so
 * that the group's last rank ends with the sum of the whole gradients, bit
 * for bit, and the others with 0; every other rank sums nothing, as a
 * replica does without shards. */
static void norm_part(nd__builder *b, nd_rank r) {
  nd_graph *g = b->g;
  int32_t lanes = b->lanes[nd_rank_index(g, r)];
  nd__task_spec s;
  nd__spec_init(&s, lanes >= 0 ? ND_TASK_GRAD_SUMSQ_RANGE : ND_TASK_GRAD_SUMSQ, ND_PHASE_OPTIMIZER, r, -1, -1);
  nd__acc(&s, b->normsq[nd_rank_index(g, r)], ND_ACCESS_W);
  if (lanes >= 0) {
    nd__acc(&s, lanes, ND_ACCESS_W);
    if (r.dp > 0) nd__acc(&s, b->lanes[nd_rank_index(g, nd__rank(r.dp - 1, r.pp, r.tp))], ND_ACCESS_R);
    s.t.a.sumsq.shard = r.dp;
    s.t.a.sumsq.last = r.dp == g->shard_size - 1;
  }
  int first = s.n;
  for (int p = 0; p < b->nparams; p++) {
    int32_t gr = nd__grad_sum(b, r, p);
    if (gr < 0 || !g->tensors[gr].primary) continue;
    nd__acc(&s, gr, ND_ACCESS_R);
    s.t.a.sumsq.n += g->tensors[gr].bytes / 4; /* a range: the padding adds zeros */
  }
  s.t.a.sumsq.nparts = s.n - first;
  nd__emit(b, &s);
}

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
  /* data parallel: each gradient summed over the replicas, once it is
   * complete; a block's sharded gradients were, after its backward */
  for (int st = 0; st < g->pp; st++)
    for (int t = 0; t < g->tp; t++) {
      if (nd__dp_buckets(g, st, t)) {
        nd__reduce_buckets(b, st, t);
        continue;
      }
      for (int p = 0; p < b->nparams; p++) {
        int32_t sum = nd__grad_sum(b, nd__rank(0, st, t), p);
        if (sum >= 0 && !(nd__grad_ranges(g) && g->tensors[sum].layer >= 0))
          nd__reduce_grad(b, st, t, p, g->micro_batches - 1);
      }
    }
  /* global gradient norm: each rank sums the squares of its primary gradients
   * (none on data-parallel replicas), then all ranks sum the partial sums */
  int n_norm = 0;
  for (int d = 0; d < g->dp; d++)
    for (int st = 0; st < g->pp; st++)
      for (int t = 0; t < g->tp; t++) {
        nd_rank r = nd__rank(d, st, t);
        norm_part(b, r);
        parts[n_norm++] = b->normsq[nd_rank_index(g, r)];
      }
  nd__allreduce(b, ND_GROUP_ALL, parts, n_norm, -1, -1);
  if (g->dp_shard != ND_DP_SHARD_NONE) {
    sharded_update(b);
    return;
  }
  for (int d = 0; d < g->dp; d++)
    for (int st = 0; st < g->pp; st++)
      for (int t = 0; t < g->tp; t++)
        for (int p = 0; p < b->nparams; p++) adamw(b, nd__rank(d, st, t), p);
}
