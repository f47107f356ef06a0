/* `ndgraph plan`: where each rank would run, on runtime.topology or here.
 * The units are the topology's GPUs when it has any, else its cores (as
 * many as runtime.workers asks, all when 0; on this machine, capped as
 * StarPU caps its CPU workers). */
#include <starpu.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "scheduler/hints.h"
#include "scheduler/topology.h"

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
    u[n] = (nd_unit){o, n, ND_UNIT_GPU, n + 1, n};
    n++;
  }
  *gpus = n > 0;
  if (!n) {
    /* as nd_runtime_start counts: the OpenCL devices leave their cores to their own threads */
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE), ocl = (int)cfg->runtime.opencl_devices;
    int want = cfg->runtime.workers > 0 ? (int)cfg->runtime.workers : cores > ocl ? cores - ocl : 1;
    if (!cfg->runtime.topology[0] && want > STARPU_MAXCPUS) want = STARPU_MAXCPUS;
    if (want > cores) want = cores;
    nd_unit *bigger = realloc(u, (size_t)(want + ocl > 0 ? want + ocl : 1) * sizeof *u);
    if (!bigger) return free(u), ND_ENOMEM;
    u = bigger;
    for (int i = 0; i < want; i++)
      u[n++] = (nd_unit){hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)i), i, ND_UNIT_CPU, 0, i};
    for (int d = 0; d < ocl; d++) u[n++] = (nd_unit){NULL, want + d, ND_UNIT_OPENCL, d + 1, d};
  }
  *out = u;
  return n;
}

static void print_unit(FILE *out, const nd_unit *u, int gpus) {
  if (u->kind == ND_UNIT_OPENCL) {
    fprintf(out, "opencl%d", u->devid);
  } else if (gpus) {
    fprintf(out, "%s", u->obj->name ? u->obj->name : "gpu");
    hwloc_obj_t p = u->obj->parent;
    while (p && p->type != HWLOC_OBJ_PCI_DEVICE) p = p->parent;
    if (p)
      fprintf(out, "@%04x:%02x:%02x.%x", p->attr->pcidev.domain, p->attr->pcidev.bus, p->attr->pcidev.dev,
              p->attr->pcidev.func);
  } else {
    fprintf(out, "core%u", u->obj->logical_index);
  }
}

int nd_placement_report(const nd_config *cfg, FILE *out, nd_error *err) {
  hwloc_topology_t topo;
  int rc = nd_topo_load(&topo, cfg->runtime.topology, err);
  if (rc) return rc;
  nd_unit *units = NULL;
  int gpus = 0, n = nd_plan_units(topo, cfg, &units, &gpus);
  const struct nd_config *c = cfg;
  int dp = (int)c->parallelism.data_parallel_size, pp = (int)c->parallelism.pipeline_parallel_size,
      tp = (int)c->parallelism.tensor_parallel_size;
  nd_rank_map pl = {0};
  nd_graph *g = NULL;
  if (n < 0 || (rc = nd_place(units, n, dp, pp, tp, &pl))) {
    rc = n < 0 ? n : rc;
    nd__fail(err, rc, "%s: cannot place %d ranks on %d %s", cfg->runtime.topology[0] ? cfg->runtime.topology : "this machine",
             dp * pp * tp, n, gpus ? "GPUs" : "cores");
    goto cleanup;
  }
  static const char *const modes[] = {"affinity", "strict", "free"};
  int mixed = pl.units[n - 1].kind != pl.units[0].kind;
  fprintf(out, "\nplacement: %s, scheduler %s, %d ranks on %d %s of %s%s\n", modes[cfg->runtime.placement],
          cfg->runtime.scheduler, dp * pp * tp, n, gpus ? "GPUs" : mixed ? "units (CPU workers and OpenCL devices)" : "cores",
          cfg->runtime.topology[0] ? cfg->runtime.topology : "this machine",
          n < dp * pp * tp ? " (ranks share workers)" : "");
  for (int r = 0; r < pl.n_ranks; r++) {
    fprintf(out, "  rank d%dp%dt%d -> workers", r / (pp * tp), r / tp % pp, r % tp);
    for (int i = pl.first[r]; i < pl.first[r] + pl.count[r]; i++) fprintf(out, " %d", pl.units[i].id);
    fprintf(out, " %s", mixed ? "devices" : gpus ? "devices" : "cores");
    for (int i = pl.first[r]; i < pl.first[r] + pl.count[r]; i++) {
      fputs(mixed && pl.units[i].kind == ND_UNIT_CPU ? " cpu:" : " ", out);
      print_unit(out, &pl.units[i], gpus);
    }
    if (mixed || gpus) {
      fprintf(out, " (memory node%s", pl.count[r] > 1 ? "s" : "");
      for (int i = pl.first[r]; i < pl.first[r] + pl.count[r]; i++) fprintf(out, " %d", pl.units[i].node);
      fputc(')', out);
    }
    fputc('\n', out);
  }
  if ((rc = nd_graph_build(&g, cfg, 0, err))) goto cleanup;
  int64_t cross = nd_cross_node_bytes(g, &pl);
  fprintf(out, "memory nodes: %lld bytes per step cross between memory nodes (%.2f MiB)\n", (long long)cross,
          (double)cross / 1048576.0);
cleanup:
  nd_graph_free(g);
  nd_rank_map_free(&pl);
  free(units);
  hwloc_topology_destroy(topo);
  return rc;
}
