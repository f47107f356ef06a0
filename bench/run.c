/* One configuration's measured steps (bench/run.h). */
#include "bench/run.h"

#include <errno.h>
#include <math.h>
#include <starpu.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "graph/bound.h"
#include "graph/ir.h"
#include "graph/priority.h"
#include "ndgraph/ndgraph.h"
#include "tasks/exec.h"
#include "train/trainer_internal.h"

#define MAX_STEPS 16

typedef struct obs {
  double *start, *end;
  int *worker;
} obs;

static void task_done(void *user, int graph, int32_t task, double start, double end, int worker) {
  obs *o = user;
  if (graph) return;
  o->start[task] = start, o->end[task] = end, o->worker[task] = worker;
}

static int by_step(const void *a, const void *b) {
  const nd_bench_row *x = a, *y = b;
  return (x->step_ms > y->step_ms) - (x->step_ms < y->step_ms);
}

nd_bench_row nd_bench_median(nd_bench_row *rows, int n) {
  qsort(rows, (size_t)n, sizeof *rows, by_step);
  return rows[n / 2];
}

static double field_of(const nd_bench_row *r, size_t field) { return *(const double *)((const char *)r + field); }

nd_bench_paired nd_bench_pair(const nd_bench_row *mine, const nd_bench_row *theirs, int rounds, size_t field) {
  double q[rounds > 0 ? rounds : 1];
  for (int r = 0; r < rounds; r++) q[r] = field_of(&mine[r], field) / field_of(&theirs[r], field);
  return nd_bench_ratios(q, rounds);
}

/* r->worker_bound_ms from the durations and upward ranks of one step (rank:
 * from a task's start to the end); top is the longest path before each task
 * (the array order is topological), jobs scratch for one worker's tasks. */
static void worker_bound(const nd_graph *g, const nd_edges *e, const obs *o, const double *dur, const double *rank,
                         double *top, nd_bound_job *jobs, nd_bench_row *r) {
  for (int32_t i = 0; i < g->n_tasks; i++) {
    top[i] = 0;
    for (int32_t k = e->pred_off[i]; k < e->pred_off[i + 1]; k++) {
      int32_t p = e->pred[k];
      if (top[p] + dur[p] > top[i]) top[i] = top[p] + dur[p];
    }
  }
  r->worker_bound_ms = r->cp_ms;
  for (int w = 0; w < ND_BENCH_MAX_WORKERS; w++) {
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_tasks; i++)
      if (o->worker[i] == w) jobs[n++] = (nd_bound_job){top[i], dur[i], rank[i] - dur[i]};
    double ms = nd_one_worker_bound(jobs, n) * 1e3;
    if (ms > r->worker_bound_ms) r->worker_bound_ms = ms;
  }
}

static int by_start(const void *a, const void *b) {
  const nd_run_task *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* Worker w's idle time with its next task ready, in seconds; run: scratch. */
static double ready_idle(const nd_graph *g, const nd_edges *e, const obs *o, int w, nd_run_task *run) {
  int32_t n = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    if (o->worker[i] != w) continue;
    double ready = e->pred_off[i] < e->pred_off[i + 1] ? 0.0 : INFINITY;
    for (int32_t k = e->pred_off[i]; k < e->pred_off[i + 1]; k++) ready = fmax(ready, o->end[e->pred[k]]);
    run[n++] = (nd_run_task){o->start[i], o->end[i], ready};
  }
  qsort(run, (size_t)n, sizeof *run, by_start);
  return nd_ready_idle(run, n) * 1e-6;
}

/* The row of one observed step. */
static void measure(const nd_graph *g, const nd_edges *e, const obs *o, int workers, double *dur, double *rank,
                    double *top, nd_bound_job *jobs, nd_run_task *run, nd_bench_row *r) {
  double first = 1e300, last = 0, busy[ND_BENCH_MAX_WORKERS] = {0};
  r->work_ms = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    dur[i] = (o->end[i] - o->start[i]) * 1e-6;
    r->work_ms += dur[i] * 1e3;
    if (o->worker[i] >= 0 && o->worker[i] < ND_BENCH_MAX_WORKERS) busy[o->worker[i]] += dur[i];
    if (o->start[i] < first) first = o->start[i];
    if (o->end[i] > last) last = o->end[i];
  }
  nd_upward_rank(g, e, dur, NULL, rank);
  r->cp_ms = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) r->cp_ms = rank[i] * 1e3 > r->cp_ms ? rank[i] * 1e3 : r->cp_ms;
  r->bound_ms = r->cp_ms > r->work_ms / workers ? r->cp_ms : r->work_ms / workers;
  worker_bound(g, e, o, dur, rank, top, jobs, r);
  double span = (last - first) * 1e-6, all = 0, all_ready = 0;
  r->workers = workers;
  for (int w = 0; w < workers && w < ND_BENCH_MAX_WORKERS; w++) {
    double ready = ready_idle(g, e, o, w, run);
    r->bubble[w] = span > 0 ? 1 - busy[w] / span : 0;
    r->ready[w] = span > 0 ? ready / span : 0;
    r->is_cpu[w] = starpu_worker_get_type(w) == STARPU_CPU_WORKER;
    all += busy[w], all_ready += ready;
  }
  r->bubble_all = span > 0 ? 1 - all / (span * workers) : 0;
  r->ready_all = span > 0 ? all_ready / (span * workers) : 0;
  r->stage_layers[0] = g->stage_layers[0];
  r->stage_layers[1] = g->pp > 1 ? g->stage_layers[1] : 0;
}

