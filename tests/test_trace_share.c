/* A trace under mpirun without the step's graph (trace/job.h): for each
 * layout and process count, the job process 0 joins from the parts of the
 * processes' shares (nd_mpi_build_share) is the one it joins from parts of
 * the whole step: the same tasks, numbered alike, and the same arrows,
 * which are the step's dependencies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "tasks/mpi.h"
#include "tests/share_config.h"
#include "tests/tap.h"
#include "trace/job.h"

/* The job of `procs` processes whose graphs are graphs[p] (all the same: the whole step). */
static int join(nd_graph *const *graphs, int procs, nd_trace_job *job, nd_error *err) {
  char *all = NULL;
  int64_t *off = calloc((size_t)procs + 1, sizeof *off);
  int rc = off ? 0 : ND_ENOMEM;
  for (int p = 0; p < procs && !rc; p++) {
    char *part = NULL, *grown;
    int32_t *local = NULL;
    int64_t size;
    rc = nd_trace_part_make(graphs[p], procs, p, &part, &size, &local);
    if (!rc && !(grown = realloc(all, (size_t)(off[p] + size)))) rc = ND_ENOMEM;
    if (!rc) {
      all = grown;
      memcpy(all + off[p], part, (size_t)size);
      off[p + 1] = off[p] + size;
    }
    free(part), free(local);
  }
  if (!rc) rc = nd_trace_job_join(job, all, off, procs, err);
  free(all), free(off);
  return rc;
}

static int same_jobs(const nd_trace_job *a, const nd_trace_job *b) {
  return a->n_tasks == b->n_tasks && a->edges.n_edges == b->edges.n_edges &&
         !memcmp(a->tasks, b->tasks, (size_t)a->n_tasks * sizeof *a->tasks) &&
         !memcmp(a->first, b->first, ((size_t)a->procs + 1) * sizeof *a->first) &&
         !memcmp(a->edges.pred_off, b->edges.pred_off, ((size_t)a->n_tasks + 1) * sizeof *a->edges.pred_off) &&
         !memcmp(a->edges.pred, b->edges.pred, (size_t)a->edges.n_edges * sizeof *a->edges.pred);
}

/* Whether the job's tasks are the whole step's, each process's in the step's
 * order, with the step's dependencies as arrows. */
static int is_step(const nd_trace_job *job, const nd_graph *g, const nd_edges *e, int procs) {
  int *run_on = nd_mpi_task_processes(g, procs);
  int32_t *at = malloc((size_t)g->n_tasks * sizeof *at), *place = malloc((size_t)g->n_tasks * sizeof *place), n = 0;
  int same = run_on && at && place && job->n_tasks == g->n_tasks && job->edges.n_edges == e->n_edges;
  for (int p = 0; same && p < procs; p++)
    for (int32_t i = 0; i < g->n_tasks; i++)
      if (run_on[i] == p) place[i] = n, at[n++] = i;
  for (int32_t j = 0; same && j < job->n_tasks; j++) {
    const nd_task *t = &g->tasks[at[j]];
    const nd_trace_task *x = &job->tasks[j];
    same = x->kind == (int32_t)t->kind && x->micro_batch == t->micro_batch && x->layer == t->layer &&
           !memcmp(&x->rank, &t->rank, sizeof x->rank) && x->flops == t->flops &&
           job->edges.pred_off[j + 1] - job->edges.pred_off[j] == e->pred_off[at[j] + 1] - e->pred_off[at[j]];
    for (int32_t k = e->pred_off[at[j]]; same && k < e->pred_off[at[j] + 1]; k++) {
      int found = 0;
      for (int32_t q = job->edges.pred_off[j]; q < job->edges.pred_off[j + 1]; q++)
        found |= job->edges.pred[q] == place[e->pred[k]];
      same = found;
    }
  }
  free(run_on), free(at), free(place);
  return same;
}

static void check(const char *sets, int procs) {
  nd_config *cfg = share_config(sets);
  nd_graph *whole = NULL, *graphs[16] = {0}, *shares[16] = {0};
  nd_trace_job from_whole = {0}, from_shares = {0};
  nd_edges e = {0};
  nd_error err = {0};
  int joined = 0, smaller = 0;
  if (!cfg || nd_graph_build_pairs(&whole, cfg, 0, NULL, procs, &err) || nd_graph_edges(whole, &e)) goto done;
  for (int p = 0; p < procs; p++) {
    nd_graph *eval = NULL;
    graphs[p] = whole;
    if (nd_mpi_build_share(cfg, procs, p, &shares[p], &eval, &err)) goto done;
    nd_graph_free(eval);
    smaller += shares[p]->n_tasks < whole->n_tasks;
  }
  joined = !join(graphs, procs, &from_whole, &err) && !join(shares, procs, &from_shares, &err);
done:
  if (err.msg[0]) diag("%s", err.msg);
  ok(joined && is_step(&from_whole, whole, &e, procs),
     "%s on %d processes: the job from the whole step has its %d tasks and %lld dependencies", sets, procs,
     whole ? whole->n_tasks : -1, (long long)e.n_edges);
  ok(joined && same_jobs(&from_whole, &from_shares),
     "%s on %d processes: the job from %d smaller shares is the same (%d tasks, %lld arrows)", sets, procs, smaller,
     from_shares.n_tasks, (long long)from_shares.edges.n_edges);
  nd_trace_job_free(&from_whole);
  nd_trace_job_free(&from_shares);
  nd_edges_free(&e);
  for (int p = 0; p < procs; p++) nd_graph_free(shares[p]);
  nd_graph_free(whole);
  nd_config_free(cfg);
}

int main(void) {
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2", 1);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2", 2);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2", 3);
  check("parallelism.data_parallel_size=4", 3);
  check("parallelism.pipeline_parallel_size=3", 3);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=3 parallelism.tensor_parallel_size=2", 4);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=3 parallelism.tensor_parallel_size=2", 6);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2 parallelism.tensor_parallel_size=2 "
        "runtime.split_tensor_groups=true",
        5);
  check(
      "parallelism.data_parallel_size=4 parallelism.pipeline_parallel_size=2 parallelism.data_parallel_shard=gradients",
      4);
  check("parallelism.data_parallel_size=4 parallelism.pipeline_parallel_size=2 "
        "parallelism.data_parallel_shard=parameters",
        4);
  check("model.arch=llama model.n_kv_head=2 parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2", 4);
  check("train.recompute=layer train.precision=bf16 parallelism.data_parallel_size=2 "
        "parallelism.pipeline_parallel_size=3",
        6);
  return done_testing();
}
