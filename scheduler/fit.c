/* Whether a step's tensors fit the machine, checked before anything is
 * allocated: a layout that needs more than a device has would otherwise grow
 * until the kernel's OOM killer ends it, losing the run. Every tensor lives in
 * host memory (the executor's blocks); a device holds those of its ranks too. */
#include <starpu.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/error.h"
#include "graph/plan.h"
#include "scheduler/hints.h"

static int64_t host_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? (int64_t)pages * size : -1;
}

static int too_big(const nd_config *cfg, const char *where, int64_t need, int64_t have, int ranks, nd_error *err) {
  return nd__fail(err, ND_ECONFIG,
                  "%s: the step needs %.2f GB of %s for %d rank%s (`ndgraph plan` shows it per rank), which has "
                  "%.2f GB: make the model or the batch smaller, or set runtime.allow_oversubscribe: true",
                  nd__config_origin(cfg, NULL), (double)need / 1e9, where, ranks, ranks == 1 ? "" : "s",
                  (double)have / 1e9);
}

int nd_sched_check_memory(const nd_graph *g, const nd_config *cfg, nd_error *err) {
  if (cfg->runtime.allow_oversubscribe) return 0;
  nd_unit units[STARPU_NMAXWORKERS];
  int n = nd_runtime_units(units, STARPU_NMAXWORKERS);
  nd_plan plan;
  nd_rank_map pl;
  if (nd_plan_compute(g, &plan)) return nd__fail(err, ND_ENOMEM, "planning: out of memory");
  int rc = nd_place(units, n, g->dp, g->pp, g->tp, &pl);
  if (rc) {
    nd_plan_free(&plan);
    return nd__fail(err, rc, "placement: cannot place %d ranks on %d workers", g->dp * g->pp * g->tp, n);
  }
  int64_t host = 0;
  int64_t *device = calloc(STARPU_MAXNODES, sizeof *device);
  int *ranks = calloc(STARPU_MAXNODES, sizeof *ranks);
  if (!device || !ranks) rc = nd__fail(err, ND_ENOMEM, "planning: out of memory");
  for (int r = 0; r < plan.n_ranks && !rc; r++) {
    int64_t bytes = 0;
    for (int k = 0; k < ND_TENSOR_KIND_COUNT; k++) bytes += plan.memory[r].bytes[k];
    host += bytes;
    int node = pl.units[pl.first[r]].node;
    if (node > 0 && node < STARPU_MAXNODES) device[node] += bytes, ranks[node]++;
  }
  int64_t have = host_bytes();
  if (!rc && have > 0 && host > have) rc = too_big(cfg, "host memory (RAM)", host, have, plan.n_ranks, err);
  for (int node = 1; node < STARPU_MAXNODES && !rc; node++) {
    starpu_ssize_t total = device[node] ? starpu_memory_get_total((unsigned)node) : -1;
    char where[64];
    snprintf(where, sizeof where, "device memory (memory node %d)", node);
    if (total > 0 && device[node] > total) rc = too_big(cfg, where, device[node], total, ranks[node], err);
  }
  free(device);
  free(ranks);
  nd_rank_map_free(&pl);
  nd_plan_free(&plan);
  return rc;
}
