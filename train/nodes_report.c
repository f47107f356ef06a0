/* `ndgraph plan --nodes N`: the step cut across N processes (the placement
 * `mpirun -np N ndgraph run` uses): each process's ranks, the tasks it runs
 * and the tasks it submits (its share plus the transfers it takes part in)
 * with the time their submission takes, and the bytes StarPU-MPI sends and
 * receives between processes per step, by what they are for. Each process's
 * figures come from its share alone (nd_graph_build_pairs), built one at a
 * time: the step itself is never built here. */
#include <stdlib.h>

#include "common/error.h"
#include "tasks/exec.h"
#include "tasks/mpi.h"
#include "tasks/schedule.h"

int nd_launched_processes(int *process) {
  int n = nd_mpi_launched(process);
  return n > 0 ? n : 1;
}

/* Process p's line; its ranks are a block in rank order: its first and last. */
static void print_process(const nd_graph *g, int nodes, int p, const nd_mpi_share *sh, FILE *out) {
  nd_rank first = {-1, -1, -1}, last = first;
  for (int d = 0; d < g->dp; d++)
    for (int s = 0; s < g->pp; s++)
      for (int t = 0; t < g->tp; t++)
        if (nd_mpi_process_of(g, (nd_rank){d, s, t}, nodes) == p) {
          if (first.dp < 0) first = (nd_rank){d, s, t};
          last = (nd_rank){d, s, t};
        }
  const int64_t *c = sh->sent;
  fprintf(out,
          "  process %d: ranks d%dp%dt%d..d%dp%dt%d | runs %lld tasks, submits %lld, sends %.3f MB (pipeline %.3f, "
          "data-parallel %.3f, other %.3f), receives %.3f MB | submission about %.1f ms (%lld buffers at %.1f us)\n",
          p, first.dp, first.pp, first.tp, last.dp, last.pp, last.tp, (long long)sh->runs, (long long)sh->submits,
          (double)(c[0] + c[1] + c[2]) / 1e6, (double)c[ND_MPI_PIPELINE] / 1e6, (double)c[ND_MPI_DATA_PARALLEL] / 1e6,
          (double)c[ND_MPI_OTHER] / 1e6, (double)sh->received / 1e6, (double)sh->buffers * ND_SUBMIT_US_PER_BUFFER / 1e3,
          (long long)sh->buffers, ND_SUBMIT_US_PER_BUFFER);
  /* its data-parallel sums against a ring all-reduce of its own gradients
   * over its group (docs/nodes.md, The order of cross-process sums) */
  if (sh->dp_ring_bytes > 0)
    fprintf(out,
            "    data-parallel: sends %.3f MB, a ring over its group of %d: %.3f MB (%.2fx); its chunks "
            "hold %.3f MB\n",
            (double)c[ND_MPI_DATA_PARALLEL] / 1e6, sh->dp_group, (double)sh->dp_ring_bytes / 1e6,
            (double)c[ND_MPI_DATA_PARALLEL] / (double)sh->dp_ring_bytes, (double)sh->dp_chunk_bytes / 1e6);
}

/* Process p's share of cfg's step: built, measured, freed. */
static int share_of(const nd_config *cfg, const nd_graph *tail, const int *tail_on, int nodes, int p, uint8_t *pairs,
                    nd_mpi_share *sh, nd_error *err) {
  nd_graph *g = NULL;
  int32_t *chain_len = NULL;
  nd_mpi_share_pairs(tail, tail_on, nodes, p, pairs);
  int rc = nd_graph_build_pairs(&g, cfg, 0, pairs, nodes, err);
  /* submitted as the run submits them: a chain once (tasks/chain.h) */
  if (!rc && (!(chain_len = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *chain_len)) ||
              nd_sched_chains(g, cfg, chain_len) || nd_mpi_share_of(g, nodes, p, chain_len, sh)))
    rc = nd__fail(err, ND_ENOMEM, "plan: out of memory");
  free(chain_len);
  nd_graph_free(g);
  return rc;
}

int nd_nodes_report(const nd_config *cfg, int nodes, int process, FILE *out, nd_error *err) {
  nd_graph *tail = NULL;
  int *tail_on = NULL;
  uint8_t *pairs = NULL;
  nd_mpi_share *shares = NULL;
  if (nodes < 1) return nd__fail(err, ND_EINVAL, "plan: --nodes %d: must be at least 1", nodes);
  if (process >= nodes)
    return nd__fail(err, ND_EINVAL, "plan: --process %d: the processes of --nodes %d are 0 to %d", process, nodes,
                    nodes - 1);
  int lo = process < 0 ? 0 : process, hi = process < 0 ? nodes : process + 1, rc;
  /* the state and the optimizer tail alone (no pair built): where each sum
   * runs, and so which pairs each share needs */
  /* a pair per data-parallel rank (replica x context rank) and stage */
  if (!(pairs = calloc((size_t)(cfg->parallelism.data_parallel_size * cfg->parallelism.context_parallel_size *
                                cfg->parallelism.pipeline_parallel_size),
                       1)) ||
      !(shares = calloc((size_t)(hi - lo), sizeof *shares))) {
    rc = nd__fail(err, ND_ENOMEM, "plan: out of memory");
    goto done;
  }
  if ((rc = nd_graph_build_pairs(&tail, cfg, 0, pairs, nodes, err)) || (rc = nd_mpi_check_layout(tail, nodes, err)))
    goto done;
  if (!(tail_on = nd_mpi_task_processes(tail, nodes))) {
    rc = nd__fail(err, ND_ENOMEM, "plan: out of memory");
    goto done;
  }
  for (int p = lo; p < hi; p++)
    if ((rc = share_of(cfg, tail, tail_on, nodes, p, pairs, &shares[p - lo], err))) goto done;
  /* every task runs on one process and every byte is sent by one: the
   * step's totals are the shares' sums */
  int64_t tasks = 0, bytes = 0;
  for (int p = lo; p < hi; p++) {
    tasks += shares[p - lo].runs;
    for (int c = 0; c < ND_MPI_TRAFFIC; c++) bytes += shares[p - lo].sent[c];
  }
  if (process < 0)
    fprintf(out, "nodes: %d processes, %lld tasks per step, %.3f MB sent between processes per step\n", nodes,
            (long long)tasks, (double)bytes / 1e6);
  else
    fprintf(out, "nodes: process %d of %d, built alone\n", process, nodes);
  for (int p = lo; p < hi; p++) print_process(tail, nodes, p, &shares[p - lo], out);
done:
  free(pairs);
  free(shares);
  free(tail_on);
  nd_graph_free(tail);
  return rc;
}
