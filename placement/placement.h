/* Placement: which workers (cores or devices) each mesh rank (dp, pp, tp)
 * runs on. Units are taken in depth-first order of the hwloc tree, so that
 * consecutive units share the most hardware; ranks are numbered with tp
 * fastest, then pp, then dp (nd_rank_index), so a tensor-parallel group gets
 * neighbouring units and neighbouring pipeline stages sit next to each other.
 * A tensor-parallel group is moved forward, wasting spare units, when that
 * keeps it under one smaller subtree (one L3, one NUMA node, one PCIe
 * switch). With more ranks than units, ranks share units: a replica's
 * stages in V order (the unit of the first stage also runs the last) where
 * the units divide evenly among the replicas and tp is 1, else consecutive
 * ranks. Units are sorted GPUs first, then CPU cores, then OpenCL
 * devices. Where there are GPUs, ranks go on the GPUs alone and the CPU
 * units stay in the map for the tasks a GPU cannot run; on a node of CPU
 * cores and OpenCL devices, with one unit per rank, the first ranks get CPU
 * workers and the last get devices. */
#ifndef ND_PLACEMENT_PLACEMENT_H
#define ND_PLACEMENT_PLACEMENT_H

#include <hwloc.h>
#include <stdint.h>

#include "ndgraph/kernel.h"

typedef struct nd_unit {
  hwloc_obj_t obj; /* core, PU or GPU OS device; NULL when unknown */
  int id;          /* StarPU worker id, or an index for planning */
  int kind;        /* what it computes on: enum nd_kernel_backend (a GPU: nd_device_gpu_kind()) */
  int node;        /* memory node: 0, host memory, for every CPU unit; each device its own */
  int devid;       /* device number within its kind (OpenCL devices: opencl0, opencl1, ...) */
} nd_unit;

typedef struct nd_rank_map {
  int n_ranks;
  int *first, *count; /* rank r: units[first[r] .. first[r] + count[r]) */
  nd_unit *units;     /* the units, in depth-first order */
  int n_units;
} nd_rank_map;

/* units is copied and sorted, GPUs first; with GPUs, ranks go on the GPUs alone. */
int nd_place(const nd_unit *units, int n_units, int dp, int pp, int tp, nd_rank_map *out);
void nd_rank_map_free(nd_rank_map *p);
/* Worker bitmaps are arrays of 32-bit words (StarPU's workerids layout),
 * as many as the largest unit id needs: no limit on the worker count. */
int nd_rank_map_mask_words(const nd_rank_map *p);
/* ORs the bits (bit id) of rank r's workers into mask[nd_rank_map_mask_words]. */
void nd_rank_map_mask(const nd_rank_map *p, int r, uint32_t *mask);

#endif
