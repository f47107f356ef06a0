/* Chrome trace writer. Times are rounded to nanoseconds before the duration
 * is taken, so that start + dur of a predecessor never exceeds a successor's
 * start once printed. */
#include "trace/chrome.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static double ns_round(double us) { return round(us * 1e3) / 1e3; }

/* A point strictly inside [start, end] when the slice has room, so the
 * viewers bind the arrow end to this slice and not to a neighbour. */
static double inside(const nd_trace_time *t, int at_end) {
  double s = ns_round(t->start), e = ns_round(t->end);
  if (e - s < 0.002) return s;
  return at_end ? e - 0.001 : s + 0.001;
}

/* The node a worker belongs to: the trace's process id. */
static int pid_of(const nd_trace_run *run, int worker) {
  return run->worker_node && worker >= 0 && worker < run->n_workers ? run->worker_node[worker] : 0;
}

static cJSON *event(cJSON *events, const char *ph, const char *name, int pid, int tid) {
  cJSON *e = cJSON_CreateObject();
  if (!e) return NULL;
  cJSON_AddItemToArray(events, e);
  cJSON_AddStringToObject(e, "ph", ph);
  cJSON_AddStringToObject(e, "name", name);
  cJSON_AddNumberToObject(e, "pid", pid);
  cJSON_AddNumberToObject(e, "tid", tid);
  return e;
}

static void metadata(cJSON *events, const char *name, int pid, int tid, const char *key, const char *s, double v) {
  cJSON *e = event(events, "M", name, pid, tid);
  if (!e) return;
  cJSON *args = cJSON_AddObjectToObject(e, "args");
  if (s)
    cJSON_AddStringToObject(args, key, s);
  else
    cJSON_AddNumberToObject(args, key, v);
}

static void task_event(cJSON *events, const nd_trace_run *run, int32_t i, const nd_trace_time *t, long long step) {
  const nd_trace_task *k = &run->tasks[i];
  cJSON *e = event(events, "X", nd_task_kind_name(k->kind), pid_of(run, t->worker), t->worker);
  if (!e) return;
  double s = ns_round(t->start);
  cJSON_AddStringToObject(e, "cat", nd_phase_name(k->phase));
  cJSON_AddNumberToObject(e, "ts", s);
  cJSON_AddNumberToObject(e, "dur", ns_round(ns_round(t->end) - s));
  cJSON *a = cJSON_AddObjectToObject(e, "args");
  cJSON_AddStringToObject(a, "kind", nd_task_kind_name(k->kind));
  cJSON_AddStringToObject(a, "phase", nd_phase_name(k->phase));
  cJSON_AddNumberToObject(a, "dp", k->rank.dp);
  cJSON_AddNumberToObject(a, "pp", k->rank.pp);
  cJSON_AddNumberToObject(a, "tp", k->rank.tp);
  cJSON_AddNumberToObject(a, "micro_batch", k->micro_batch);
  cJSON_AddNumberToObject(a, "layer", k->layer);
  cJSON_AddNumberToObject(a, "flops", (double)k->flops);
  cJSON_AddNumberToObject(a, "bytes", (double)k->bytes);
  cJSON_AddNumberToObject(a, "task", i);
  cJSON_AddNumberToObject(a, "step", (double)step);
  if (run->impl && run->impl[k->kind]) {
    cJSON_AddStringToObject(a, "impl", run->impl[k->kind]);
    if (strcmp(run->impl_origin[k->kind], "builtin") != 0)
      cJSON_AddStringToObject(a, "plugin", run->impl_origin[k->kind]);
  }
}

static void flow_event(cJSON *events, const nd_trace_run *run, const char *ph, const nd_trace_time *t, int at_end,
                       double id) {
  cJSON *e = event(events, ph, "dependency", pid_of(run, t->worker), t->worker);
  if (!e) return;
  cJSON_AddStringToObject(e, "cat", "dependency");
  cJSON_AddNumberToObject(e, "id", id);
  cJSON_AddNumberToObject(e, "ts", inside(t, at_end));
  if (!at_end) cJSON_AddStringToObject(e, "bp", "e");
}

