/* What a run holds, measured (docs/memory.md): the tensors the executor
 * allocated per rank in main memory, what StarPU held on device memory
 * nodes, and the process's peak resident set. */
#include <sys/resource.h>

#include "tasks/exec.h"
#include "train/trainer_internal.h"

void nd_trainer_memory(nd_trainer *tr, nd_memory_use *out) {
  const nd_graph *g = nd__trainer_graph(tr);
  nd_exec *ex = nd__trainer_exec(tr);
  struct rusage ru;
  *out = (nd_memory_use){0};
  if (getrusage(RUSAGE_SELF, &ru) == 0) out->rss_peak = (long long)ru.ru_maxrss * 1024; /* KiB on Linux */
  for (int r = 0; r < g->dp * g->pp * g->tp; r++) {
    long long held = nd_exec_rank_bytes(ex, r);
    out->tensors += held;
    if (held > out->rank_peak) out->rank_peak = held, out->rank_of_peak = r;
  }
  out->device_peak = nd_exec_device_peak(ex);
}
