/* Chunked data-parallel sums across processes (graph/dpchunk.h). The chunks
 * are cut by the reduce-scatter kind (one part: a copy of its ranges), summed
 * by the all-reduce or reduce-scatter kind over one chunk of every replica,
 * and put back together by the param_gather kind (ranges in order). */
#include "graph/dpchunk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/emit.h"
#include "graph/shard.h"

/* A flat f32 tensor of n elements beside state tensor `like` (its rank,
 * layer), named after it with `suffix`. A name too long would be cut, and two
 * tensors would share a tag: the executor refuses that (names are the
 * Hugging Face one, at most 47 characters, after a short prefix). */
static int32_t dp_tensor(nd__builder *b, int32_t like, const char *suffix, int64_t n) {
  const nd_tensor *w = &b->g->tensors[like];
  nd_tensor t = {0};
  char name[ND_TENSOR_NAME_MAX + 24];
  snprintf(name, sizeof name, "%s.%s", w->name, suffix);
  memcpy(t.name, name, sizeof t.name - 1);
  t.kind = ND_TENSOR_DP_CHUNK;
  t.dtype = ND_F32;
  t.ndim = 1;
  t.shape[0] = n;
  t.home = w->home;
  t.layer = w->layer;
  t.slot = -1;
  t.param = -1;
  return nd__add_tensor(b, &t);
}

/* Chunk c of `whole`, a new tensor of its n elements on its rank. */
static int32_t new_chunk(nd__builder *b, int32_t whole, int c, int64_t n) {
  char suffix[24];
  snprintf(suffix, sizeof suffix, "chunk%d", c);
  return dp_tensor(b, whole, suffix, n);
}

/* The non-empty chunks of k of state tensor `whole` (a gradient or a pool's
 * gradient buffer) into ids, on its rank: created on its first cut, the same
 * tensors after (a pool slot's next block). Their count, or -1 when out of
 * memory. */
static int chunks_of(nd__builder *b, int32_t whole, int k, int32_t *ids) {
  nd_graph *g = b->g;
  if (whole >= b->n_state) { /* a bucket's flat copy: cut once */
    int count = 0;
    for (int c = 0; c < k; c++) {
      int64_t begin, n;
      nd_dp_range(g->tensors[whole].bytes / 4, k, c, &begin, &n);
      if (n == 0) break;
      if ((ids[count++] = new_chunk(b, whole, c, n)) < 0) return -1;
    }
    return count;
  }
  if (!b->chunk0) {
    if (!(b->chunk0 = malloc((size_t)b->n_state * sizeof *b->chunk0))) return -1;
    for (int32_t i = 0; i < b->n_state; i++) b->chunk0[i] = -1;
  }
  int64_t numel = g->tensors[whole].bytes / 4, begin, n;
  int count = 0;
  for (int c = 0; c < k; c++) {
    nd_dp_range(numel, k, c, &begin, &n);
    if (n == 0) break; /* the empty ranges are the last ones */
    /* created together, in order */
    ids[count] = b->chunk0[whole] >= 0 ? b->chunk0[whole] + c : new_chunk(b, whole, c, n);
    if (ids[count++] < 0) return -1;
  }
  if (b->chunk0[whole] < 0 && count) b->chunk0[whole] = ids[0];
  return count;
}

/* Writes whole tensor dst from its ranges, in order, on its rank. */
static void join(nd__builder *b, int32_t dst, const int32_t *ranges, int n, int k, int64_t comm_bytes) {
  const nd_tensor *t = &b->g->tensors[dst];
  nd__task_spec s;
  nd__spec_init(&s, ND_TASK_PARAM_GATHER, ND_PHASE_COLLECTIVE, t->home, -1, t->layer);
  s.t.group = ND_GROUP_DP;
  s.t.a.coll.n = t->bytes / 4;
  s.t.a.coll.dtype = ND_F32;
  s.t.a.coll.chunk = nd_dp_chunk(s.t.a.coll.n, k);
  s.t.a.coll.nparts = n;
  s.t.comm_bytes = comm_bytes;
  nd__acc(&s, dst, ND_ACCESS_W);
  for (int c = 0; c < n; c++) nd__acc(&s, ranges[c], ND_ACCESS_R);
  nd__emit(b, &s);
}

/* Cuts each replica's part into its k chunks: ch[d * k ...], counts[d]. */
static int cut(nd__builder *b, const int32_t *parts, int n, int k, int32_t *ch, int *count, int mb, int layer) {
  for (int d = 0; d < n; d++) {
    if ((count[d] = chunks_of(b, parts[d], k, ch + (size_t)d * k)) < 0) return -1;
    nd__reduce_scatter(b, b->g->tensors[parts[d]].home, &parts[d], 1, ch + (size_t)d * k, count[d], k, mb, layer);
  }
  return 0;
}

/* Chunk c of every replica, in replica order, into col: how many have it
 * (all or none: the replicas' parts have one size). */
static int column(const int32_t *ch, const int *count, int n, int k, int c, int32_t *col) {
  for (int d = 0; d < n; d++) {
    if (c >= count[d]) return 0;
    col[d] = ch[(size_t)d * k + c];
  }
  return n;
}

