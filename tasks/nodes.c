/* The exchange of tasks/nodes.h: a fixed-size description per process,
 * gathered to every process once, before any task runs. */
#include "tasks/nodes.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "placement/topology.h"
#include "tasks/exec.h"
#include "tasks/mpi.h"

static nd_node_info *nodes; /* [nd_mpi_size()] */

static int count(hwloc_topology_t topo, hwloc_obj_type_t type) {
  int n = hwloc_get_nbobjs_by_type(topo, type);
  return n > 0 ? n : 0;
}

int nd_nodes_exchange(nd_error *err) {
  nd_node_info me = {0};
  if (gethostname(me.host, sizeof me.host - 1) != 0) strcpy(me.host, "?");
  hwloc_topology_t topo;
  int rc = nd_topo_load(&topo, NULL, err);
  if (rc) return rc;
  me.packages = count(topo, HWLOC_OBJ_PACKAGE);
  me.numa_nodes = count(topo, HWLOC_OBJ_NUMANODE);
  me.cores = count(topo, HWLOC_OBJ_CORE);
  me.pus = count(topo, HWLOC_OBJ_PU);
  hwloc_topology_destroy(topo);
  for (int b = 0; b < ND_BACKEND_COUNT; b++) me.devices[b] = b == ND_BACKEND_CPU ? nd_runtime_workers() : nd_runtime_devices(b);
  nd_node_info *all = calloc((size_t)nd_mpi_size(), sizeof *all);
  if (!all) return nd__fail(err, ND_ENOMEM, "mpirun: out of memory");
  nd_mpi_allgather(&me, sizeof me, all);
  free(nodes);
  nodes = all;
  return 0;
}

const nd_node_info *nd_nodes_get(int p) { return nodes && p >= 0 && p < nd_mpi_size() ? &nodes[p] : NULL; }
