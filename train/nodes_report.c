/* `ndgraph plan --nodes N`: the step's graph cut across N processes (the
 * placement `mpirun -np N ndgraph run` uses): each process's ranks, the tasks
 * it runs and the tasks it submits (its share plus the transfers it takes
 * part in) with the time their submission takes, and the bytes StarPU-MPI
 * sends between processes per step, by what they are for. */
#include <stdlib.h>

#include "common/error.h"
#include "tasks/exec.h"
#include "tasks/mpi.h"

int nd_launched_processes(int *process) {
  int n = nd_mpi_launched(process);
  return n > 0 ? n : 1;
}

int nd_nodes_report(const nd_config *cfg, int nodes, FILE *out, nd_error *err) {
  nd_graph *g = NULL;
  int64_t *visited = NULL, *runs = NULL, *sent = NULL;
  int *run_on = NULL;
  int rc = nd_graph_build(&g, cfg, 0, err);
  if (rc) return rc;
  if (nodes < 1) {
    rc = nd__fail(err, ND_EINVAL, "plan: --nodes %d: must be at least 1", nodes);
    goto done;
  }
  if ((rc = nd_mpi_check_layout(g, nodes, err))) goto done;
  visited = calloc((size_t)nodes, sizeof *visited);
  runs = calloc((size_t)nodes, sizeof *runs);
  sent = calloc((size_t)nodes * ND_MPI_TRAFFIC, sizeof *sent);
  run_on = nd_mpi_task_processes(g, nodes);
  if (!visited || !runs || !sent || !run_on) {
    rc = nd__fail(err, ND_ENOMEM, "plan: out of memory");
    goto done;
  }
  /* the first step sends what later ones do (nothing is cached across the
   * optimizer's writes): one step is the figure per step */
  int64_t bytes = nd_mpi_predict_bytes(g, nodes, 1, visited, sent);
  if (bytes < 0) {
    rc = nd__fail(err, ND_ENOMEM, "plan: out of memory");
    goto done;
  }
  for (int32_t i = 0; i < g->n_tasks; i++) runs[run_on[i]]++;
  fprintf(out, "nodes: %d processes, %d tasks per step, %.3f MB sent between processes per step\n", nodes, g->n_tasks,
          (double)bytes / 1e6);
  for (int p = 0; p < nodes; p++) {
    /* a process's ranks are a block in rank order: its first and last */
    nd_rank first = {-1, -1, -1}, last = first;
    for (int d = 0; d < g->dp; d++)
      for (int s = 0; s < g->pp; s++)
        for (int t = 0; t < g->tp; t++)
          if (nd_mpi_process_of(g, (nd_rank){d, s, t}, nodes) == p) {
            if (first.dp < 0) first = (nd_rank){d, s, t};
            last = (nd_rank){d, s, t};
          }
    fprintf(out, "  process %d: ranks d%dp%dt%d..d%dp%dt%d", p, first.dp, first.pp, first.tp, last.dp, last.pp,
            last.tp);
    const int64_t *c = sent + p * ND_MPI_TRAFFIC;
    fprintf(out,
            " | runs %lld tasks, submits %lld, sends %.3f MB (pipeline %.3f, data-parallel %.3f, other %.3f) | "
            "submission about %.1f ms\n",
            (long long)runs[p], (long long)visited[p], (double)(c[0] + c[1] + c[2]) / 1e6,
            (double)c[ND_MPI_PIPELINE] / 1e6, (double)c[ND_MPI_DATA_PARALLEL] / 1e6, (double)c[ND_MPI_OTHER] / 1e6,
            (double)visited[p] * ND_SUBMIT_US_PER_TASK / 1e3);
  }
  /* the data-parallel sums against a ring's bytes: each gradient's sum runs
   * on one process (in replica order), which matches a ring per process
   * when no gradient outweighs a process's share (docs/nodes.md) */
  int64_t grads = 0;
  for (int32_t i = 0; i < g->n_tasks; i++)
    if (g->tasks[i].kind == ND_TASK_ALLREDUCE && g->tasks[i].group == ND_GROUP_DP)
      grads += g->tensors[nd_task_access(g, &g->tasks[i])[0].tensor].bytes;
  if (grads > 0 && nodes > 1)
    fprintf(out,
            "  data-parallel gradients: %.3f MB per replica; a ring all-reduce over %d processes would send %.3f MB "
            "per process\n",
            (double)grads / 1e6, nodes, 2.0 * (nodes - 1) / nodes * (double)grads / 1e6);
done:
  free(visited);
  free(runs);
  free(sent);
  free(run_on);
  nd_graph_free(g);
  return rc;
}
