/* The machine as hwloc sees it, read from this machine or from an XML file
 * written by `lstopo --of xml`, and the two relations placement and stealing
 * need: closeness of two objects and the depth-first order of the tree. */
#ifndef ND_PLACEMENT_TOPOLOGY_H
#define ND_PLACEMENT_TOPOLOGY_H

#include <hwloc.h>

#include "common/topology.h"

/* Hops from a to b through their lowest common ancestor (I/O objects
 * included, so two GPUs behind one PCIe switch are closer than two behind
 * different switches). 0 for the same object. */
int nd_topo_hops(hwloc_obj_t a, hwloc_obj_t b);
/* Depth-first order of the tree (children before I/O children), as strcmp. */
int nd_topo_dfs_cmp(hwloc_obj_t a, hwloc_obj_t b);

#endif
