/* Closeness and order over hwloc trees, and loading a topology. */
#include "placement/topology.h"

#include <string.h>

#define ND_TOPO_MAX_DEPTH 64
/* I/O children sort after the normal and memory children of the same parent. */
#define ND_TOPO_IO_RANK   (1 << 20)

/* Sibling ranks from the root down to obj; returns the length. */
static int path_of(hwloc_obj_t obj, int *path) {
  int rev[ND_TOPO_MAX_DEPTH], n = 0;
  for (hwloc_obj_t o = obj; o && o->parent && n < ND_TOPO_MAX_DEPTH; o = o->parent) {
    int io = hwloc_obj_type_is_io(o->type) || o->type == HWLOC_OBJ_MISC;
    rev[n++] = (int)o->sibling_rank + (io ? ND_TOPO_IO_RANK : 0);
  }
  for (int i = 0; i < n; i++) path[i] = rev[n - 1 - i];
  return n;
}

static int common_prefix(const int *a, int na, const int *b, int nb) {
  int k = 0;
  while (k < na && k < nb && a[k] == b[k]) k++;
  return k;
}

int nd_topo_hops(hwloc_obj_t a, hwloc_obj_t b) {
  if (!a || !b) return 0;
  int pa[ND_TOPO_MAX_DEPTH], pb[ND_TOPO_MAX_DEPTH];
  int na = path_of(a, pa), nb = path_of(b, pb);
  int k = common_prefix(pa, na, pb, nb);
  return (na - k) + (nb - k);
}

int nd_topo_dfs_cmp(hwloc_obj_t a, hwloc_obj_t b) {
  int pa[ND_TOPO_MAX_DEPTH], pb[ND_TOPO_MAX_DEPTH];
  int na = path_of(a, pa), nb = path_of(b, pb);
  int k = common_prefix(pa, na, pb, nb);
  if (k < na && k < nb) return pa[k] < pb[k] ? -1 : 1;
  return na < nb ? -1 : na > nb;
}
