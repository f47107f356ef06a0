/* Ownership across processes and what it costs, from the IR alone: which
 * process owns each rank, which tasks each process must see, and the bytes
 * StarPU-MPI will send (the same rules as its task insertion and cache). */
#include <stdlib.h>
#include <string.h>

#include "tasks/mpi.h"

int nd_mpi_launched(int *process) {
  static const char *const vars[][2] = {{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, {"PMI_SIZE", "PMI_RANK"}};
  *process = 0;
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *n = getenv(vars[i][0]), *r = getenv(vars[i][1]);
    long size = n ? strtol(n, NULL, 10) : 0, rank = r ? strtol(r, NULL, 10) : 0;
    if (size < 1 || size > ND_MAX_RANKS || rank < 0 || rank >= size) continue;
    *process = (int)rank;
    return (int)size;
  }
  /* PMIx names this process but not how many there are */
  return getenv("PMIX_RANK") ? 1 : 0;
}

int nd_mpi_process_of(const nd_graph *g, nd_rank r, int procs) { return nd_process_of(g, r, procs); }

int *nd_mpi_task_processes(const nd_graph *g, int procs) {
  int *run_on = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *run_on);
  for (int32_t i = 0; run_on && i < g->n_tasks; i++) run_on[i] = nd_mpi_process_of(g, g->tasks[i].rank, procs);
  return run_on;
}

int nd_mpi_check_layout(const nd_graph *g, int procs, nd_error *err) {
  if (procs <= nd_process_units(g)) return 0;
  if (g->split_tp)
    return nd__fail(err, ND_ECONFIG, "mpirun: %d processes, but the mesh has only %d ranks to place", procs,
                    nd_process_units(g));
  return nd__fail(err, ND_ECONFIG,
                  "mpirun: %d processes, but data_parallel_size %d x pipeline_parallel_size %d gives only %d "
                  "(replica, stage) groups to place (a tensor-parallel group stays in one process unless "
                  "runtime.split_tensor_groups is true)",
                  procs, g->dp, g->pp, g->dp * g->pp);
}

static int32_t index_of(const int32_t *map, int32_t t) { return map ? map[t] : t; }

void nd_mpi_mark_readers(const nd_graph *g, const int *run_on, const int32_t *map, const int *owner, int procs,
                         uint8_t *reader) {
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    const nd_access *acc = nd_task_access(g, t);
    int x = run_on[i];
    for (int a = 0; a < t->n_access; a++) {
      int32_t k = index_of(map, acc[a].tensor);
      if ((acc[a].mode & ND_ACCESS_R) && owner[k] != x) reader[(int64_t)k * procs + x] = 1;
    }
  }
}

int nd_mpi_visits(const nd_graph *g, const int *run_on, const int32_t *map, const int *owner, int procs,
                  const uint8_t *reader, int me, uint8_t *visit) {
  int32_t n = 0; /* tensors of the owner graph */
  for (int32_t k = 0; k < g->n_tensors; k++)
    if (index_of(map, k) >= n) n = index_of(map, k) + 1;
  /* read[k]: me read tensor k (a copy it may still hold) since the last write it saw */
  uint8_t *read = malloc((size_t)(n ? n : 1));
  if (!read) return ND_ENOMEM;
  memset(read, 1, (size_t)n);
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    const nd_access *acc = nd_task_access(g, t);
    int mine = run_on[i] == me, see = mine;
    for (int a = 0; a < t->n_access; a++) {
      int32_t k = index_of(map, acc[a].tensor);
      if (owner[k] == me) see = 1;
      if (owner[k] == me || !reader[(int64_t)k * procs + me]) continue;
      if (mine && (acc[a].mode & ND_ACCESS_R)) read[k] = 1;
      if (!mine && (acc[a].mode & ND_ACCESS_W) && read[k]) see = 1, read[k] = 0;
    }
    visit[i] = (uint8_t)see;
  }
  free(read);
  return 0;
}

enum nd_mpi_traffic nd_mpi_traffic_of(const nd_task *t) {
  if (t->group == ND_GROUP_PP_NEXT || t->group == ND_GROUP_PP_PREV) return ND_MPI_PIPELINE;
  return t->group == ND_GROUP_DP ? ND_MPI_DATA_PARALLEL : ND_MPI_OTHER;
}

/* One send of tensor k's bytes by process `from` to process `to`, for traffic of class c. */
static int64_t send(const nd_graph *g, int32_t k, int from, int to, enum nd_mpi_traffic c, int64_t *sent,
                    int64_t *received) {
  sent[from * ND_MPI_TRAFFIC + c] += g->tensors[k].bytes;
  received[to] += g->tensors[k].bytes;
  return g->tensors[k].bytes;
}

