/* Loading a machine's topology with hwloc, from this machine or from an XML
 * file written by `lstopo --of xml`: the placement, the reports and the
 * planner's simulated machine all start from it. */
#ifndef ND_COMMON_TOPOLOGY_H
#define ND_COMMON_TOPOLOGY_H

#include <hwloc.h>

#include "common/error.h"

/* Loads this machine (path NULL or "") or an hwloc XML file, with I/O
 * devices (GPUs are OS devices under PCI). */
int nd_topo_load(hwloc_topology_t *out, const char *path, nd_error *err);

/* Whether the hwloc XML file at path loads, as nd_topo_load says. */
int nd_topo_check(const char *path, nd_error *err);

/* Is this OS device a GPU (of any vendor API hwloc knows; common/device.c)? */
int nd_topo_is_gpu(hwloc_obj_t obj);

#endif
