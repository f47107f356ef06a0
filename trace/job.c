/* A process's part and process 0's join (trace/job.h). A part is a head
 * (task and arrow counts), the tasks, then the arrows as pairs of
 * identities: all 8-byte fields, so that parts gathered end to end stay
 * aligned. */
#include "trace/job.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/hash.h"
#include "tasks/mpi.h"

typedef struct part_head {
  int64_t n_tasks, n_edges;
} part_head;

typedef struct keyed {
  uint64_t id;
  int32_t task;
} keyed;

/* By identity, then by place: the order in which tasks alike are told apart. */
static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return (x->task > y->task) - (x->task < y->task);
}

/* What the task is and the tensors it touches, whose names are unique in
 * the step; tasks alike (a weight gathered twice) are told apart by their
 * order, the same in every share that holds them: they run on the same
 * rank and touch the same tensors, so a share holds all of them or none. */
static int identities(const nd_graph *g, uint64_t *ids) {
  keyed *by = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *by);
  if (!by) return ND_ENOMEM;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    int32_t head[7] = {t->kind, t->phase, t->micro_batch, t->layer, t->rank.dp, t->rank.pp, t->rank.tp};
    uint64_t h = nd__fnv(ND_FNV_BASIS, head, sizeof head);
    const nd_access *acc = nd_task_access(g, t);
    for (int a = 0; a < t->n_access; a++) {
      const char *name = g->tensors[acc[a].tensor].name;
      h = nd__fnv(h, name, strlen(name) + 1);
      h = nd__fnv(h, &acc[a].mode, sizeof acc[a].mode);
    }
    by[i] = (keyed){h, i};
  }
  qsort(by, (size_t)g->n_tasks, sizeof *by, cmp_keyed);
  for (int32_t i = 0, alike = 0; i < g->n_tasks; i++) {
    alike = i > 0 && by[i].id == by[i - 1].id ? alike + 1 : 0;
    ids[by[i].task] = nd__fnv(by[i].id, &alike, sizeof alike);
  }
  free(by);
  return 0;
}

/* The arrows through the tensors this process owns. */
static int owned_edges(const nd_graph *g, int procs, int me, nd_edges *e) {
  uint8_t *owned = malloc((size_t)(g->n_tensors ? g->n_tensors : 1));
  if (!owned) return ND_ENOMEM;
  for (int32_t k = 0; k < g->n_tensors; k++) owned[k] = nd_mpi_process_of(g, g->tensors[k].home, procs) == me;
  int rc = nd_graph_edges_through(g, owned, e);
  free(owned);
  return rc;
}

int nd_trace_part_make(const nd_graph *g, int procs, int me, char **part, int64_t *size, int32_t **local) {
  nd_edges e = {0};
  size_t n = (size_t)(g->n_tasks ? g->n_tasks : 1);
  uint64_t *ids = malloc(n * sizeof *ids);
  int32_t *place = malloc(n * sizeof *place);
  int *run_on = nd_mpi_task_processes(g, procs);
  char *buf = NULL;
  int rc = ND_ENOMEM;
  *part = NULL;
  *local = NULL;
  if (!ids || !place || !run_on || identities(g, ids) || owned_edges(g, procs, me, &e)) goto done;
  part_head h = {0, e.n_edges};
  for (int32_t i = 0; i < g->n_tasks; i++) place[i] = run_on[i] == me ? (int32_t)h.n_tasks++ : -1;
  *size = (int64_t)sizeof h + h.n_tasks * (int64_t)sizeof(nd_trace_task) + h.n_edges * 2 * (int64_t)sizeof(uint64_t);
  if (!(buf = calloc(1, (size_t)*size))) goto done;
  memcpy(buf, &h, sizeof h);
  nd_trace_task *tasks = (nd_trace_task *)(buf + sizeof h);
  uint64_t *pair = (uint64_t *)(tasks + h.n_tasks);
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (place[i] >= 0)
      tasks[place[i]] =
          (nd_trace_task){ids[i], t->kind, t->phase, t->micro_batch, t->layer, t->rank, 0, t->flops, t->bytes};
    for (int32_t k = e.pred_off[i]; k < e.pred_off[i + 1]; k++) *pair++ = ids[e.pred[k]], *pair++ = ids[i];
  }
  *part = buf, *local = place;
  buf = NULL, place = NULL;
  rc = 0;
done:
  free(ids), free(place), free(run_on), free(buf);
  nd_edges_free(&e);
  return rc;
}

void nd_trace_job_free(nd_trace_job *job) {
  free(job->tasks);
  free(job->first);
  nd_edges_free(&job->edges);
  memset(job, 0, sizeof *job);
}

