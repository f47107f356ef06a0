/* Several processes (`mpirun -np N ndgraph run`, docs/nodes.md): every
 * process builds the same graph, each tensor is owned by the process of its
 * rank, and StarPU-MPI runs each task on the process of its rank and moves
 * the data between processes. Without mpirun (or in builds without
 * StarPU-MPI, tasks/mpi_none.c) there is one process and nothing here costs. */
#ifndef ND_TASKS_MPI_H
#define ND_TASKS_MPI_H

#include <starpu.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "graph/ir.h"

/* Joins the processes of an mpirun launch (MPI starts once per process) and
 * checks that all of them run the same configuration and plugins: `hash` of
 * each is compared, and a difference is refused (ND_ECONFIG) on every
 * process, naming the first process that differs from process 0. Without
 * mpirun: 0, nothing started. */
int nd_mpi_join(uint64_t hash, const char *source, nd_error *err);
/* The one place where a process's failure becomes the job's (docs/nodes.md):
 * every process passes its own status since the last agreement (rc, with
 * err) and all return the same, 0 when none failed, otherwise the code of
 * the first process that failed. Its err names it ("process P: ...", unless
 * every process failed alike: then the failure is the job's), the others'
 * standard error is closed so that the line is said once, and every exit is
 * clean (MPI finalized, not aborted). A later agreement keeps the first
 * line. A collective: every process calls it at the same point, with
 * nothing collective skipped on the way by a failure. Outside a launch, or
 * once apart: rc. */
int nd_mpi_agree(int rc, nd_error *err);
/* This process failed inside an exchange that the others wait on (they will
 * never reach an agreement): err names it, nothing here waits on the others
 * any more (StarPU-MPI's closing barrier is skipped) and its non-zero exit
 * aborts the job. Returns rc. */
int nd_mpi_apart(int rc, nd_error *err);
int nd_mpi_is_apart(void);
/* This process and how many there are: 0 and 1 outside a launch. */
int nd_mpi_rank(void);
int nd_mpi_size(void);

/* StarPU started (and stopped) through StarPU-MPI when joined. */
int nd_mpi_starpu_init(struct starpu_conf *conf);
void nd_mpi_starpu_shutdown(void);

/* Declares h's owner process and its tag (unique, the same on every process). */
void nd_mpi_register(starpu_data_handle_t h, int64_t tag, int owner);
/* Submits a task on process `node` with these buffers: this process posts
 * the transfers it takes part in; when it is `node`, fill(task, arg) sets
 * the task up before StarPU gets it. */
int nd_mpi_submit(struct starpu_codelet *cl, int node, starpu_data_handle_t *h, const enum starpu_data_access_mode *m,
                  int n, void (*fill)(struct starpu_task *task, void *arg), void *arg);
/* Waits for this process's tasks and transfers, then for every process. */
void nd_mpi_wait(void);
/* Brings h from its owner to every process (all call it), and after the read,
 * forgets the copies again, so that no process keeps a copy the graph does
 * not know of. */
void nd_mpi_fetch(starpu_data_handle_t h);
void nd_mpi_forget(starpu_data_handle_t h);
/* Bytes this process's StarPU-MPI sent so far (all destinations). */
int64_t nd_mpi_bytes_sent(void);
/* Sum over the processes (a collective on the submitting thread). */
int64_t nd_mpi_sum(int64_t v);
/* The largest v over the processes (a collective on the submitting thread). */
int nd_mpi_max(int v);
/* The processes agreed to stop: this one's exit, whatever its status, is
 * a clean one (MPI finalized) and not a failure that aborts the others. */
void nd_mpi_stop_agreed(void);
/* Every process waits for all (a collective on the submitting thread). */
void nd_mpi_barrier(void);
/* Gathers each process's `n` bytes at process 0 (a collective on the
 * submitting thread): there, *all holds them in process order, process p's
 * at (*all)[off[p]] to off[p + 1] (off: procs + 1 entries, malloc'ed like
 * *all); elsewhere both stay NULL. 0, or ND_ENOMEM. */
int nd_mpi_gather(const void *mine, int64_t n, char **all, int64_t **off);
/* nd_mpi_gather for one process: its bytes are all there is. */
static inline int nd__mpi_gather_alone(const void *mine, int64_t n, char **all, int64_t **off) {
  *all = malloc(n > 0 ? (size_t)n : 1);
  *off = calloc(2, sizeof **off);
  if (!*all || !*off) {
    free(*all), free(*off);
    *all = NULL, *off = NULL;
    return ND_ENOMEM;
  }
  memcpy(*all, mine, (size_t)n);
  (*off)[1] = n;
  return 0;
}
/* Each process's n bytes to every process: all[p * n] is process p's
 * (a collective on the submitting thread). */
