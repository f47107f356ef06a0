/* The recorder: a slot per task this process runs, filled from the
 * executor's observer on the worker that ran the task (each task writes only
 * its own slot, so no lock), read after the step has been waited for. Under
 * mpirun every process records its own tasks and process 0 gathers them
 * after the step into the job's tasks (trace/job.h: each process built only
 * its share of the step): one trace, a process per node, workers numbered
 * across the nodes (process p's after those of processes 0 to p - 1). The
 * stretches an idle worker spent in another worker's kernel come from the
 * kernels' observer (common/share.h), on the helper's thread, under a
 * mutex; only this process's are kept. */
#include "trace/recorder.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "common/error.h"
#include "common/share.h"
#include "tasks/mpi.h"
#include "trace/chrome.h"
#include "trace/job.h"
#include "trace/model.h"
#include "trace/svg.h"

struct nd_trace_recorder {
  int32_t *local;   /* [n_tasks of the graph]: the slot of each task this process runs, -1 elsewhere */
  nd_trace_job job; /* at process 0: every process's tasks, its own first */
  int32_t n_slots;  /* the job's tasks at process 0, this process's elsewhere */
  int flows;
  nd_trace_step *steps;
  int n_steps;
  nd_trace_step *cur; /* the step being observed, or NULL */
  int n_workers;      /* all nodes' at process 0 */
  char (*names)[ND_TRACE_NAME_MAX];
  /* several processes, at process 0: first_worker[p] (procs + 1 entries)
   * and each worker's node */
  int procs;
  int *first_worker, *worker_node;
  const char *impl[ND_TASK_KIND_COUNT], *impl_origin[ND_TASK_KIND_COUNT];
  double sync_us;          /* this process's clock when all left the step's barrier */
  pthread_mutex_t help_mu; /* guards cur's helps, and cur for the helpers */
  nd_share_observer help_obs;
};

/* The processes' worker names to process 0, which numbers them across the
 * nodes (a collective: every process creates its recorder in the same step). */
static int gather_workers(nd_trace_recorder *r) {
  char *all;
  int64_t *off;
  if (nd_mpi_gather(r->names, (int64_t)r->n_workers * ND_TRACE_NAME_MAX, &all, &off)) return ND_ENOMEM;
  if (!all) return 0;
  int total = (int)(off[r->procs] / ND_TRACE_NAME_MAX);
  char(*names)[ND_TRACE_NAME_MAX] = (char(*)[ND_TRACE_NAME_MAX])all;
  r->first_worker = calloc((size_t)r->procs + 1, sizeof *r->first_worker);
  r->worker_node = calloc((size_t)(total ? total : 1), sizeof *r->worker_node);
  if (!r->first_worker || !r->worker_node) {
    free(all), free(off);
    return ND_ENOMEM;
  }
  for (int p = 0; p < r->procs; p++) {
    r->first_worker[p + 1] = (int)(off[p + 1] / ND_TRACE_NAME_MAX);
    for (int w = r->first_worker[p]; w < r->first_worker[p + 1]; w++) {
      /* the nodes' workers share names ("CPU 0"): the summary tells them apart */
      char local[ND_TRACE_NAME_MAX];
      memcpy(local, names[w], sizeof local);
      local[sizeof local - 1] = '\0';
      snprintf(names[w], sizeof names[w], "p%d %.*s", p, (int)sizeof local - 16, local);
      r->worker_node[w] = p;
    }
  }
  free(off);
  free(r->names);
  r->names = names;
  r->n_workers = total;
  return 0;
}

/* This process's part to process 0, which joins the job (a collective: a
 * process that fails sends an empty part, so that none waits forever). */
static int gather_job(nd_trace_recorder *r, const nd_graph *g, nd_error *err) {
  char *part = NULL, *all = NULL;
  int64_t size = 0, *off = NULL, empty[2] = {0, 0};
  int rc = nd_trace_part_make(g, r->procs, nd_mpi_rank(), &part, &size, &r->local);
  for (int32_t i = 0; !rc && i < g->n_tasks; i++) r->n_slots += r->local[i] >= 0;
  if (nd_mpi_gather(rc ? (const char *)empty : part, rc ? (int64_t)sizeof empty : size, &all, &off)) rc = ND_ENOMEM;
  free(part);
  if (rc) {
    nd__fail(err, rc, "trace: out of memory");
  } else if (all) {
    rc = nd_trace_job_join(&r->job, all, off, r->procs, err);
    r->n_slots = r->job.n_tasks;
  }
  free(all), free(off);
  return rc;
}