/* One fetch of a statistic to every process, then forgotten (tasks/mpi.c). */
static int64_t fetch(const nd_graph *g, int32_t k, const int *owner, int procs, uint8_t *held, int64_t *sent,
                     int64_t *received) {
  int64_t bytes = 0;
  for (int p = 0; p < procs; p++) {
    if (p != owner[k] && !held[(int64_t)k * procs + p])
      bytes += send(g, k, owner[k], p, ND_MPI_OTHER, sent, received);
    held[(int64_t)k * procs + p] = 0;
  }
  return bytes;
}

/* What StarPU-MPI sends running graph g once on `procs` processes with
 * run_on (its caching rules: a copy is sent once until its tensor is
 * written; a task's written tensors go back to their owners), plus the
 * reads of the statistics after the step: bytes in all, or -1 when out of
 * memory; the bytes each process sends, by class (sent[p * ND_MPI_TRAFFIC
 * + class]), and receives. A later step sends what the first does: nothing
 * is cached across the optimizer's writes. */
static int64_t replay(const nd_graph *g, const int *run_on, const int *owner, int procs, int64_t *sent,
                      int64_t *received) {
  /* held: a process's copy of a tensor it does not own is valid (StarPU-MPI's cache) */
  uint8_t *held = calloc((size_t)g->n_tensors * (size_t)procs + 1, 1);
  if (!held) return -1;
  memset(sent, 0, (size_t)procs * ND_MPI_TRAFFIC * sizeof *sent);
  memset(received, 0, (size_t)procs * sizeof *received);
  int64_t bytes = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    const nd_access *acc = nd_task_access(g, t);
    int x = run_on[i];
    enum nd_mpi_traffic c = nd_mpi_traffic_of(t);
    for (int a = 0; a < t->n_access; a++) {
      int32_t k = acc[a].tensor;
      if (!(acc[a].mode & ND_ACCESS_R) || owner[k] == x || held[(int64_t)k * procs + x]) continue;
      bytes += send(g, k, owner[k], x, c, sent, received);
      held[(int64_t)k * procs + x] = 1;
    }
    for (int a = 0; a < t->n_access; a++) {
      int32_t k = acc[a].tensor;
      if (!(acc[a].mode & ND_ACCESS_W)) continue;
      if (owner[k] != x) bytes += send(g, k, x, owner[k], c, sent, received); /* back to its owner */
      memset(held + (int64_t)k * procs, 0, (size_t)procs);
    }
  }
  /* the trainer reads each replica's loss, then the gradient norm */
  for (int d = 0; d < g->dp; d++) bytes += fetch(g, g->loss[d], owner, procs, held, sent, received);
  if (g->grad_normsq >= 0) bytes += fetch(g, g->grad_normsq, owner, procs, held, sent, received);
  free(held);
  return bytes;
}

static int *owners(const nd_graph *g, int procs) {
  int *owner = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *owner);
  if (owner)
    for (int32_t k = 0; k < g->n_tensors; k++) owner[k] = nd_mpi_process_of(g, g->tensors[k].home, procs);
  return owner;
}

void nd_mpi_share_pairs(const nd_graph *tail, const int *run_on, int procs, int me, uint8_t *pairs) {
  const nd_graph *g = tail;
  memset(pairs, 0, (size_t)g->dp * g->pp);
  for (int d = 0; d < g->dp; d++)
    for (int s = 0; s < g->pp; s++)
      for (int t = 0; t < g->tp; t++) {
        if (nd_mpi_process_of(g, (nd_rank){d, s, t}, procs) != me) continue;
        /* its own work, and the next stage's: that stage's forward takes the
         * hand-over from this one, its backward sends the gradient back */
        pairs[d * g->pp + s] = 1;
        if (s + 1 < g->pp) pairs[d * g->pp + s + 1] = 1;
        /* under data_parallel_shard: parameters every replica's gathers of
         * this stage read the ranges it keeps */
        for (int e = 0; g->dp_shard == ND_DP_SHARD_PARAMETERS && e < g->dp; e++) pairs[e * g->pp + s] = 1;
      }
  /* a sum it runs reads other ranks' gradients: it sees every task of
   * their pairs that writes them (its cached copies are dropped) */
  for (int32_t i = 0; i < g->n_tasks; i++) {
    if (run_on[i] != me) continue;
    const nd_task *t = &g->tasks[i];
    const nd_access *acc = nd_task_access(g, t);
    for (int a = 0; a < t->n_access; a++) {
      const nd_tensor *k = &g->tensors[acc[a].tensor];
      if (k->kind == ND_TENSOR_GRAD || k->kind == ND_TENSOR_GRAD_BUF) pairs[k->home.dp * g->pp + k->home.pp] = 1;
    }
  }
}