void nd_mpi_allgather(const void *mine, int64_t n, void *all);
/* Process 0's n bytes at buf to every process (a collective on the submitting thread). */
void nd_mpi_bcast(void *buf, int64_t n);

/* ---- The plan (IR only, no MPI): which process owns what. */

/* The processes a launcher started (mpirun: OpenMPI's, MPICH's or PMIx's
 * variables; at least 1 when one did) and this one's number, read from the
 * environment without starting MPI; 0 and process 0 without a launcher. */
int nd_mpi_launched(int *process);

/* The process of rank r among `procs` (nd_process_of, graph/ir.h: the
 * graph cuts its data-parallel sums by it too). */
int nd_mpi_process_of(const nd_graph *g, nd_rank r, int procs);
/* The process each task of g runs on ([g->n_tasks], malloc'ed; NULL when
 * out of memory): its rank's. A data-parallel sum across processes is in
 * chunks, each run by its member's rank (graph/dpchunk.h); a whole sum's
 * replicas are then all on one process. g is built for `procs`. */
int *nd_mpi_task_processes(const nd_graph *g, int procs);
/* The processes must not outnumber the units. */
int nd_mpi_check_layout(const nd_graph *g, int procs, nd_error *err);

/* Which processes may hold a copy of a tensor they do not own: those that
 * run a task reading it. reader[tensor * procs + p]; map: g's tensor ->
 * index of the tensor (NULL: the same); run_on: nd_mpi_task_processes. */
void nd_mpi_mark_readers(const nd_graph *g, const int *run_on, const int32_t *map, const int *owner, int procs,
                         uint8_t *reader);
/* Which tasks of g process me must see, into visit[g->n_tasks]: those it
 * runs, those that touch a tensor it owns, and, of the tasks that write a
 * tensor it may hold a copy of, the first after each of its own reads of it
 * in the graph's order (and the first of the graph, which runs again after
 * reads elsewhere): seeing it drops the copy, so the later writes find none
 * to drop. Every other task it skips: its submission cost is its own share.
 * 0 or ND_ENOMEM. */
int nd_mpi_visits(const nd_graph *g, const int *run_on, const int32_t *map, const int *owner, int procs,
                  const uint8_t *reader, int me, uint8_t *visit);

/* What the bytes between processes are for, by the task that moves them:
 * pipeline hand-overs, data-parallel sums, and the rest (tensor-parallel
 * collectives across processes, the tied embedding, the statistics). */
enum nd_mpi_traffic { ND_MPI_PIPELINE, ND_MPI_DATA_PARALLEL, ND_MPI_OTHER, ND_MPI_TRAFFIC };
enum nd_mpi_traffic nd_mpi_traffic_of(const nd_task *t);

/* ---- One process's share (docs/nodes.md): built without the whole step. */

/* The (replica, stage) pairs whose forwards and backwards process me's share
 * needs, into pairs[d * pp + s], from `tail` (nd_graph_build_pairs with no
 * pair: the state and the optimizer tail) and its nd_mpi_task_processes:
 * the pairs with a rank on me, the next stage of each (it builds the
 * hand-overs with me), and those whose gradients a task run on me reads. */
void nd_mpi_share_pairs(const nd_graph *tail, const int *run_on, int procs, int me, uint8_t *pairs);

/* Process me's figures per step: the tasks it runs and the StarPU tasks it
 * submits (those of the tasks it sees, nd_mpi_visits, a chain
 * of chain_len once: tasks/chain.h; chain_len NULL: every task alone) and
 * the buffers they declare (a chain's tensors once each), the bytes it
 * sends by class and receives, and a ring's data-parallel bytes for its
 * gradients to compare with. g is the whole step or nd_graph_build_pairs of
 * nd_mpi_share_pairs(me): the same figures. 0 or ND_ENOMEM. */
typedef struct nd_mpi_share {
  int64_t runs, submits, buffers, received;
  /* a ring all-reduce's bytes over the data-parallel group (dp_group
   * members; 0: no group spans processes) of the process's gradients, and
   * what its chunks hold (graph/dpchunk.h) */
  int64_t dp_ring_bytes, dp_chunk_bytes;
  int dp_group;
  int64_t sent[ND_MPI_TRAFFIC];
} nd_mpi_share;
int nd_mpi_share_of(const nd_graph *g, int procs, int me, const int32_t *chain_len, nd_mpi_share *out);

/* Process me's step and evaluation graphs under `mpirun -np procs`: its
 * share alone (nd_mpi_share_pairs). Its tensors keep their names, which
 * the StarPU-MPI tags come from (tasks/exec.c), so the processes agree on
 * every tensor they exchange whatever each built. */
int nd_mpi_build_share(const nd_config *cfg, int procs, int me, nd_graph **step, nd_graph **eval, nd_error *err);

#endif
