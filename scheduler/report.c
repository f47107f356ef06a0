/* The units `ndgraph plan` places ranks on, on runtime.topology or here:
 * the topology's GPUs when it has any, else its cores (as many as
 * runtime.workers asks, all when 0; on this machine, capped as StarPU caps
 * its CPU workers). The report itself is tasks/placement_report.c. */
#include <starpu.h>
#include <stdlib.h>
#include <string.h>

#include "common/device.h"
#include "common/error.h"
#include "scheduler/hints.h"
#include "placement/topology.h"

int nd_plan_units(hwloc_topology_t topo, const nd_config *cfg, nd_unit **out, int *gpus) {
  int n = 0, cap = 64;
  nd_unit *u = malloc((size_t)cap * sizeof *u);
  if (!u) return ND_ENOMEM;
  for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(topo, o));) {
    if (!nd_topo_is_gpu(o)) continue;
    if (n == cap) {
      nd_unit *bigger = realloc(u, (size_t)(cap *= 2) * sizeof *u);
      if (!bigger) return free(u), ND_ENOMEM;
      u = bigger;
    }
    u[n] = (nd_unit){o, n, nd_device_gpu_kind(), n + 1, n};
    n++;
  }
  *gpus = n > 0;
  if (!n) {
    /* as nd_runtime_start counts: the OpenCL devices leave their cores to their own threads */
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE), ocl = (int)cfg->runtime.devices[ND_BACKEND_OPENCL];
    int want = cfg->runtime.workers > 0 ? (int)cfg->runtime.workers : cores > ocl ? cores - ocl : 1;
    if (!cfg->runtime.topology[0] && want > STARPU_MAXCPUS) want = STARPU_MAXCPUS;
    if (want > cores) want = cores;
    nd_unit *bigger = realloc(u, (size_t)(want + ocl > 0 ? want + ocl : 1) * sizeof *u);
    if (!bigger) return free(u), ND_ENOMEM;
    u = bigger;
    for (int i = 0; i < want; i++)
      u[n++] = (nd_unit){hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)i), i, ND_BACKEND_CPU, 0, i};
    for (int d = 0; d < ocl; d++) u[n++] = (nd_unit){NULL, want + d, ND_BACKEND_OPENCL, d + 1, d};
  }
  *out = u;
  return n;
}
