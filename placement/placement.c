/* Ranks onto units, in hwloc order. Where there are GPUs, ranks go on GPUs
 * only (several ranks share one when there are fewer GPUs than ranks), as
 * `ndgraph plan` places them on a GPU topology: a CPU core beside a GPU
 * would only slow its rank down. The CPU workers stay in the map for the
 * tasks a GPU cannot run (loading a batch). */
#include "placement/placement.h"

#include <stdlib.h>
#include <string.h>

#include "common/device.h"
#include "common/error.h"
#include "placement/topology.h"

static int cmp_unit(const void *a, const void *b) {
  const nd_unit *x = a, *y = b;
  /* by kind in common/device.c's order: GPUs first (where there are any,
   * ranks go on them alone), then CPU cores, then CPU-type devices (on a
   * node of both, the last ranks get the devices) */
  if (x->kind != y->kind) return nd_device_placement_rank(x->kind) - nd_device_placement_rank(y->kind);
  if (x->obj && y->obj) {
    int c = nd_topo_dfs_cmp(x->obj, y->obj);
    if (c) return c;
  }
  return (x->id > y->id) - (x->id < y->id);
}

/* Largest hop count inside units[s .. s + k). */
static int diameter(const nd_unit *u, int s, int k) {
  int d = 0;
  for (int i = s; i < s + k; i++)
    for (int j = i + 1; j < s + k; j++) {
      int h = nd_topo_hops(u[i].obj, u[j].obj);
      if (h > d) d = h;
    }
  return d;
}

/* The unit, of n, that stage p takes in zigzag (V) order: 0 .. n - 1, then
 * n - 1 .. 0, and again. */
static int zigzag_unit(int p, int n) {
  int q = p % (2 * n);
  return q < n ? q : 2 * n - 1 - q;
}

int nd_place(const nd_unit *units, int n_units, int dp, int pp, int tp, nd_rank_map *out) {
  memset(out, 0, sizeof *out);
  int n_ranks = dp * pp * tp;
  out->n_ranks = n_ranks;
  out->n_units = n_units;
  out->first = calloc((size_t)n_ranks, sizeof *out->first);
  out->count = calloc((size_t)n_ranks, sizeof *out->count);
  out->units = malloc((size_t)(n_units ? n_units : 1) * sizeof *out->units);
  if (!out->first || !out->count || !out->units || n_units < 1) {
    nd_rank_map_free(out);
    return n_units < 1 ? ND_EINVAL : ND_ENOMEM;
  }
  memcpy(out->units, units, (size_t)n_units * sizeof *units);
  qsort(out->units, (size_t)n_units, sizeof *out->units, cmp_unit);
  if (out->units[0].kind == nd_device_gpu_kind())
    while (out->units[n_units - 1].kind != nd_device_gpu_kind()) n_units--; /* the ranks' units: the GPUs */
  if (n_units < n_ranks) {
    /* a replica's stages share its units in V order (zigzag): unit u takes
     * stages u and 2U - 1 - u, so the first stage's unit also runs the last
     * (the loss and the first backward), as ZB-V places them (Qi et al.,
     * 2024); docs/scheduler.md, *Stages that share a worker* */
    int per_replica = n_units % dp == 0 ? n_units / dp : 0, zigzag = tp == 1 && per_replica > 0;
    for (int r = 0; r < n_ranks; r++) {
      out->first[r] =
          zigzag ? r / pp * per_replica + zigzag_unit(r % pp, per_replica) : (int)((long long)r * n_units / n_ranks);
      out->count[r] = 1;
    }
    return 0;
  }
  int per = n_units / n_ranks, k = per * tp, spare = n_units - per * n_ranks, cursor = 0;
  for (int group = 0; group < dp * pp; group++) {
    int best = cursor, best_d = diameter(out->units, cursor, k);
    for (int s = cursor + 1; s <= cursor + spare && s + k <= n_units; s++) {
      int d = diameter(out->units, s, k);
      if (d < best_d) best = s, best_d = d;
    }
    spare -= best - cursor;
    for (int t = 0; t < tp; t++) {
      out->first[group * tp + t] = best + t * per;
      out->count[group * tp + t] = per;
    }
    cursor = best + k;
  }
  return 0;
}

void nd_rank_map_free(nd_rank_map *p) {
  free(p->first);
  free(p->count);
  free(p->units);
  memset(p, 0, sizeof *p);
}

int nd_rank_map_mask_words(const nd_rank_map *p) {
  int top = 0;
  for (int i = 0; i < p->n_units; i++)
    if (p->units[i].id > top) top = p->units[i].id;
  return top / 32 + 1;
}

void nd_rank_map_mask(const nd_rank_map *p, int r, uint32_t *mask) {
  for (int i = p->first[r]; i < p->first[r] + p->count[r]; i++)
    if (p->units[i].id >= 0) mask[p->units[i].id / 32] |= UINT32_C(1) << (p->units[i].id % 32);
}
