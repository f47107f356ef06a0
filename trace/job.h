/* The tasks a trace writes and the dependencies between them, as process 0
 * knows them without the step's graph. Under mpirun each process builds
 * only its share of the step (docs/nodes.md), so a task is known by an
 * identity that is the same in every share (a hash of its kind, rank,
 * micro-batch and of the names, unique in the step, of the tensors it
 * reads and writes, and which of the tasks alike it is). Each process
 * sends its part: the tasks it runs, and the arrows that go through the
 * tensors it owns, since the owner sees every task that accesses its
 * tensor (StarPU-MPI needs it to), in the step's order. Process 0 joins
 * the parts: every task of the step once, numbered process by process,
 * each process's in its graph's order (the step's), with the step's
 * arrows. On one process the job is its graph, in its order. */
#ifndef ND_TRACE_JOB_H
#define ND_TRACE_JOB_H

#include <stdint.h>

#include "graph/ir.h"

/* What the trace writes of a task (its args), and its identity. */
typedef struct nd_trace_task {
  uint64_t id;
  int32_t kind, phase, micro_batch, layer;
  nd_rank rank;
  int32_t pad; /* the parts travel as bytes: no padding left undefined */
  int64_t flops, bytes;
} nd_trace_task;

/* Process `me`'s part of a trace of graph g run by `procs` processes: the
 * bytes to send (*part, *size, malloc'ed) and each task's place among this
 * process's tasks (local[g->n_tasks], malloc'ed; -1: run elsewhere). 0 or
 * ND_ENOMEM. */
int nd_trace_part_make(const nd_graph *g, int procs, int me, char **part, int64_t *size, int32_t **local);

typedef struct nd_trace_job {
  nd_trace_task *tasks; /* process by process */
  int32_t n_tasks;
  nd_edges edges;
  int procs;
  int32_t *first; /* [procs + 1]: process p's tasks are first[p] .. first[p + 1] - 1 */
} nd_trace_job;

/* Joins the parts of `procs` processes, process p's at all[off[p]] to
 * all[off[p + 1]] (nd_mpi_gather's layout). ND_ERUNTIME when two tasks have
 * the same identity or an arrow joins a task no process runs; ND_ENOMEM. */
int nd_trace_job_join(nd_trace_job *job, const char *all, const int64_t *off, int procs, nd_error *err);
void nd_trace_job_free(nd_trace_job *job);

#endif