typedef struct arrow {
  int32_t to, from;
} arrow;

static int cmp_arrow(const void *a, const void *b) {
  const arrow *x = a, *y = b;
  if (x->to != y->to) return (x->to > y->to) - (x->to < y->to);
  return (x->from > y->from) - (x->from < y->from);
}

static int cmp_id(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

/* The place of the task with identity id (by_id sorted by cmp_id), or -1. */
static int32_t find(const keyed *by_id, int32_t n, uint64_t id) {
  keyed key = {id, 0};
  const keyed *at = bsearch(&key, by_id, (size_t)n, sizeof *by_id, cmp_id);
  return at ? at->task : -1;
}

int nd_trace_job_join(nd_trace_job *job, const char *all, const int64_t *off, int procs, nd_error *err) {
  int64_t n = 0, n_arrows = 0;
  memset(job, 0, sizeof *job);
  for (int p = 0; p < procs; p++) {
    const part_head *h = (const part_head *)(all + off[p]);
    n += h->n_tasks, n_arrows += h->n_edges;
  }
  job->procs = procs;
  job->n_tasks = (int32_t)n;
  job->tasks = malloc((size_t)(n ? n : 1) * sizeof *job->tasks);
  job->first = calloc((size_t)procs + 1, sizeof *job->first);
  keyed *by_id = malloc((size_t)(n ? n : 1) * sizeof *by_id);
  arrow *arrows = malloc((size_t)(n_arrows ? n_arrows : 1) * sizeof *arrows);
  int32_t *pred_off = calloc((size_t)n + 1, sizeof *pred_off), *pred = NULL;
  int rc = ND_ENOMEM;
  if (!job->tasks || !job->first || !by_id || !arrows || !pred_off) goto fail;
  for (int p = 0; p < procs; p++) {
    const part_head *h = (const part_head *)(all + off[p]);
    job->first[p + 1] = job->first[p] + (int32_t)h->n_tasks;
    memcpy(job->tasks + job->first[p], h + 1, (size_t)h->n_tasks * sizeof *job->tasks);
  }
  for (int32_t i = 0; i < job->n_tasks; i++) by_id[i] = (keyed){job->tasks[i].id, i};
  qsort(by_id, (size_t)n, sizeof *by_id, cmp_id);
  for (int32_t i = 1; i < job->n_tasks; i++)
    if (by_id[i].id == by_id[i - 1].id) {
      const nd_trace_task *a = &job->tasks[by_id[i - 1].task], *b = &job->tasks[by_id[i].task];
      rc = nd__fail(err, ND_ERUNTIME, "trace: a %s task and a %s task (micro-batches %d and %d) have the same identity",
                    nd_task_kind_name(a->kind), nd_task_kind_name(b->kind), a->micro_batch, b->micro_batch);
      goto fail;
    }
  /* every process's arrows by places in the job; one that two owners saw, once */
  int64_t m = 0;
  for (int p = 0; p < procs; p++) {
    const part_head *h = (const part_head *)(all + off[p]);
    const uint64_t *pair = (const uint64_t *)((const nd_trace_task *)(h + 1) + h->n_tasks);
    for (int64_t k = 0; k < h->n_edges; k++, pair += 2) {
      arrow a = {find(by_id, job->n_tasks, pair[1]), find(by_id, job->n_tasks, pair[0])};
      if (a.to < 0 || a.from < 0) {
        rc = nd__fail(err, ND_ERUNTIME, "trace: process %d's arrow joins a task no process runs", p);
        goto fail;
      }
      arrows[m++] = a;
    }
  }
  qsort(arrows, (size_t)m, sizeof *arrows, cmp_arrow);
  int64_t kept = 0;
  for (int64_t k = 0; k < m; k++)
    if (k == 0 || cmp_arrow(&arrows[k], &arrows[k - 1]) != 0) arrows[kept++] = arrows[k];
  if (!(pred = malloc((size_t)(kept ? kept : 1) * sizeof *pred))) goto fail;
  for (int64_t k = 0; k < kept; k++) pred[k] = arrows[k].from, pred_off[arrows[k].to + 1]++;
  for (int32_t i = 0; i < job->n_tasks; i++) pred_off[i + 1] += pred_off[i];
  free(by_id), free(arrows);
  if (nd_edges_from_preds(&job->edges, job->n_tasks, pred_off, pred)) {
    nd_trace_job_free(job);
    return nd__fail(err, ND_ENOMEM, "trace: out of memory");
  }
  return 0;
fail:
  if (rc == ND_ENOMEM) nd__fail(err, rc, "trace: out of memory");
  free(by_id), free(arrows), free(pred_off), free(pred);
  nd_trace_job_free(job);
  return rc;
}