int nd_trace_recorder_new(nd_trace_recorder **out, const nd_graph *g, const nd_kernels *k, int flows, nd_error *err) {
  nd_trace_recorder *r = calloc(1, sizeof *r);
  if (!r) return nd__fail(err, ND_ENOMEM, "trace: out of memory");
  r->flows = flows;
  pthread_mutex_init(&r->help_mu, NULL);
  for (int kind = 0; kind < ND_TASK_KIND_COUNT; kind++) {
    const nd__kernel_slot *slot = nd__kernels_slot(k, ND_BACKEND_CPU, (enum nd_task_kind)kind);
    r->impl[kind] = slot->name, r->impl_origin[kind] = slot->origin;
  }
  r->n_workers = (int)starpu_worker_get_count();
  r->names = calloc((size_t)(r->n_workers ? r->n_workers : 1), sizeof *r->names);
  r->procs = nd_mpi_size();
  if (!r->names) {
    nd_trace_recorder_free(r);
    return nd__fail(err, ND_ENOMEM, "trace: out of memory");
  }
  for (int w = 0; w < r->n_workers; w++) starpu_worker_get_name(w, r->names[w], sizeof r->names[w]);
  /* the job's arrows also serve to make the times consistent, flows or not;
   * both gathers are collectives: every process takes part in each */
  int rc = gather_job(r, g, err);
  if (r->procs > 1 && gather_workers(r) && !rc) rc = nd__fail(err, ND_ENOMEM, "trace: out of memory");
  if (rc) {
    nd_trace_recorder_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

void nd_trace_recorder_free(nd_trace_recorder *r) {
  if (!r) return;
  if (r->cur) { /* a step begun and never ended: not kept */
    nd__share_observe(NULL);
    free(r->cur->times);
    free(r->cur->helps);
  }
  for (int s = 0; s < r->n_steps; s++) {
    free(r->steps[s].times);
    free(r->steps[s].helps);
    free(r->steps[s].transfers);
  }
  free(r->steps);
  free(r->names);
  free(r->first_worker);
  free(r->worker_node);
  free(r->local);
  nd_trace_job_free(&r->job);
  pthread_mutex_destroy(&r->help_mu);
  free(r);
}

int nd_trace_wanted(const nd_config *cfg, long long first, long long last, long long step) {
  if (cfg->trace.n_steps == 0) return step == (first + 1 < last ? first + 1 : last);
  for (int64_t i = 0; i < cfg->trace.n_steps; i++)
    if (cfg->trace.steps[i] == step) return 1;
  return 0;
}

static double now_us(void) { return starpu_timing_now(); }

/* On a helper's thread. A stretch that does not fit in memory is left out of the trace. */
static void on_help(void *user, double start, double end) {
  nd_trace_recorder *r = user;
  int worker = starpu_worker_get_id();
  pthread_mutex_lock(&r->help_mu);
  nd_trace_step *st = r->cur;
  if (st && worker >= 0 && st->n_helps == st->cap_helps) {
    int cap = st->cap_helps ? 2 * st->cap_helps : 64;
    nd_trace_time *h = realloc(st->helps, (size_t)cap * sizeof *h);
    if (h) st->helps = h, st->cap_helps = cap;
  }
  if (st && worker >= 0 && st->n_helps < st->cap_helps) st->helps[st->n_helps++] = (nd_trace_time){start, end, worker};
  pthread_mutex_unlock(&r->help_mu);
}

/* A stretch of help lies between its worker's tasks: making the times
 * consistent may have moved a task's start or end over it by a few
 * microseconds, and one that began before the step is the step before's. */
static void keep_helps_between_tasks(const nd_trace_recorder *r, nd_trace_step *st) {
  int kept = 0;
  for (int h = 0; h < st->n_helps; h++) {
    nd_trace_time x = st->helps[h];
    if (x.start < st->begin_us) continue;
    for (int32_t i = 0; i < r->n_slots && x.start < x.end; i++) {
      const nd_trace_time *t = &st->times[i];
      if (t->worker != x.worker || t->end <= x.start || t->start >= x.end) continue;
      if (t->start <= x.start)
        x.start = t->end;
      else
        x.end = t->start;
    }
    if (x.start < x.end) st->helps[kept++] = x;
  }
  st->n_helps = kept;
}

static void on_task(void *user, int graph, int32_t task, double start_us, double end_us, int worker) {
  nd_trace_recorder *r = user;
  if (graph != 0 || !r->cur || r->local[task] < 0) return;
  r->cur->times[r->local[task]] = (nd_trace_time){start_us, end_us, worker};
}

/* Reading a bus's counters resets them: called at the start to forget what
 * came before the step, and at the end to keep what the step moved. */
static int bus_totals(nd_trace_step *st, int keep) {
  int n = starpu_bus_get_count();
  if (keep && n > 0 && !(st->transfers = calloc((size_t)n, sizeof *st->transfers))) return ND_ENOMEM;
  for (int b = 0; b < n; b++) {
    struct starpu_profiling_bus_info info;
    if (starpu_bus_get_profiling_info(b, &info) != 0 || !keep || info.transfer_count == 0) continue;
    st->transfers[st->n_transfers++] =
        (nd_trace_transfer){starpu_bus_get_src(b), starpu_bus_get_dst(b), info.transferred_bytes, info.transfer_count,
                            starpu_timing_timespec_to_us(&info.total_time)};
  }
  return 0;
}

int nd_trace_begin(nd_trace_recorder *r, nd_exec *ex, long long step, nd_error *err) {
  nd_trace_step *steps = realloc(r->steps, (size_t)(r->n_steps + 1) * sizeof *steps);
  if (!steps) return nd__fail(err, ND_ENOMEM, "trace: out of memory");
  r->steps = steps;
  nd_trace_step *st = &steps[r->n_steps];
  *st = (nd_trace_step){.step = step};
  st->times = malloc((size_t)(r->n_slots ? r->n_slots : 1) * sizeof *st->times);
  if (!st->times) return nd__fail(err, ND_ENOMEM, "trace: out of memory");
  for (int32_t i = 0; i < r->n_slots; i++) st->times[i] = (nd_trace_time){0, 0, -1};
  r->cur = st;
  nd_exec_observe(ex, &(nd_exec_observer){on_task, r});
  bus_totals(st, 0);
  /* the processes' clocks differ: each notes its own as all leave a
   * barrier, and process 0 shifts the others' times by the difference */
  if (r->procs > 1) nd_mpi_barrier();
  st->begin_us = r->sync_us = starpu_timing_now();
  r->help_obs = (nd_share_observer){now_us, on_help, r};
  nd__share_observe(&r->help_obs);
  return 0;
}

static const nd_trace_time *sort_times;
static int cmp_start(const void *a, const void *b) {
  int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
  double x = sort_times[i].start, y = sort_times[j].start;
  return x < y ? -1 : x > y ? 1 : i - j;
}

/* Clock ties and the few microseconds between a task's end and its
 * successor's start on another worker can leave slices that touch or cross
 * by a hair: starts are pushed to no earlier than the worker's previous end
 * and every predecessor's end (never backwards), so a worker's slices never
 * overlap and every edge reads forwards. Pushes can cascade; a few passes
 * reach the fixed point. */
static int make_consistent(const nd_trace_recorder *r, nd_trace_time *t) {
  const nd_edges *e = &r->job.edges;
  int32_t *order = malloc((size_t)(r->n_slots ? r->n_slots : 1) * sizeof *order);
  double *worker_end = malloc((size_t)(r->n_workers ? r->n_workers : 1) * sizeof *worker_end);
  if (!order || !worker_end) {
    free(order);
    free(worker_end);
    return ND_ENOMEM;
  }
  int32_t n = 0;
  for (int32_t i = 0; i < r->n_slots; i++)
    if (t[i].worker >= 0 && t[i].worker < r->n_workers) order[n++] = i;
  sort_times = t;
  qsort(order, (size_t)n, sizeof *order, cmp_start);
  for (int pass = 0, moved = 1; pass < 16 && moved; pass++) {
    moved = 0;
    for (int w = 0; w < r->n_workers; w++) worker_end[w] = -INFINITY;
    for (int32_t k = 0; k < n; k++) {
      nd_trace_time *x = &t[order[k]];
      double s = fmax(x->start, worker_end[x->worker]);
      for (int32_t p = e->pred_off[order[k]]; p < e->pred_off[order[k] + 1]; p++)
        if (t[e->pred[p]].worker >= 0) s = fmax(s, t[e->pred[p]].end);
      if (s > x->start) {
        moved = 1;
        x->start = s;
      }
      if (x->end < x->start) x->end = x->start;
      worker_end[x->worker] = x->end;
    }
  }
  free(order);
  free(worker_end);
  return 0;
}

/* A task as one process sends it to process 0: task is its slot there. */
typedef struct remote_time {
  int32_t task, worker;
  double start, end;
} remote_time;

/* The other processes' tasks into process 0's step, on its clock (a
 * collective after the step). The clocks agree to a barrier's latency:
 * process 0 then makes the times consistent across the nodes' edges. */
static int gather_times(nd_trace_recorder *r, nd_trace_step *st) {
  int32_t n = 0;
  for (int32_t i = 0; i < r->n_slots; i++) n += st->times[i].worker >= 0;
  remote_time *mine = malloc(sizeof(remote_time) * ((size_t)n + 1)), *all = NULL;
  int64_t *off = NULL;
  if (!mine) return ND_ENOMEM;
  /* the first entry carries the clock at the barrier */
  mine[0] = (remote_time){-1, -1, r->sync_us, 0};
  for (int32_t i = 0, k = 1; i < r->n_slots; i++)
    if (st->times[i].worker >= 0)
      mine[k++] = (remote_time){i, st->times[i].worker, st->times[i].start, st->times[i].end};
  int rc = nd_mpi_gather(mine, (int64_t)sizeof *mine * (n + 1), (char **)&all, &off);
  free(mine);
  if (rc || !all) return rc;
  for (int p = 1; p < r->procs; p++) {
    remote_time *x = (remote_time *)((char *)all + off[p]), *end = (remote_time *)((char *)all + off[p + 1]);
    double shift = r->sync_us - x[0].start;
    int32_t first = r->job.first[p], slots = r->job.first[p + 1] - first;
    for (x++; x < end; x++)
      if (x->task >= 0 && x->task < slots)
        st->times[first + x->task] = (nd_trace_time){x->start + shift, x->end + shift, r->first_worker[p] + x->worker};
  }
  free(all);
  free(off);
  return 0;
}

int nd_trace_end(nd_trace_recorder *r, nd_exec *ex, nd_error *err) {
  nd_trace_step *st = r->cur;
  nd_exec_observe(ex, NULL);
  nd__share_observe(NULL);
  pthread_mutex_lock(&r->help_mu);
  r->cur = NULL;
  pthread_mutex_unlock(&r->help_mu);
  if (!st) return 0;
  st->end_us = starpu_timing_now();
  r->n_steps++;
  int bad = bus_totals(st, 1);
  /* the gather is collective: every process takes part, failed or not */
  if (r->procs > 1 && gather_times(r, st)) bad = 1;
  if (r->job.tasks && make_consistent(r, st->times)) bad = 1;
  keep_helps_between_tasks(r, st);
  return bad ? nd__fail(err, ND_ENOMEM, "trace: out of memory") : 0;
}

int32_t nd_trace_recorded(const nd_trace_recorder *r) {
  int32_t n = 0;
  if (r->n_steps == 0) return 0;
  for (int32_t i = 0; i < r->n_slots; i++) n += r->steps[r->n_steps - 1].times[i].worker >= 0;
  return n;
}

int nd_trace_save(const nd_trace_recorder *r, const char *json_path, const char *svg_path, nd_error *err) {
  int want_json = json_path && json_path[0], want_svg = svg_path && svg_path[0];
  if (!want_json && !want_svg) return 0;
  nd_trace_run run = {r->job.tasks, r->job.n_tasks, r->flows ? &r->job.edges : NULL,
                      r->steps,     r->n_steps,     r->n_workers,
                      r->names,     r->worker_node, r->procs,
                      r->impl,      r->impl_origin};
  cJSON *doc = nd_trace_chrome_build(&run);
  char *text = NULL;
  int rc = 0;
  if (!doc) return nd__fail(err, ND_ENOMEM, "trace: out of memory");
  if (want_json) {
    if (!(text = cJSON_PrintUnformatted(doc)))
      rc = nd__fail(err, ND_ENOMEM, "trace: out of memory");
    else
      rc = nd_write_file_atomic(json_path, text, strlen(text), err);
  }
  if (!rc && want_svg) {
    nd_trace_model m;
    if (!(rc = nd_trace_model_from_json(&m, doc, "trace", err))) {
      rc = nd_trace_svg_write(&m, svg_path, err);
      nd_trace_model_free(&m);
    }
  }
  free(text);
  cJSON_Delete(doc);
  return rc;
}
