/* The machine the planner simulates, from the configuration: this machine's
 * cores and runtime.opencl_devices (as tasks/runtime.c starts StarPU on
 * them), or the GPUs of the hwloc XML in runtime.topology; device memory
 * from runtime.device_memory or the calibration, the bus from the calibration. */
#include "sim/machine.h"

#include <hwloc.h>
#include <stdio.h>
#include <string.h>

#include "common/device.h"
#include "common/topology.h"

/* StarPU's build here starts at most this many CPU workers (STARPU_MAXCPUS). */
#define ND_SIM_HOST_MAX_CPUS 4

/* Is o one of the topology's GPUs, each counted once: a device of the GPU
 * kind's API where any is listed (own: whether any is; hwloc may list one
 * GPU under several APIs), else any GPU OS device. */
static int is_gpu(hwloc_obj_t o, int own) {
  return nd_topo_is_gpu(o) && (!own || (o->subtype && strcmp(o->subtype, nd_device_gpu_subtype()) == 0));
}

/* The GPU after o in the topology's order (o NULL: the first), or NULL. */
static hwloc_obj_t next_gpu(hwloc_topology_t t, hwloc_obj_t o, int own) {
  do o = hwloc_get_next_osdev(t, o);
  while (o && !is_gpu(o, own));
  return o;
}

static int count_gpus(hwloc_topology_t t, int own) {
  int n = 0;
  for (hwloc_obj_t o = next_gpu(t, NULL, own); o; o = next_gpu(t, o, own)) n++;
  return n;
}

int nd_sim_machine_from(const nd_config *cfg, const nd_calibration *cal, nd_sim_machine *m, nd_error *err) {
  memset(m, 0, sizeof *m);
  const char *xml = cfg->runtime.topology;
  hwloc_topology_t t;
  int rc = nd_topo_load(&t, xml, err);
  if (rc) return rc;
  int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE), own = count_gpus(t, 1) > 0, gpus = count_gpus(t, own);
  int64_t ram = (int64_t)hwloc_get_root_obj(t)->total_memory;
  if (cores < 1) cores = 1;
  if (!xml[0] && cores > ND_SIM_HOST_MAX_CPUS) cores = ND_SIM_HOST_MAX_CPUS;
  int devices = gpus ? gpus : (int)cfg->runtime.devices[ND_BACKEND_OPENCL];
  int kind = gpus ? nd_device_gpu_kind() : ND_BACKEND_OPENCL;
  int cpus = gpus ? 0 : cfg->runtime.workers ? (int)cfg->runtime.workers : cores - devices;
  if (!gpus && cpus < 1) cpus = 1;
  if (cpus + devices > ND_SIM_MAX_WORKERS || devices + 1 > ND_SIM_MAX_NODES) {
    hwloc_topology_destroy(t);
    return nd__fail(err, ND_ECONFIG,
                    "%s: %d workers and %d devices: the planner simulates at most %d workers and %d devices",
                    nd__config_origin(cfg, NULL), cpus, devices, ND_SIM_MAX_WORKERS, ND_SIM_MAX_NODES - 1);
  }
  /* the workers keep their objects, as the runtime's units do (CPU worker w
   * on core w, the GPUs in the topology's order; an OpenCL device has none,
   * as scheduler/report.c's units), so that nd_place orders them alike */
  m->topology = t;
  m->n_nodes = 1 + devices;
  snprintf(m->node_name[0], sizeof m->node_name[0], "host");
  m->memory[0] = cal->memory[ND_BACKEND_CPU] ? cal->memory[ND_BACKEND_CPU] : ram;
  for (int w = 0; w < cpus; w++) {
    m->obj[m->n_workers] = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)w);
    m->kind[m->n_workers] = ND_BACKEND_CPU, m->node[m->n_workers++] = 0;
  }
  hwloc_obj_t gpu = NULL;
  for (int d = 0; d < devices; d++) {
    gpu = gpus ? next_gpu(t, gpu, own) : NULL;
    m->obj[m->n_workers] = gpu;
    m->kind[m->n_workers] = kind, m->node[m->n_workers++] = 1 + d;
    snprintf(m->node_name[1 + d], sizeof m->node_name[0], "%s%d", nd_device_name(kind), d);
    /* runtime.device_memory, where given, is the device's (a smaller card, or room kept for others) */
    m->memory[1 + d] = cfg->runtime.device_memory ? cfg->runtime.device_memory * 1024 * 1024 : cal->memory[kind];
  }
  for (int a = 0; a < m->n_nodes; a++)
    for (int b = 0; b < m->n_nodes; b++)
      m->bandwidth[a][b] =
          a && b ? (cal->device_device_bps > 0 ? cal->device_device_bps : cal->host_device_bps) : cal->host_device_bps;
  m->latency_s = cal->latency_s;
  return 0;
}

/* "2 cpu, 1 opencl": m's workers by kind, by their kinds' names. */
static void describe(const nd_sim_machine *m, char *buf, size_t size) {
  int count[ND_BACKEND_COUNT] = {0}, at = 0;
  for (int w = 0; w < m->n_workers; w++) count[m->kind[w]]++;
  buf[0] = 0;
  for (int k = 0; k < ND_BACKEND_COUNT; k++)
    if (count[k] && at >= 0 && (size_t)at < size)
      at += snprintf(buf + at, size - (size_t)at, "%s%d %s", at ? ", " : "", count[k], nd_device_name(k));
}

int nd_sim_machine_check_here(const nd_config *cfg, nd_error *err) {
  if (!cfg->runtime.topology[0]) return 0;
  nd_calibration cal;
  nd_calibration_default(&cal);
  nd_config here_cfg = *cfg;
  here_cfg.runtime.topology[0] = 0;
  nd_sim_machine there, here;
  int rc = nd_sim_machine_from(cfg, &cal, &there, err);
  if (rc) return rc;
  if ((rc = nd_sim_machine_from(&here_cfg, &cal, &here, err))) {
    nd_sim_machine_free(&there);
    return rc;
  }
  int same = there.n_workers == here.n_workers;
  for (int w = 0; same && w < here.n_workers; w++) same = there.kind[w] == here.kind[w];
  char a[64], b[64];
  describe(&there, a, sizeof a);
  describe(&here, b, sizeof b);
  nd_sim_machine_free(&there);
  nd_sim_machine_free(&here);
  if (same) return 0;
  return nd__fail(err, ND_ECONFIG,
                  "%s: runtime.topology describes another machine (%s workers; this one: %s): parallelism.auto plans "
                  "for the machine that trains (empty runtime.topology, or plan --auto for that machine and train "
                  "there with its --set list)",
                  cfg->runtime.topology, a, b);
}

void nd_sim_machine_free(nd_sim_machine *m) {
  if (m->topology) hwloc_topology_destroy(m->topology);
  memset(m->obj, 0, sizeof m->obj);
  m->topology = NULL;
}
