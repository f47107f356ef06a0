/* Ownership across processes and what it costs, from the IR alone: which
 * process owns each rank, which tasks each process must see, and the bytes
 * StarPU-MPI will send (the same rules as its task insertion and cache). */
#include <stdlib.h>
#include <string.h>

#include "tasks/mpi.h"

int nd_mpi_process_of(const nd_graph *g, nd_rank r, int procs) {
  int64_t pairs = (int64_t)g->dp * g->pp, pair = (int64_t)r.dp * g->pp + r.pp;
  return (int)(pair * procs / pairs);
}

int nd_mpi_task_process(const nd_graph *g, const nd_task *t, int procs) {
  if (t->kind != ND_TASK_ALLREDUCE || t->group != ND_GROUP_DP) return nd_mpi_process_of(g, t->rank, procs);
  /* a replica's gradient sums over the replicas: each process coordinates
   * an equal share of them (the sum's order is the parts', wherever it runs) */
  /* the graph emits them one after another: by task index, round robin */
  const nd_access *acc = nd_task_access(g, t);
  int64_t index = t - g->tasks;
  return nd_mpi_process_of(g, g->tensors[acc[index % t->n_access].tensor].home, procs);
}

int nd_mpi_check_layout(const nd_graph *g, int procs, nd_error *err) {
  if (procs <= (int64_t)g->dp * g->pp) return 0;
  return nd__fail(err, ND_ECONFIG,
                  "mpirun: %d processes, but data_parallel_size %d x pipeline_parallel_size %d gives only %d "
                  "(replica, stage) groups to place (a tensor-parallel group stays in one process)",
                  procs, g->dp, g->pp, g->dp * g->pp);
}

static int32_t index_of(const int32_t *map, int32_t t) { return map ? map[t] : t; }

void nd_mpi_mark_readers(const nd_graph *g, const int32_t *map, const int *owner, int procs, uint8_t *reader) {
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    const nd_access *acc = nd_task_access(g, t);
    int x = nd_mpi_task_process(g, t, procs);
    for (int a = 0; a < t->n_access; a++) {
      int32_t k = index_of(map, acc[a].tensor);
      if ((acc[a].mode & ND_ACCESS_R) && owner[k] != x) reader[(int64_t)k * procs + x] = 1;
    }
  }
}

int nd_mpi_takes_part(const nd_graph *g, const nd_task *t, const int32_t *map, const int *owner, int procs,
                      const uint8_t *reader, int me) {
  if (nd_mpi_task_process(g, t, procs) == me) return 1;
  const nd_access *acc = nd_task_access(g, t);
  for (int a = 0; a < t->n_access; a++) {
    int32_t k = index_of(map, acc[a].tensor);
    if (owner[k] == me || ((acc[a].mode & ND_ACCESS_W) && reader[(int64_t)k * procs + me])) return 1;
  }
  return 0;
}

/* One fetch of a statistic to every process, then forgotten (tasks/mpi.c). */
static int64_t fetch(const nd_graph *g, int32_t k, const int *owner, int procs, uint8_t *held) {
  int64_t bytes = 0;
  for (int p = 0; p < procs; p++) {
    if (p != owner[k] && !held[(int64_t)k * procs + p]) bytes += g->tensors[k].bytes;
    held[(int64_t)k * procs + p] = 0;
  }
  return bytes;
}

int64_t nd_mpi_predict_bytes(const nd_graph *g, int procs, int steps, int64_t *visited) {
  int *owner = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *owner);
  /* held: a process's copy of a tensor it does not own is valid (StarPU-MPI's cache) */
  uint8_t *held = calloc((size_t)g->n_tensors * (size_t)procs + 1, 1);
  uint8_t *reader = calloc((size_t)g->n_tensors * (size_t)procs + 1, 1);
  if (!owner || !held || !reader) {
    free(owner), free(held), free(reader);
    return -1;
  }
  for (int32_t k = 0; k < g->n_tensors; k++) owner[k] = nd_mpi_process_of(g, g->tensors[k].home, procs);
  nd_mpi_mark_readers(g, NULL, owner, procs, reader);
  if (visited) {
    memset(visited, 0, (size_t)procs * sizeof *visited);
    for (int32_t i = 0; i < g->n_tasks; i++)
      for (int p = 0; p < procs; p++) visited[p] += nd_mpi_takes_part(g, &g->tasks[i], NULL, owner, procs, reader, p);
  }
  int64_t bytes = 0;
  int32_t normsq = nd_graph_find(g, "d0p0t0.grad_normsq");
  for (int s = 0; s < steps; s++) {
    for (int32_t i = 0; i < g->n_tasks; i++) {
      const nd_task *t = &g->tasks[i];
      const nd_access *acc = nd_task_access(g, t);
      int x = nd_mpi_task_process(g, t, procs);
      for (int a = 0; a < t->n_access; a++) {
        int32_t k = acc[a].tensor;
        if (!(acc[a].mode & ND_ACCESS_R) || owner[k] == x || held[(int64_t)k * procs + x]) continue;
        bytes += g->tensors[k].bytes;
        held[(int64_t)k * procs + x] = 1;
      }
      for (int a = 0; a < t->n_access; a++) {
        int32_t k = acc[a].tensor;
        if (!(acc[a].mode & ND_ACCESS_W)) continue;
        if (owner[k] != x) bytes += g->tensors[k].bytes; /* back to its owner */
        memset(held + (int64_t)k * procs, 0, (size_t)procs);
      }
    }
    /* the trainer reads each replica's loss, then the gradient norm */
    for (int d = 0; d < g->dp; d++) bytes += fetch(g, g->loss[d], owner, procs, held);
    if (normsq >= 0) bytes += fetch(g, normsq, owner, procs, held);
  }
  free(owner), free(held), free(reader);
  return bytes;
}
