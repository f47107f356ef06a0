/* Placement on hwloc XML topologies shipped in tests/topologies/: this kind
 * of 2-core VM, a 2-socket server (2 x 8 cores, synthetic), and a node with
 * 8 GPUs in two NVLink groups of 4 (one PCIe switch per group). Tensor-
 * parallel groups must land on the closest units and pipeline neighbours
 * next to each other; with more ranks than units, ranks share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/config.h"
#include "scheduler/hints.h"
#include "placement/placement.h"
#include "placement/topology.h"
#include "tests/tap.h"

static char path[2048];

static const char *topo_path(const char *name) {
  const char *src = getenv("ND_SRCDIR");
  snprintf(path, sizeof path, "%s/tests/topologies/%s", src ? src : ".", name);
  return path;
}

static nd_config *config(const char *xml, int dp, int pp, int tp, int workers) {
  nd_config *cfg;
  nd_error err = {0};
  char a[4][2200];
  snprintf(a[0], sizeof a[0], "runtime.topology=%s", topo_path(xml));
  snprintf(a[1], sizeof a[1], "parallelism.data_parallel_size=%d", dp);
  snprintf(a[2], sizeof a[2], "parallelism.pipeline_parallel_size=%d", pp);
  snprintf(a[3], sizeof a[3], "parallelism.tensor_parallel_size=%d", tp);
  if (nd_config_new(&cfg)) return NULL;
  for (int i = 0; i < 4; i++)
    if (nd_config_set_assignment(cfg, a[i], &err)) goto bad;
  char w[64];
  snprintf(w, sizeof w, "runtime.workers=%d", workers);
  if (nd_config_set_assignment(cfg, w, &err) || nd_config_set_assignment(cfg, "model.n_layer=16", &err) ||
      nd_config_set_assignment(cfg, "model.n_head=8", &err))
    goto bad;
  return cfg;
bad:
  diag("config: %s", err.msg);
  nd_config_free(cfg);
  return NULL;
}

/* The ancestor of type `type` (package, or the PCIe switch for GPUs). */
static hwloc_obj_t above(hwloc_obj_t o, hwloc_obj_type_t type) {
  while (o && o->type != type) o = o->parent;
  return o;
}

typedef struct placed {
  hwloc_topology_t topo;
  nd_unit *units;
  int n, gpus;
  nd_rank_map map;
  int dp, pp, tp;
} placed;

static int place(placed *p, const char *xml, int dp, int pp, int tp, int workers) {
  memset(p, 0, sizeof *p);
  nd_error err = {0};
  nd_config *cfg = config(xml, dp, pp, tp, workers);
  if (!cfg || nd_topo_load(&p->topo, topo_path(xml), &err)) {
    diag("%s", err.msg);
    nd_config_free(cfg);
    return -1;
  }
  p->n = nd_plan_units(p->topo, cfg, &p->units, &p->gpus);
  nd_config_free(cfg);
  p->dp = dp, p->pp = pp, p->tp = tp;
  return p->n > 0 ? nd_place(p->units, p->n, dp, pp, tp, &p->map) : -1;
}

static void unplace(placed *p) {
  nd_rank_map_free(&p->map);
  free(p->units);
  hwloc_topology_destroy(p->topo);
}

static hwloc_obj_t unit_of(const placed *p, int rank, int i) { return p->map.units[p->map.first[rank] + i].obj; }

/* Every unit of every rank of each TP group under one object of `type`. */
static int groups_within(const placed *p, hwloc_obj_type_t type) {
  for (int g = 0; g < p->dp * p->pp; g++) {
    hwloc_obj_t common = above(unit_of(p, g * p->tp, 0), type);
    for (int t = 0; t < p->tp; t++)
      for (int i = 0; i < p->map.count[g * p->tp + t]; i++)
        if (above(unit_of(p, g * p->tp + t, i), type) != common) return 0;
  }
  return 1;
}

/* No unit used by two ranks. */
static int disjoint(const placed *p) {
  for (int a = 0; a < p->map.n_ranks; a++)
    for (int b = a + 1; b < p->map.n_ranks; b++)
      for (int i = 0; i < p->map.count[a]; i++)
        for (int j = 0; j < p->map.count[b]; j++)
          if (unit_of(p, a, i) == unit_of(p, b, j)) return 0;
  return 1;
}