/* A stretch a worker spent running blocks of another worker's kernel: a slice of its own
 * phase, so that a summary counts the worker busy and tells the time apart. */
static void help_event(cJSON *events, const nd_trace_run *run, const nd_trace_time *t, long long step) {
  cJSON *e = event(events, "X", "help", pid_of(run, t->worker), t->worker);
  if (!e) return;
  double s = ns_round(t->start);
  cJSON_AddStringToObject(e, "cat", "help");
  cJSON_AddNumberToObject(e, "ts", s);
  cJSON_AddNumberToObject(e, "dur", ns_round(ns_round(t->end) - s));
  cJSON *a = cJSON_AddObjectToObject(e, "args");
  cJSON_AddStringToObject(a, "phase", "help");
  cJSON_AddNumberToObject(a, "step", (double)step);
}

/* Bus totals of a step as counters at its end: StarPU reports sums, not
 * individual copies, so no slice is invented for them. */
static void transfers(cJSON *events, const nd_trace_step *st) {
  for (int i = 0; i < st->n_transfers; i++) {
    const nd_trace_transfer *x = &st->transfers[i];
    char name[64];
    snprintf(name, sizeof name, "bus %d->%d", x->src, x->dst);
    cJSON *e = event(events, "C", name, 0, 0);
    if (!e) return;
    cJSON_AddNumberToObject(e, "ts", ns_round(st->end_us));
    cJSON *a = cJSON_AddObjectToObject(e, "args");
    cJSON_AddNumberToObject(a, "bytes", (double)x->bytes);
    cJSON_AddNumberToObject(a, "transfers", x->count);
  }
}

cJSON *nd_trace_chrome_build(const nd_trace_run *run) {
  cJSON *doc = cJSON_CreateObject();
  cJSON *events = doc ? cJSON_AddArrayToObject(doc, "traceEvents") : NULL;
  if (!events) {
    cJSON_Delete(doc);
    return NULL;
  }
  cJSON_AddStringToObject(doc, "displayTimeUnit", "ms");
  for (int p = 0; p < (run->n_nodes > 1 ? run->n_nodes : 1); p++) {
    char name[64];
    snprintf(name, sizeof name, "ndgraph process %d", p);
    metadata(events, "process_name", p, 0, "name", run->n_nodes > 1 ? name : "ndgraph (this node)", 0);
    metadata(events, "process_sort_index", p, 0, "sort_index", NULL, p);
  }
  for (int w = 0; w < run->n_workers; w++) {
    metadata(events, "thread_name", pid_of(run, w), w, "name", run->worker_names[w], 0);
    metadata(events, "thread_sort_index", pid_of(run, w), w, "sort_index", NULL, w);
  }
  for (int s = 0; s < run->n_steps; s++) {
    const nd_trace_step *st = &run->steps[s];
    for (int32_t i = 0; i < run->n_tasks; i++)
      if (st->times[i].worker >= 0) task_event(events, run, i, &st->times[i], st->step);
    for (int i = 0; i < st->n_helps; i++) help_event(events, run, &st->helps[i], st->step);
    transfers(events, st);
    if (!run->edges) continue;
    for (int32_t i = 0; i < run->n_tasks; i++)
      for (int32_t k = run->edges->succ_off[i]; k < run->edges->succ_off[i + 1]; k++) {
        const nd_trace_time *from = &st->times[i], *to = &st->times[run->edges->succ[k]];
        if (from->worker < 0 || to->worker < 0) continue;
        double id = (double)s * (double)run->edges->n_edges + (double)k;
        flow_event(events, run, "s", from, 1, id);
        flow_event(events, run, "f", to, 0, id);
      }
  }
  return doc;
}
