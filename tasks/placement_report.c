/* `ndgraph plan`: where each rank would run, on runtime.topology or here,
 * and the bytes a step moves between memory nodes (which needs what the
 * executor can run on each unit: hence tasks/). */
#include <stdlib.h>

#include "common/error.h"
#include "placement/topology.h"
#include "tasks/schedule.h"

static void print_unit(FILE *out, const nd_unit *u, int gpus) {
  if (u->kind == ND_BACKEND_OPENCL) {
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
  /* context ranks are placed as replicas (graph/ir.h) */
  int dp = (int)(c->parallelism.data_parallel_size * c->parallelism.context_parallel_size), pp = (int)c->parallelism.pipeline_parallel_size,
      tp = (int)c->parallelism.tensor_parallel_size;
  nd_rank_map pl = {0};
  nd_graph *g = NULL;
  if (n < 0 || (rc = nd_place(units, n, dp, pp, tp, &pl))) {
    rc = n < 0 ? n : rc;
    nd__fail(err, rc, "%s: cannot place %d ranks on %d %s",
             cfg->runtime.topology[0] ? cfg->runtime.topology : "this machine", dp * pp * tp, n,
             gpus ? "GPUs" : "cores");
    goto cleanup;
  }
  static const char *const modes[] = {"affinity", "strict", "free"};
  int mixed = pl.units[n - 1].kind != pl.units[0].kind;
  fprintf(out, "\nplacement: %s, scheduler %s, %d ranks on %d %s of %s%s\n", modes[cfg->runtime.placement],
          cfg->runtime.scheduler, dp * pp * tp, n,
          gpus    ? "GPUs"
          : mixed ? "units (CPU workers and OpenCL devices)"
                  : "cores",
          cfg->runtime.topology[0] ? cfg->runtime.topology : "this machine",
          n < dp * pp * tp ? " (ranks share workers)" : "");
  for (int r = 0; r < pl.n_ranks; r++) {
    fprintf(out, "  rank d%dp%dt%d -> workers", r / (pp * tp), r / tp % pp, r % tp);
    for (int i = pl.first[r]; i < pl.first[r] + pl.count[r]; i++) fprintf(out, " %d", pl.units[i].id);
    fprintf(out, " %s", mixed ? "devices" : gpus ? "devices" : "cores");
    for (int i = pl.first[r]; i < pl.first[r] + pl.count[r]; i++) {
      fputs(mixed && pl.units[i].kind == ND_BACKEND_CPU ? " cpu:" : " ", out);
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
  nd_unit_check can = {nd_exec_runs_on, NULL}; /* no executor: the built-in kernels */
  int64_t nvlink = 0, cross = nd_cross_node_bytes(g, &pl, &can, &nvlink);
  fprintf(out, "memory nodes: %lld bytes per step cross between memory nodes (%.2f MiB)\n", (long long)cross,
          (double)cross / 1048576.0);
  if (gpus)
    fprintf(out, "links: %lld bytes per step over NVLink (%.2f MiB), %lld over PCIe (%.2f MiB)\n", (long long)nvlink,
            (double)nvlink / 1048576.0, (long long)(cross - nvlink), (double)(cross - nvlink) / 1048576.0);
cleanup:
  nd_graph_free(g);
  nd_rank_map_free(&pl);
  free(units);
  hwloc_topology_destroy(topo);
  return rc;
}