int nd_mpi_share_of(const nd_graph *g, int procs, int me, const int32_t *chain_len, nd_mpi_share *out) {
  memset(out, 0, sizeof *out);
  int *owner = owners(g, procs), *run_on = nd_mpi_task_processes(g, procs);
  uint8_t *reader = calloc((size_t)g->n_tensors * (size_t)procs + 1, 1);
  int64_t *sent = malloc((size_t)procs * ND_MPI_TRAFFIC * sizeof *sent);
  int64_t *received = malloc((size_t)procs * sizeof *received);
  uint8_t *visit = NULL;
  int32_t *last = NULL;
  int rc = ND_ENOMEM;
  if (!owner || !run_on || !reader || !sent || !received) goto done;
  nd_mpi_mark_readers(g, run_on, NULL, owner, procs, reader);
  if (!(visit = malloc((size_t)(g->n_tasks ? g->n_tasks : 1))) ||
      nd_mpi_visits(g, run_on, NULL, owner, procs, reader, me, visit))
    goto done;
  /* a chain is submitted once, by the processes that see a member, with
   * each of its members' tensors once (last[k]: the chain that last counted
   * k); a task alone with each of its accesses */
  if (!(last = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *last))) goto done;
  for (int32_t k = 0; k < g->n_tensors; k++) last[k] = -1;
  for (int32_t i = 0, lead = 0, end = 0, part = 0, bufs = 0; i < g->n_tasks; i++) {
    int32_t len = chain_len ? chain_len[i] : 1;
    if (len > 0) lead = i, end = i + len - 1, part = 0, bufs = 0;
    out->runs += run_on[i] == me;
    part |= visit[i];
    const nd_access *acc = nd_task_access(g, &g->tasks[i]);
    int alone = !chain_len || chain_len[lead] == 1;
    for (int a = 0; a < g->tasks[i].n_access; a++)
      if (alone || last[acc[a].tensor] != lead) last[acc[a].tensor] = lead, bufs++;
    if (i == end && part) out->submits++, out->buffers += bufs;
  }
  if (replay(g, run_on, owner, procs, sent, received) < 0) goto done;
  memcpy(out->sent, sent + me * ND_MPI_TRAFFIC, sizeof out->sent);
  out->received = received[me];
  /* a ring's figure: 2 (P - 1) / P of each whole gradient of its ranks
   * whose data-parallel group of P spans processes */
  for (int32_t k = 0; k < g->n_tensors; k++) {
    const nd_tensor *t = &g->tensors[k];
    if (owner[k] != me) continue;
    if (t->kind == ND_TENSOR_DP_CHUNK) out->dp_chunk_bytes += t->bytes;
    if (t->kind != ND_TENSOR_GRAD || !nd_dp_spans(g, t->home.pp, t->home.tp, procs)) continue;
    out->dp_group = g->dp;
    out->dp_ring_bytes += 2 * (g->dp - 1) * (t->dp_numel ? 4 * t->dp_numel : t->bytes) / g->dp;
  }
  rc = 0;
done:
  free(owner), free(run_on), free(reader), free(sent), free(received), free(visit), free(last);
  return rc;
}

int nd_mpi_build_share(const nd_config *cfg, int procs, int me, nd_graph **step, nd_graph **eval, nd_error *err) {
  nd_graph *tail = NULL;
  int *tail_on = NULL, rc = ND_ENOMEM;
  /* a pair per data-parallel rank (replica x context rank) and stage */
  uint8_t *pairs = calloc((size_t)(cfg->parallelism.data_parallel_size * cfg->parallelism.context_parallel_size *
                                   cfg->parallelism.pipeline_parallel_size),
                          1);
  *step = *eval = NULL;
  if (!pairs) goto done;
  /* no pair: the state and the optimizer tail, where the sums run */
  if ((rc = nd_graph_build_pairs(&tail, cfg, 0, pairs, procs, err)) || (rc = nd_mpi_check_layout(tail, procs, err)))
    goto done;
  rc = ND_ENOMEM;
  if (!(tail_on = nd_mpi_task_processes(tail, procs))) goto done;
  nd_mpi_share_pairs(tail, tail_on, procs, me, pairs);
  /* the evaluation's forwards need no more pairs than the step's */
  if ((rc = nd_graph_build_pairs(step, cfg, 0, pairs, procs, err)) ||
      (rc = nd_graph_build_pairs(eval, cfg, 1, pairs, procs, err)))
    goto done;
done:
  if (rc == ND_ENOMEM) nd__fail(err, rc, "mpirun: out of memory building process %d's share", me);
  if (rc) {
    nd_graph_free(*step), nd_graph_free(*eval);
    *step = *eval = NULL;
  }
  free(pairs), free(tail_on);
  nd_graph_free(tail);
  return rc;
}
