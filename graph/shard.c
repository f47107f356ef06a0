/* The offsets of a parameter shard inside the whole Hugging Face tensor,
 * for checkpoints that any layout can read. */
#include "graph/shard.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

int64_t nd_shard_full_numel(const nd_tensor *t) {
  return t->ndim == 1 ? t->full_shape[0] : t->full_shape[0] * t->full_shape[1];
}

const char *nd_dp_shard_name(enum nd_dp_shard s) {
  static const char *const names[] = {"none", "optimizer", "gradients", "parameters"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

int64_t nd_dp_chunk(int64_t numel, int s) { return (numel + 8LL * s - 1) / (8LL * s) * 8; }

void nd_dp_range(int64_t numel, int s, int c, int64_t *begin, int64_t *n) {
  int64_t chunk = nd_dp_chunk(numel, s);
  *begin = c * chunk < numel ? c * chunk : numel;
  *n = *begin + chunk < numel ? chunk : numel - *begin;
}

static void copy_tp(const nd_tensor *t, float *full, float *shard, int to_full) {
  /* a vector is one row */
  int64_t rows = t->ndim == 1 ? 1 : t->shape[0];
  int64_t cols = t->shape[t->ndim - 1];
  int64_t full_cols = t->full_shape[t->ndim - 1];
  int64_t row0 = 0;
  /* column segments: (first full column, first shard column, length) */
  int64_t seg[3][3] = {{0, 0, cols}};
  int nseg = 1;
  int tp = t->home.tp;
  switch (t->shard) {
  case ND_SHARD_FULL:
    break;
  case ND_SHARD_COLS:
    seg[0][0] = tp * cols;
    break;
  case ND_SHARD_QKV_COLS:
    nseg = 3;
    for (int g = 0; g < 3; g++) {
      seg[g][0] = g * (full_cols / 3) + tp * (cols / 3);
      seg[g][1] = g * (cols / 3);
      seg[g][2] = cols / 3;
    }
    break;
  case ND_SHARD_ROWS:
    row0 = t->ndim == 1 ? 0 : tp * rows;
    break;
  case ND_SHARD_VOCAB:
    row0 = t->shard_begin;
    break;
  }
  for (int64_t r = 0; r < rows; r++)
    for (int s = 0; s < nseg; s++) {
      float *f = full + (row0 + r) * full_cols + seg[s][0];
      float *p = shard + r * cols + seg[s][1];
      size_t bytes = (size_t)seg[s][2] * sizeof(float);
      if (to_full)
        memcpy(f, p, bytes);
      else
        memcpy(p, f, bytes);
    }
}

/* Elements [begin, begin + n) of `whole` (a rank's tensor, in its own
 * layout) from or to `range`, through a copy of the whole: the range is
 * contiguous there, not in full. */
static int copy_range(const nd_tensor *whole, float *full, float *range, int64_t begin, int64_t n, int to_full) {
  float *w = malloc((size_t)(whole->bytes / 4) * sizeof *w);
  if (!w) return ND_ENOMEM;
  copy_tp(whole, full, w, 0);
  if (to_full) {
    memcpy(w + begin, range, (size_t)n * sizeof *w);
    copy_tp(whole, full, w, 1);
  } else {
    memcpy(range, w + begin, (size_t)n * sizeof *w);
  }
  free(w);
  return 0;
}

int nd_shard_copy(const nd_graph *g, int32_t i, float *full, float *shard, int to_full) {
  const nd_tensor *t = &g->tensors[i];
  if (t->dp_numel) {
    /* a gradient's range is padded to its chunk: only what it holds of the tensor */
    int64_t n = t->bytes / 4 < t->dp_numel - t->dp_begin ? t->bytes / 4 : t->dp_numel - t->dp_begin;
    return copy_range(&g->tensors[t->param], full, shard, t->dp_begin, n, to_full);
  }
  copy_tp(t, full, shard, to_full);
  return 0;
}