int main(void) {
  placed p;
  /* the 2-core VM */
  ok(place(&p, "vm-2core.xml", 1, 2, 1, 0) == 0 && p.n == 2 && !p.gpus, "vm: 2 cores");
  ok(p.map.count[0] == 1 && p.map.count[1] == 1 && disjoint(&p), "vm pp=2: one core per stage");
  unplace(&p);
  ok(place(&p, "vm-2core.xml", 2, 2, 1, 0) == 0 && p.map.first[0] == p.map.first[1] &&
         p.map.first[2] == p.map.first[3] && p.map.first[0] != p.map.first[2],
     "vm dp=2 pp=2: 4 ranks share 2 cores, one replica per core");
  unplace(&p);

  ok(place(&p, "vm-2core.xml", 1, 4, 1, 0) == 0 && p.map.first[0] == p.map.first[3] &&
         p.map.first[1] == p.map.first[2] && p.map.first[0] != p.map.first[1],
     "vm pp=4: stages share the 2 cores in V order, the first stage's core runs the last");
  unplace(&p);
  ok(place(&p, "vm-2core.xml", 1, 6, 1, 0) == 0 && p.map.first[0] == p.map.first[3] &&
         p.map.first[0] == p.map.first[4] && p.map.first[1] == p.map.first[2] && p.map.first[1] == p.map.first[5] &&
         p.map.first[0] != p.map.first[1],
     "vm pp=6: zigzag, three stages a core");
  unplace(&p);
  ok(place(&p, "two-socket.xml", 2, 16, 1, 0) == 0 && p.map.first[0] == p.map.first[15] &&
         p.map.first[7] == p.map.first[8] && p.map.first[16] == p.map.first[31] && p.map.first[0] != p.map.first[16],
     "two-socket dp=2 pp=16 on 16 cores: each replica's stages in V order on its own 8 cores");
  unplace(&p);

  /* the 2-socket server */
  ok(place(&p, "two-socket.xml", 2, 1, 8, 0) == 0 && p.n == 16, "two-socket: 16 cores");
  ok(disjoint(&p) && groups_within(&p, HWLOC_OBJ_PACKAGE), "two-socket tp=8 dp=2: each TP group on one socket");
  unplace(&p);
  ok(place(&p, "two-socket.xml", 2, 2, 4, 0) == 0 && groups_within(&p, HWLOC_OBJ_PACKAGE) &&
         above(unit_of(&p, 0, 0), HWLOC_OBJ_PACKAGE) == above(unit_of(&p, 4, 0), HWLOC_OBJ_PACKAGE),
     "two-socket tp=4 pp=2 dp=2: TP groups within a socket, stages 0 and 1 of a replica on the same socket");
  unplace(&p);
  ok(place(&p, "two-socket.xml", 2, 1, 6, 0) == 0 && disjoint(&p) && groups_within(&p, HWLOC_OBJ_PACKAGE),
     "two-socket tp=6 dp=2: the second TP group skips spare cores rather than straddle the sockets");
  unplace(&p);
  ok(place(&p, "two-socket.xml", 1, 2, 2, 0) == 0 &&
         hwloc_get_common_ancestor_obj(p.topo, unit_of(&p, 0, 0), unit_of(&p, 1, 0))->type == HWLOC_OBJ_L3CACHE,
     "two-socket tp=2 pp=2 on 16 cores: a TP pair shares an L3");
  unplace(&p);

  /* 8 GPUs, two NVLink groups of 4 behind two PCIe switches */
  ok(place(&p, "gpu8-nvlink2x4.xml", 2, 1, 4, 0) == 0 && p.n == 8 && p.gpus, "gpu8: 8 GPUs");
  ok(disjoint(&p) && groups_within(&p, HWLOC_OBJ_BRIDGE), "gpu8 tp=4 dp=2: each TP group is one NVLink group");
  unplace(&p);
  ok(place(&p, "gpu8-nvlink2x4.xml", 1, 2, 4, 0) == 0 && groups_within(&p, HWLOC_OBJ_BRIDGE),
     "gpu8 tp=4 pp=2: each stage is one NVLink group");
  unplace(&p);
  ok(place(&p, "gpu8-nvlink2x4.xml", 2, 2, 2, 0) == 0 && groups_within(&p, HWLOC_OBJ_BRIDGE) &&
         above(unit_of(&p, 0, 0), HWLOC_OBJ_BRIDGE) == above(unit_of(&p, 2, 0), HWLOC_OBJ_BRIDGE),
     "gpu8 tp=2 pp=2 dp=2: TP pairs and pipeline neighbours inside an NVLink group");
  unplace(&p);
  ok(place(&p, "gpu8-nvlink2x4.xml", 2, 2, 4, 0) == 0 && p.map.n_ranks == 16 && groups_within(&p, HWLOC_OBJ_BRIDGE),
     "gpu8 16 ranks on 8 GPUs: ranks share, TP groups still inside an NVLink group");
  unplace(&p);

  /* a node's runtime units with CUDA workers: the GPUs take the ranks, the
   * CPU workers stay in the map (for what a GPU cannot run) and take none */
  nd_unit mixed[4] = {{NULL, 0, ND_BACKEND_CPU, 0, 0},
                      {NULL, 1, ND_BACKEND_CPU, 0, 1},
                      {NULL, 2, ND_BACKEND_CUDA, 1, 0},
                      {NULL, 3, ND_BACKEND_CUDA, 2, 1}};
  nd_rank_map m;
  int placed_ok = nd_place(mixed, 4, 1, 4, 1, &m) == 0, on_gpus = placed_ok && m.n_units == 4;
  for (int r = 0; on_gpus && r < 4; r++)
    on_gpus = m.count[r] == 1 && m.units[m.first[r]].kind == ND_BACKEND_CUDA &&
              m.units[m.first[r]].id == 2 + (r == 1 || r == 2);
  ok(on_gpus, "2 CPU workers + 2 GPUs, pp=4: two stages per GPU in V order (0 and 3, 1 and 2), none on a CPU worker, "
              "CPU workers "
              "kept in the map");
  if (placed_ok) nd_rank_map_free(&m);
  placed_ok = nd_place(mixed, 4, 1, 1, 1, &m) == 0;
  ok(placed_ok && m.count[0] == 2 && m.units[m.first[0]].kind == ND_BACKEND_CUDA &&
         m.units[m.first[0] + 1].kind == ND_BACKEND_CUDA,
     "2 CPU workers + 2 GPUs, one rank: both GPUs, no CPU worker");
  if (placed_ok) nd_rank_map_free(&m);

  /* the map's order of kinds is placement's own (GPUs, CPU cores, OpenCL
   * devices), not the device enum's numbers (cpu, cuda, opencl) */
  nd_unit kinds[4] = {{NULL, 0, ND_BACKEND_OPENCL, 1, 0},
                      {NULL, 1, ND_BACKEND_CPU, 0, 0},
                      {NULL, 2, ND_BACKEND_CUDA, 2, 0},
                      {NULL, 3, ND_BACKEND_CPU, 0, 1}};
  placed_ok = nd_place(kinds, 4, 1, 1, 1, &m) == 0;
  ok(placed_ok && m.units[0].id == 2 && m.units[1].id == 1 && m.units[2].id == 3 && m.units[3].id == 0 &&
         m.first[0] == 0 && m.count[0] == 1,
     "a GPU, 2 CPU workers and an OpenCL device: sorted GPU, CPU, CPU, OpenCL; the rank on the GPU");
  if (placed_ok) nd_rank_map_free(&m);
  placed_ok = nd_place(kinds, 2, 1, 2, 1, &m) == 0;
  ok(placed_ok && m.units[m.first[0]].kind == ND_BACKEND_CPU && m.units[m.first[1]].kind == ND_BACKEND_OPENCL,
     "an OpenCL device listed before a CPU worker, pp=2: the first stage on the CPU worker, the last on the device");
  if (placed_ok) nd_rank_map_free(&m);

  /* ndgraph plan's mapping lines */
  nd_config *cfg = config("gpu8-nvlink2x4.xml", 2, 1, 4, 0);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  nd_error err = {0};
  int rc = cfg && f ? nd_placement_report(cfg, f, &err) : -1;
  if (f) fclose(f);
  ok(rc == 0 && text && strstr(text, "rank d0p0t0 -> workers 0 devices cuda0@0000:12:00.0") &&
         strstr(text, "rank d1p0t3 -> workers 7 devices cuda7"),
     "plan prints rank -> workers and devices");
  if (text) diag("%s", text);
  free(text);
  nd_config_free(cfg);
  return done_testing();
}