int nd_bench_config(nd_config *cfg, const char *const *kv, nd_error *err) {
  int rc = 0;
  for (const char *const *p = kv; *p && !rc; p++) rc = nd_config_set_assignment(cfg, *p, err);
  return rc;
}

static int run_here(const char *const *kv, int steps, nd_bench_row *out) {
  nd_config *cfg;
  nd_error err = {0};
  nd_trainer *tr = NULL;
  nd_bench_row rows[MAX_STEPS];
  obs o = {0};
  double *dur = NULL, *rank = NULL, *top = NULL;
  nd_bound_job *jobs = NULL;
  nd_run_task *run = NULL;
  nd_edges e = {0};
  if (steps < 1 || steps > MAX_STEPS) steps = 3;
  if (nd_config_new(&cfg)) return -1;
  int rc = nd_bench_config(cfg, kv, &err);
  if (rc || (rc = nd_trainer_open(&tr, cfg, &err))) goto done;
  const nd_graph *g = nd__trainer_graph(tr);
  size_t n = (size_t)g->n_tasks;
  o.start = calloc(n, sizeof(double)), o.end = calloc(n, sizeof(double)), o.worker = calloc(n, sizeof(int));
  dur = calloc(n, sizeof(double)), rank = calloc(n, sizeof(double)), top = calloc(n, sizeof(double));
  jobs = calloc(n, sizeof *jobs), run = calloc(n, sizeof *run);
  if (!o.start || !o.end || !o.worker || !dur || !rank || !top || !jobs || !run || nd_graph_edges(g, &e)) {
    rc = -1;
    goto done;
  }
  int workers = nd_runtime_workers() + nd_runtime_devices(ND_BACKEND_OPENCL);
  nd_step_result res;
  /* unobserved: the tuning pass (as `ndgraph run`), then one step, the first after it starting cold */
  if ((rc = nd_trainer_tune(tr, &err)) || (rc = nd_trainer_step(tr, &res, &err))) goto done;
  nd_exec_observe(nd__trainer_exec(tr), &(nd_exec_observer){task_done, &o});
  for (int s = 0; s < steps && !rc; s++) {
    if ((rc = nd_trainer_step(tr, &res, &err))) break;
    rows[s].step_ms = res.step_ms;
    measure(g, &e, &o, workers, dur, rank, top, jobs, run, &rows[s]);
  }
  nd_exec_observe(nd__trainer_exec(tr), NULL);
  if (!rc) *out = nd_bench_median(rows, steps);
done:
  if (rc) fprintf(stderr, "bench: %s\n", err.msg[0] ? err.msg : "out of memory");
  nd_edges_free(&e);
  free(o.start), free(o.end), free(o.worker), free(dur), free(rank), free(top), free(jobs), free(run);
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

/* Each run in a process of its own: runs that shared one process kept what
 * the process keeps between StarPU starts (the allocator's state, the
 * OpenCL platform and PoCL's, StarPU's device list), and a row's neighbours
 * were part of its measurement (docs/opencl.md, *Why the rows rotate*). */
int nd_bench_run(const char *const *kv, int steps, nd_bench_row *out) {
  int fd[2];
  if (pipe(fd)) {
    fprintf(stderr, "bench: pipe: %s\n", strerror(errno));
    return -1;
  }
  fflush(NULL); /* nothing buffered twice */
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "bench: fork: %s\n", strerror(errno));
    close(fd[0]), close(fd[1]);
    return -1;
  }
  if (pid == 0) {
    close(fd[0]);
    nd_bench_row row;
    int rc = run_here(kv, steps, &row);
    if (!rc && write(fd[1], &row, sizeof row) != (ssize_t)sizeof row) rc = -1;
    fflush(NULL);
    _exit(rc ? 1 : 0);
  }
  close(fd[1]);
  nd_bench_row row;
  size_t got = 0;
  while (got < sizeof row) {
    ssize_t n = read(fd[0], (char *)&row + got, sizeof row - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status))
    fprintf(stderr, "bench: the run stopped on signal %d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (got != sizeof row || !WIFEXITED(status) || WEXITSTATUS(status)) return -1;
  *out = row;
  return 0;
}

int nd_bench_count(const char *prog, const char *name, const char *s, int lo, int hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "%s: %s '%s': not a whole number from %d to %d\n", prog, name, s, lo, hi);
    return -1;
  }
  return (int)v;
}
