/* A traced training run, checked against the IR: every task of each traced
 * step appears exactly once, a worker's slices never overlap, every
 * dependency reads forwards, every arrow binds to existing slices, and the
 * Gantt chart has one box per task. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/ir.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define TOL 1e-6

typedef struct slice {
  double ts, dur;
  int tid;
  long task, step;
} slice;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = '\0';
  fclose(f);
  return s;
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : -1e300;
}

static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static int cmp_slice(const void *a, const void *b) {
  const slice *x = a, *y = b;
  if (x->tid != y->tid) return x->tid - y->tid;
  return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The slice of thread tid whose [ts, ts + dur] holds t, or -1. */
static int enclosing(const slice *s, int n, int tid, double t) {
  int found = -1;
  for (int i = 0; i < n; i++)
    if (s[i].tid == tid && s[i].ts - TOL <= t && t <= s[i].ts + s[i].dur + TOL) found = i;
  return found;
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Trains train.steps steps, each traced step as `ndgraph run` traces it
 * (cli/run.c) into trace.path and trace.svg. */
static int traced_run(const nd_config *cfg, const char *json, const char *svg, nd_error *err) {
  char buf[32];
  nd_trainer *tr = NULL;
  int rc = nd_config_get(cfg, "train.steps", buf, sizeof buf);
  if (rc || (rc = nd_trainer_open(&tr, cfg, err))) return rc;
  long long last = atoll(buf);
  while (!rc && nd_trainer_steps_done(tr) < last) {
    nd_step_result r;
    int tasks;
    long long step = nd_trainer_steps_done(tr) + 1;
    rc = nd_trace_wanted(cfg, 1, last, step) ? nd_trainer_step_traced(tr, json, svg, &r, &tasks, err)
                                             : nd_trainer_step(tr, &r, err);
  }
  nd_trainer_close(tr);
  return rc;
}

/* Runs `overrides` with a trace and checks it; `steps` lists the steps expected traced. */
static void check_run(const char *label, const char *const *overrides, const long *steps, int n_steps, int flows) {
  char json_path[64], svg_path[64], set_json[96], set_svg[96];
  snprintf(json_path, sizeof json_path, "/tmp/nd-trace-%d.json", (int)getpid());
  snprintf(svg_path, sizeof svg_path, "/tmp/nd-trace-%d.svg", (int)getpid());
  snprintf(set_json, sizeof set_json, "trace.path=%s", json_path);
  snprintf(set_svg, sizeof set_svg, "trace.svg=%s", svg_path);
  const char *all[16];
  int k = 0;
  for (; overrides[k]; k++) all[k] = overrides[k];
  all[k++] = set_json;
  all[k++] = set_svg;
  all[k] = NULL;
  nd_config *cfg = tiny_config(all);
  nd_graph *g = NULL;
  nd_edges e = {0};
  nd_error err = {0};
  char *text = NULL, *svg = NULL;
  cJSON *doc = NULL;
  slice *s = NULL;
  if (!ok(cfg != NULL, "%s: configuration", label)) return;
  if (!ok(traced_run(cfg, json_path, svg_path, &err) == 0, "%s: traced run (%s)", label, err.msg)) goto done;
  if (!ok(nd_graph_build(&g, cfg, 0, &err) == 0 && nd_graph_edges(g, &e) == 0, "%s: graph", label)) goto done;
  text = slurp(json_path);
  doc = text ? cJSON_Parse(text) : NULL;
  const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
  if (!ok(cJSON_IsArray(events), "%s: the trace parses as JSON with traceEvents", label)) goto done;
  ok(strcmp(str(doc, "displayTimeUnit"), "ms") == 0, "%s: displayTimeUnit ms", label);

  int n_events = cJSON_GetArraySize(events), n = 0, bad = 0, named_process = 0, named_threads = 0;
  s = calloc((size_t)n_events, sizeof *s);
  const cJSON *ev;
  cJSON_ArrayForEach(ev, events) {
    const char *ph = str(ev, "ph");
    if (strcmp(ph, "M") == 0) {
      named_process += strcmp(str(ev, "name"), "process_name") == 0;
      named_threads += strcmp(str(ev, "name"), "thread_name") == 0;
    }
    if (strcmp(ph, "X") != 0) continue;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    s[n] =
        (slice){num(ev, "ts"), num(ev, "dur"), (int)num(ev, "tid"), (long)num(args, "task"), (long)num(args, "step")};
    bad += s[n].dur < 0 || num(ev, "pid") != 0 || s[n].task < 0 || s[n].task >= g->n_tasks ||
           strcmp(str(args, "kind"), nd_task_kind_name(g->tasks[s[n].task].kind)) != 0 ||
           strcmp(str(args, "phase"), nd_phase_name(g->tasks[s[n].task].phase)) != 0 ||
           num(args, "micro_batch") != g->tasks[s[n].task].micro_batch ||
           num(args, "pp") != g->tasks[s[n].task].rank.pp || num(args, "flops") != (double)g->tasks[s[n].task].flops;
    n++;
  }
  ok(bad == 0, "%s: complete events carry the IR's identity (%d wrong)", label, bad);
  ok(named_process == 1 && named_threads >= 1, "%s: process and thread names", label);

  /* each task once per traced step, no other step */
  int *seen = calloc((size_t)g->n_tasks * (size_t)n_steps, sizeof *seen);
  int stray = 0;
  for (int i = 0; i < n; i++) {
    int j = 0;
    while (j < n_steps && steps[j] != s[i].step) j++;
    if (j == n_steps)
      stray++;
    else
      seen[(size_t)j * (size_t)g->n_tasks + (size_t)s[i].task]++;
  }
  int once = 1;
  for (size_t i = 0; i < (size_t)g->n_tasks * (size_t)n_steps; i++) once &= seen[i] == 1;
  ok(once && stray == 0 && n == g->n_tasks * n_steps,
     "%s: every task of %d traced step(s) exactly once (%d events, %d tasks)", label, n_steps, n, g->n_tasks);

  /* edges, per step: index by (step slot, task) */
  slice **at = calloc((size_t)g->n_tasks * (size_t)n_steps, sizeof *at);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n_steps; j++)
      if (steps[j] == s[i].step) at[(size_t)j * (size_t)g->n_tasks + (size_t)s[i].task] = &s[i];
  int backwards = 0;
  for (int j = 0; j < n_steps && once; j++)
    for (int32_t t = 0; t < g->n_tasks; t++)
      for (int32_t p = e.pred_off[t]; p < e.pred_off[t + 1]; p++) {
        const slice *a = at[(size_t)j * (size_t)g->n_tasks + (size_t)e.pred[p]],
                    *b = at[(size_t)j * (size_t)g->n_tasks + (size_t)t];
        backwards += b->ts + TOL < a->ts + a->dur;
      }
  ok(once && backwards == 0, "%s: every one of %lld dependencies respected (%d not)", label, (long long)e.n_edges,
     backwards);
  free(at);
  free(seen);

  /* flows: pairs with one "s" and one "f", each inside an existing slice */
  int n_s = 0, n_f = 0, unbound = 0, unpaired = 0;
  cJSON_ArrayForEach(ev, events) {
    const char *ph = str(ev, "ph");
    if (strcmp(ph, "s") != 0 && strcmp(ph, "f") != 0) continue;
    if (ph[0] == 's')
      n_s++;
    else {
      n_f++;
      unbound += strcmp(str(ev, "bp"), "e") != 0;
    }
    unbound += enclosing(s, n, (int)num(ev, "tid"), num(ev, "ts")) < 0;
    int partners = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, events) {
      const char *oph = str(o, "ph");
      if (o != ev && num(o, "id") == num(ev, "id") && oph[0] == (ph[0] == 's' ? 'f' : 's') && oph[1] == '\0' &&
          strcmp(str(o, "name"), str(ev, "name")) == 0 && strcmp(str(o, "cat"), str(ev, "cat")) == 0)
        partners++;
    }
    unpaired += partners != 1;
  }
  if (flows)
    ok(n_s == n_f && n_s == (int)e.n_edges * n_steps && unbound == 0 && unpaired == 0,
       "%s: %d flow arrows, each end inside a slice of its thread (%d unbound, %d unpaired)", label, n_s, unbound,
       unpaired);
  else
    ok(n_s == 0 && n_f == 0, "%s: no flow events with trace.flows false", label);

  qsort(s, (size_t)n, sizeof *s, cmp_slice);
  int overlaps = 0;
  for (int i = 1; i < n; i++) overlaps += s[i].tid == s[i - 1].tid && s[i].ts + TOL < s[i - 1].ts + s[i - 1].dur;
  ok(overlaps == 0, "%s: no two slices of a worker overlap (%d do)", label, overlaps);

  svg = slurp(svg_path);
  ok(svg && count(svg, "class=\"task\"") == n, "%s: the Gantt chart has one box per task (%d)", label,
     svg ? count(svg, "class=\"task\"") : -1);
done:
  free(s);
  free(svg);
  cJSON_Delete(doc);
  free(text);
  nd_edges_free(&e);
  nd_graph_free(g);
  nd_config_free(cfg);
  remove(json_path);
  remove(svg_path);
}

int main(void) {
  /* the default: one step after the first */
  const char *const pipeline[] = {"parallelism.pipeline_parallel_size=2",
                                  "parallelism.micro_batches=4",
                                  "train.steps=3",
                                  "train.eval_every=0",
                                  "log.every=100",
                                  NULL};
  check_run("pp=2", pipeline, (const long[]){2}, 1, 1);
  /* listed steps, tensor and data parallel, no arrows */
  const char *const grid[] = {"parallelism.data_parallel_size=2",
                              "parallelism.tensor_parallel_size=2",
                              "parallelism.micro_batches=2",
                              "train.steps=3",
                              "trace.steps=[1, 3]",
                              "trace.flows=false",
                              "log.every=100",
                              NULL};
  check_run("dp=2 tp=2", grid, (const long[]){1, 3}, 2, 0);
  /* fewer steps than the default wants: the last */
  const char *const one[] = {"train.steps=1", "log.every=100", NULL};
  check_run("one step", one, (const long[]){1}, 1, 1);
  return done_testing();
}