/* Replica d's m gradients as one flat tensor on its rank (the gradient
 * itself where m is 1): named after the bucket's first gradient, unique. */
static int32_t flatten(nd__builder *b, const int32_t *grads, int m, int k) {
  if (m == 1) return grads[0];
  int64_t numel = 0;
  for (int i = 0; i < m; i++) numel += b->g->tensors[grads[i]].bytes / 4;
  int32_t flat = dp_tensor(b, grads[0], "bucket", numel);
  if (flat >= 0) join(b, flat, grads, m, k, 0);
  return flat;
}

/* The summed flat tensor back into replica d's m gradients, in order. */
static void unflatten(nd__builder *b, int32_t flat, const int32_t *grads, int m) {
  int64_t offset = 0;
  for (int i = 0; i < m && m > 1; i++) {
    const nd_tensor *t = &b->g->tensors[grads[i]];
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_SENDRECV, ND_PHASE_COLLECTIVE, t->home, -1, t->layer);
    s.t.group = ND_GROUP_DP;
    s.t.a.send = (struct nd_send_args){t->bytes / 4, offset};
    nd__acc(&s, flat, ND_ACCESS_R);
    nd__acc(&s, grads[i], ND_ACCESS_W);
    nd__emit(b, &s);
    offset += t->bytes / 4;
  }
}

void nd__dp_chunked_allreduce(nd__builder *b, const int32_t *grads, int n, int m, int layer) {
  nd_graph *g = b->g;
  int32_t *ch = malloc((size_t)n * n * sizeof *ch), *col = malloc((size_t)n * sizeof *col);
  int32_t *flat = calloc((size_t)n, sizeof *flat);
  int *count = malloc((size_t)n * sizeof *count);
  if (!ch || !col || !flat || !count) goto oom;
  for (int d = 0; d < n; d++)
    if ((flat[d] = flatten(b, grads + (size_t)d * m, m, n)) < 0) goto oom;
  if (cut(b, flat, n, n, ch, count, -1, layer)) goto oom;
  for (int c = 0; c < n; c++)
    if (column(ch, count, n, n, c, col)) nd__allreduce_on(b, g->tensors[flat[c]].home, ND_GROUP_DP, col, n, -1, layer);
  /* the summed chunks, in order, back into each flat tensor, then its gradients: all on its rank */
  for (int d = 0; d < n; d++) {
    join(b, flat[d], ch + (size_t)d * n, count[d], n, 0);
    unflatten(b, flat[d], grads + (size_t)d * m, m);
  }
  goto done;
oom:
  b->oom = 1;
done:
  free(ch), free(col), free(flat), free(count);
}

void nd__dp_chunked_reduce_scatter(nd__builder *b, const int32_t *parts, const int32_t *outs, int n, int shards, int mb,
                                   int layer) {
  nd_graph *g = b->g;
  int32_t *ch = malloc((size_t)n * shards * sizeof *ch), *col = malloc((size_t)n * sizeof *col);
  int32_t *keep = malloc((size_t)n * sizeof *keep);
  int *count = malloc((size_t)n * sizeof *count);
  if (!ch || !col || !keep || !count || cut(b, parts, n, shards, ch, count, mb, layer)) {
    b->oom = 1;
    goto done;
  }
  for (int c = 0; c < shards; c++) {
    if (!column(ch, count, n, shards, c, col)) continue; /* its ranges stay zeros */
    int n_keep = 0;
    for (int p = c; p < n; p += shards) keep[n_keep++] = outs[p];
    nd__reduce_scatter(b, g->tensors[outs[c]].home, col, n, keep, n_keep, 1, mb, layer);
  }
done:
  free(ch), free(col), free(keep), free(count);
}

void nd__dp_chunked_shard_gather(nd__builder *b, const int32_t *copies, int n) {
  nd_graph *g = b->g;
  int32_t *own = malloc((size_t)n * sizeof *own);
  int count = 0;
  if (!own) {
    b->oom = 1;
    return;
  }
  /* each copy's own range, updated in place, into a chunk of its own */
  for (int k = 0; k < n; k++) {
    int64_t begin, len;
    nd_dp_range(g->tensors[copies[k]].bytes / 4, n, k, &begin, &len);
    if (len == 0) break; /* the empty ranges are the last ones */
    if ((own[count++] = new_chunk(b, copies[k], k, len)) < 0) break;
    const nd_tensor *w = &g->tensors[copies[k]]; /* after the new tensor: the array may have moved */
    nd__task_spec s;
    nd__spec_init(&s, ND_TASK_SENDRECV, ND_PHASE_COLLECTIVE, w->home, -1, w->layer);
    s.t.group = ND_GROUP_DP;
    s.t.a.send = (struct nd_send_args){len, begin};
    nd__acc(&s, copies[k], ND_ACCESS_R);
    nd__acc(&s, own[count - 1], ND_ACCESS_W);
    nd__emit(b, &s);
  }
  /* then every copy whole again from the ranges: the others' cross ranks */
  for (int k = 0; k < n && !b->oom; k++) {
    int64_t begin, len;
    nd_dp_range(g->tensors[copies[k]].bytes / 4, n, k, &begin, &len);
    join(b, copies[k], own, count, n, g->tensors[copies[k]].bytes - 4 * len);
  }
  free(own);
}
