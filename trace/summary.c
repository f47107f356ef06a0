/* Trace summary. The critical path is walked back from the task that ended
 * last: at each task, the dependency (flow arrow) that ended last before it
 * started is what it waited for; without one, the worker was busy with its
 * previous task. */
#include "trace/summary.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/escape.h"
#include "graph/bound.h"

/* Timestamps are printed to the nanosecond: ties within that are ties. */
#define EPS_US 1e-6

/* One slice's contribution to a group: its name or phase, its time. */
typedef struct keyed {
  const char *key;
  double dur;
} keyed;

static int cmp_keyed(const void *a, const void *b) { return strcmp(((const keyed *)a)->key, ((const keyed *)b)->key); }

/* The slices grouped by name (phase: by phase) in O(n log n): sorted by the
 * key, then each run of equal keys summed. An empty key is "(none)". */
static int group_by(const nd_trace_model *m, int phase, nd_trace_group **out, int *n_out) {
  int32_t n = m->n_slices;
  keyed *k = malloc((size_t)(n ? n : 1) * sizeof *k);
  nd_trace_group *g = malloc((size_t)(n ? n : 1) * sizeof *g);
  if (!k || !g) {
    free(k);
    free(g);
    return ND_ENOMEM;
  }
  for (int32_t i = 0; i < n; i++) {
    const nd_trace_slice *x = &m->slices[i];
    const char *key = phase ? x->phase : x->name;
    k[i] = (keyed){key[0] ? key : "(none)", x->dur};
  }
  if (n > 1) qsort(k, (size_t)n, sizeof *k, cmp_keyed);
  int groups = 0;
  for (int32_t i = 0; i < n; i++) {
    if (i == 0 || strcmp(k[i].key, k[i - 1].key) != 0) {
      g[groups] = (nd_trace_group){.count = 0, .time_us = 0};
      snprintf(g[groups++].name, sizeof g->name, "%s", k[i].key);
    }
    g[groups - 1].count++;
    g[groups - 1].time_us += k[i].dur;
  }
  free(k);
  *out = g;
  *n_out = groups;
  return 0;
}

/* The biggest first; ties by name, so the order does not depend on the file's. */
static int cmp_group(const void *a, const void *b) {
  const nd_trace_group *x = a, *y = b;
  if (x->time_us != y->time_us) return x->time_us < y->time_us ? 1 : -1;
  return strcmp(x->name, y->name);
}

static double end_of(const nd_trace_slice *x) { return x->ts + x->dur; }

/* Arrows as lists per slice: in[in_off[i] .. in_off[i + 1]) are the slices
 * arrows come from into slice i, out[..] those they go to. */
typedef struct arrows {
  int32_t *in_off, *in, *out_off, *out;
} arrows;

static void arrows_free(arrows *a) { free(a->in_off), free(a->in), free(a->out_off), free(a->out); }

static int arrows_build(const nd_trace_model *m, arrows *a) {
  int32_t n = m->n_slices, nf = m->n_flows ? m->n_flows : 1;
  a->in_off = calloc((size_t)n + 1, sizeof *a->in_off), a->out_off = calloc((size_t)n + 1, sizeof *a->out_off);
  a->in = malloc((size_t)nf * sizeof *a->in), a->out = malloc((size_t)nf * sizeof *a->out);
  if (!a->in_off || !a->out_off || !a->in || !a->out) return ND_ENOMEM;
  for (int32_t f = 0; f < m->n_flows; f++) a->in_off[m->flows[f].to + 1]++, a->out_off[m->flows[f].from + 1]++;
  for (int32_t i = 0; i < n; i++) a->in_off[i + 1] += a->in_off[i], a->out_off[i + 1] += a->out_off[i];
  for (int32_t f = 0; f < m->n_flows; f++) {
    a->in[a->in_off[m->flows[f].to]++] = m->flows[f].from;
    a->out[a->out_off[m->flows[f].from]++] = m->flows[f].to;
  }
  for (int32_t i = n; i > 0; i--) a->in_off[i] = a->in_off[i - 1], a->out_off[i] = a->out_off[i - 1];
  a->in_off[0] = a->out_off[0] = 0;
  return 0;
}

/* A slice by its end, for the question "which earlier slice of this worker
 * ended last before c began", answered in O(log n) rather than by a scan
 * back over the worker's whole history. */
typedef struct ending {
  int thread;
  double end;
  int32_t slice;
} ending;

static int cmp_ending(const void *a, const void *b) {
  const ending *x = a, *y = b;
  if (x->thread != y->thread) return x->thread - y->thread;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return (x->slice > y->slice) - (x->slice < y->slice);
}

/* What slice c waited for, or -1 at the start of the chain. order[lo..hi):
 * c's thread's slices, ascending by (end, index). */
static int32_t waited_for(const nd_trace_model *m, const arrows *a, const ending *order, int32_t lo, int32_t hi,
                          int32_t c) {
  const nd_trace_slice *x = &m->slices[c];
  int32_t best = -1;
  for (int32_t k = a->in_off[c]; k < a->in_off[c + 1]; k++) {
    const nd_trace_slice *p = &m->slices[a->in[k]];
    if (end_of(p) <= x->ts + EPS_US && (best < 0 || end_of(p) > end_of(&m->slices[best]))) best = a->in[k];
  }
  if (best >= 0) return best;
  /* the worker was busy: its earlier slice (sorted by (thread, ts): index
   * below c) that ended last, at or before c's start */
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (order[mid].end <= x->ts + EPS_US)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (int32_t k = lo - 1; k >= 0 && order[k].thread == x->thread; k--)
    if (order[k].slice < c) return order[k].slice;
  return -1;
}

static int critical_path(const nd_trace_model *m, const arrows *a, nd_trace_summary *s) {
  int32_t n = m->n_slices;
  char *seen = calloc((size_t)(n ? n : 1), 1);
  s->path = malloc((size_t)(n ? n : 1) * sizeof *s->path);
  ending *order = malloc((size_t)(n ? n : 1) * sizeof *order);
  int32_t *run_of = calloc((size_t)m->n_threads + 1, sizeof *run_of); /* thread t: order[run_of[t] .. run_of[t+1]) */
  int rc = ND_ENOMEM;
  if (!seen || !s->path || !order || !run_of) goto cleanup;
  for (int32_t i = 0; i < n; i++) order[i] = (ending){m->slices[i].thread, end_of(&m->slices[i]), i};
  if (n > 1) qsort(order, (size_t)n, sizeof *order, cmp_ending);
  for (int32_t i = 0; i < n; i++) run_of[order[i].thread + 1] = i + 1;
  for (int t = 0; t < m->n_threads; t++)
    if (run_of[t + 1] < run_of[t]) run_of[t + 1] = run_of[t];
  int32_t c = -1;
  for (int32_t i = 0; i < n; i++)
    if (c < 0 || end_of(&m->slices[i]) > end_of(&m->slices[c])) c = i;
  /* collected last to first, then reversed */
  for (; c >= 0 && !seen[c];
       c = waited_for(m, a, order, run_of[m->slices[c].thread], run_of[m->slices[c].thread + 1], c)) {
    seen[c] = 1;
    s->path[s->path_len++] = c;
    s->path_us += m->slices[c].dur;
  }
  for (int32_t i = 0; i < s->path_len / 2; i++) {
    int32_t t = s->path[i];
    s->path[i] = s->path[s->path_len - 1 - i];
    s->path[s->path_len - 1 - i] = t;
  }
  rc = 0;
cleanup:
  free(order);
  free(run_of);
  free(seen);
  return rc;
}

/* s->dep_path_us and s->placed_bound_us. release[i]: the longest path of
 * durations along the arrows before slice i; tail[i]: after it (a
 * topological order first). */
static int placed_bound(const nd_trace_model *m, const arrows *a, nd_trace_summary *s) {
  int32_t n = m->n_slices;
  int steps = m->n_steps ? m->n_steps : 1;
  int32_t *order = malloc((size_t)(n ? n : 1) * sizeof *order), *waiting = calloc((size_t)(n ? n : 1), sizeof *waiting);
  double *release = calloc((size_t)(n ? n : 1), sizeof *release), *tail = calloc((size_t)(n ? n : 1), sizeof *tail);
  double *step_bound = calloc((size_t)steps, sizeof *step_bound);
  nd_bound_job *jobs = malloc((size_t)(n ? n : 1) * sizeof *jobs);
  int rc = ND_ENOMEM;
  if (!order || !waiting || !release || !tail || !step_bound || !jobs) goto cleanup;
  rc = 0;
  int32_t done = 0;
  for (int32_t i = 0; i < n; i++)
    if (!(waiting[i] = a->in_off[i + 1] - a->in_off[i])) order[done++] = i;
  for (int32_t k = 0; k < done; k++)
    for (int32_t j = a->out_off[order[k]]; j < a->out_off[order[k] + 1]; j++)
      if (--waiting[a->out[j]] == 0) order[done++] = a->out[j];
  if (done < n) goto cleanup; /* a cycle: no bound */
  for (int32_t k = 0; k < n; k++) {
    int32_t i = order[k];
    for (int32_t j = a->in_off[i]; j < a->in_off[i + 1]; j++)
      release[i] = fmax(release[i], release[a->in[j]] + m->slices[a->in[j]].dur);
  }
  for (int32_t k = n - 1; k >= 0; k--) {
    int32_t i = order[k];
    for (int32_t j = a->out_off[i]; j < a->out_off[i + 1]; j++)
      tail[i] = fmax(tail[i], m->slices[a->out[j]].dur + tail[a->out[j]]);
  }
  for (int32_t i = 0; i < n; i++) {
    int k = m->n_steps ? m->slices[i].in_step : 0;
    step_bound[k] = fmax(step_bound[k], release[i] + m->slices[i].dur + tail[i]);
  }
  for (int k = 0; k < steps; k++) s->dep_path_us += step_bound[k];
  /* slices are sorted by (thread, ts): each thread's run of one step at a time */
  for (int32_t i = 0; i < n;) {
    int32_t end = i, nj = 0;
    const nd_trace_slice *x = &m->slices[i];
    while (end < n && m->slices[end].thread == x->thread && m->slices[end].in_step == x->in_step) {
      jobs[nj++] = (nd_bound_job){release[end], m->slices[end].dur, tail[end]};
      end++;
    }
    int k = m->n_steps ? x->in_step : 0;
    step_bound[k] = fmax(step_bound[k], nd_one_worker_bound(jobs, nj));
    i = end;
  }
  for (int k = 0; k < steps; k++) s->placed_bound_us += step_bound[k];
cleanup:
  free(order), free(waiting), free(release), free(tail), free(step_bound), free(jobs);
  return rc;
}

/* Each worker's idle time split by where it falls. Slices are sorted by
 * (thread, ts); a slice that overlaps the one before it leaves no gap. A
 * worker that ran nothing was idle from the start for the whole span. From
 * one traced step to the next, the rest of the first is its end and the time
 * to the worker's first task in the second (the steps it ran nothing in
 * included) its start. */
static void split_idle(const nd_trace_model *m, nd_trace_summary *s) {
  for (int t = 0; t < m->n_threads; t++)
    if (!m->threads[t].n_slices) s->idle[t].lead_us = s->span_us;
  double done = 0; /* the latest end of this thread's slices so far */
  for (int32_t i = 0; i < m->n_slices; i++) {
    const nd_trace_slice *x = &m->slices[i], *before = i ? &m->slices[i - 1] : NULL;
    nd_trace_idle *w = &s->idle[x->thread];
    if (!before || x->thread != before->thread) {
      w->lead_us += x->ts - s->start_us;
      done = end_of(x);
    } else if (m->n_steps && x->in_step != before->in_step) {
      double step_end = m->steps[before->in_step].end_us;
      w->tail_us += step_end - done;
      w->lead_us += x->ts - step_end;
      done = end_of(x);
    } else {
      double gap = x->ts - done;
      if (gap >= ND_TRACE_SHORT_GAP_US)
        w->wait_us += gap;
      else if (gap > 0)
        w->short_us += gap, w->n_short++;
      done = fmax(done, end_of(x));
    }
    if (i + 1 == m->n_slices || m->slices[i + 1].thread != x->thread) w->tail_us += s->end_us - done;
  }
}

/* s->idle[].ready_us, run by run: the slices of one thread in one step
 * (sorted by (thread, ts), each run is contiguous). A slice is ready when
 * every arrow into it has ended; one without arrows in never is. */
static int split_ready(const nd_trace_model *m, const arrows *a, nd_trace_summary *s) {
  int32_t n = m->n_slices;
  nd_run_task *run = malloc((size_t)(n ? n : 1) * sizeof *run);
  if (!run) return ND_ENOMEM;
  for (int32_t i = 0; i < n;) {
    const nd_trace_slice *x = &m->slices[i];
    int32_t len = 0;
    for (; i < n && m->slices[i].thread == x->thread && m->slices[i].in_step == x->in_step; i++, len++) {
      double ready = a->in_off[i] < a->in_off[i + 1] ? 0.0 : INFINITY;
      for (int32_t k = a->in_off[i]; k < a->in_off[i + 1]; k++) ready = fmax(ready, end_of(&m->slices[a->in[k]]));
      run[len] = (nd_run_task){m->slices[i].ts, end_of(&m->slices[i]), ready};
    }
    s->idle[x->thread].ready_us += nd_ready_idle(run, len);
  }
  free(run);
  return 0;
}

int nd_trace_summarize(const nd_trace_model *m, nd_trace_summary *s) {
  memset(s, 0, sizeof *s);
  s->busy_us = calloc((size_t)(m->n_threads ? m->n_threads : 1), sizeof *s->busy_us);
  s->idle = calloc((size_t)(m->n_threads ? m->n_threads : 1), sizeof *s->idle);
  s->step_busy_us = calloc((size_t)(m->n_steps ? m->n_steps : 1), sizeof *s->step_busy_us);
  if (!s->busy_us || !s->idle || !s->step_busy_us) goto oom;
  for (int t = 0; t < m->n_threads; t++) s->workers += nd_trace_is_worker(&m->threads[t]);
  for (int32_t i = 0; i < m->n_slices; i++) {
    const nd_trace_slice *x = &m->slices[i];
    if (i == 0 || x->ts < s->start_us) s->start_us = x->ts;
    if (i == 0 || end_of(x) > s->end_us) s->end_us = end_of(x);
    s->busy_us[x->thread] += x->dur;
    if (x->in_step >= 0 && x->in_step < m->n_steps) s->step_busy_us[x->in_step] += x->dur;
    s->work_us += x->dur;
  }
  if (group_by(m, 0, &s->kinds, &s->n_kinds) || group_by(m, 1, &s->phases, &s->n_phases)) goto oom;
  s->tasks = m->n_slices;
  if (s->n_kinds > 1) qsort(s->kinds, (size_t)s->n_kinds, sizeof *s->kinds, cmp_group);
  if (s->n_phases > 1) qsort(s->phases, (size_t)s->n_phases, sizeof *s->phases, cmp_group);
  s->span_us = s->end_us - s->start_us;
  split_idle(m, s);
  /* the arrows into and out of each slice: the critical path and the bounds read them */
  arrows a = {0};
  int rc = arrows_build(m, &a);
  if (!rc) rc = critical_path(m, &a, s);
  if (!rc) rc = placed_bound(m, &a, s);
  if (!rc) rc = split_ready(m, &a, s);
  arrows_free(&a);
  if (rc) goto oom;
  s->lower_bound_us = fmax(s->dep_path_us, s->workers ? s->work_us / s->workers : 0.0);
  s->efficiency = s->span_us > 0 ? s->lower_bound_us / s->span_us : 1.0;
  s->placed_efficiency = s->span_us > 0 ? s->placed_bound_us / s->span_us : 1.0;
  return 0;
oom:
  nd_trace_summary_free(s);
  return ND_ENOMEM;
}

void nd_trace_summary_free(nd_trace_summary *s) {
  free(s->busy_us);
  free(s->step_busy_us);
  free(s->idle);
  free(s->kinds);
  free(s->phases);
  free(s->path);
  memset(s, 0, sizeof *s);
}

/* Lines of the text summary's table of steps; the JSON has every step. */
#define ND_TRACE_STEP_LINES 50

static double fraction(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

/* a name from the trace file, its control characters escaped (common/escape.h) */
typedef char shown_name[4 * ND_TRACE_NAME_MAX];

static void print_groups(FILE *f, const char *title, const nd_trace_group *g, int n, double work) {
  shown_name a;
  fprintf(f, "time per %s:\n", title);
  for (int i = 0; i < n; i++)
    fprintf(f, "  %-24s %6d  %10.3f ms  %5.1f%%\n", nd__escape(a, sizeof a, g[i].name), g[i].count, g[i].time_us / 1e3,
            100 * fraction(g[i].time_us, work));
}

static void print_text(FILE *f, const char *what, const nd_trace_model *m, const nd_trace_summary *s) {
  shown_name a, b, c;
  fprintf(f, "trace %s: %d tasks on %d workers, span %.3f ms (%.3f .. %.3f ms)\n", what, s->tasks, s->workers,
          s->span_us / 1e3, s->start_us / 1e3, s->end_us / 1e3);
  if (m->n_steps) {
    fprintf(f, "%d steps laid end to end (the time between them, other steps', left out):\n", m->n_steps);
    fprintf(f, "  %-24s %10s  %10s  %7s\n", "step", "span ms", "busy ms", "bubble");
    for (int k = 0; k < m->n_steps && k < ND_TRACE_STEP_LINES; k++) {
      const nd_trace_step_span *st = &m->steps[k];
      double span = st->end_us - st->start_us;
      fprintf(f, "  %-24lld %10.3f  %10.3f  %6.1f%%\n", (long long)st->step, span / 1e3, s->step_busy_us[k] / 1e3,
              100 * (1 - fraction(s->step_busy_us[k], span * s->workers)));
    }
    if (m->n_steps > ND_TRACE_STEP_LINES)
      fprintf(f, "  ... %d more steps (--json lists them all)\n", m->n_steps - ND_TRACE_STEP_LINES);
  }
  /* the workers' column as wide as their longest name (an OpenCL device's runs to 70 bytes) */
  int w = 24;
  for (int t = 0; t < m->n_threads; t++)
    if (nd_trace_is_worker(&m->threads[t]) && (int)strlen(nd__escape(a, sizeof a, m->threads[t].name)) > w)
      w = (int)strlen(a);
  fprintf(f, "  %-*s %6s  %10s  %10s  %7s\n", w, "worker", "tasks", "busy ms", "idle ms", "bubble");
  double idle = 0;
  for (int t = 0; t < m->n_threads; t++) {
    if (!nd_trace_is_worker(&m->threads[t])) continue;
    double w_idle = s->span_us - s->busy_us[t];
    idle += w_idle;
    fprintf(f, "  %-*s %6d  %10.3f  %10.3f  %6.1f%%\n", w, nd__escape(a, sizeof a, m->threads[t].name),
            m->threads[t].n_slices, s->busy_us[t] / 1e3, w_idle / 1e3, 100 * fraction(w_idle, s->span_us));
  }
  fprintf(f, "  %-*s %6d  %10.3f  %10.3f  %6.1f%%\n", w, "all", s->tasks, s->work_us / 1e3, idle / 1e3,
          100 * fraction(idle, s->span_us * s->workers));
  fprintf(f,
          "idle time by where it falls (short gaps: under %.0f us, the runtime's own work; ready: of the waits and "
          "short gaps, the time the task the worker ran next was already ready):\n",
          ND_TRACE_SHORT_GAP_US);
  fprintf(f, "  %-*s %10s  %10s  %18s  %10s  %10s\n", w, "worker", "start ms", "waits ms", "short gaps ms (n)",
          "ready ms", "end ms");
  for (int t = 0; t < m->n_threads; t++) {
    const nd_trace_idle *x = &s->idle[t];
    if (!nd_trace_is_worker(&m->threads[t])) continue;
    fprintf(f, "  %-*s %10.3f  %10.3f  %10.3f (%5d)  %10.3f  %10.3f\n", w, nd__escape(a, sizeof a, m->threads[t].name),
            x->lead_us / 1e3, x->wait_us / 1e3, x->short_us / 1e3, x->n_short, x->ready_us / 1e3, x->tail_us / 1e3);
  }
  print_groups(f, "kind", s->kinds, s->n_kinds, s->work_us);
  print_groups(f, "phase", s->phases, s->n_phases, s->work_us);
  fprintf(f, "critical path: %d tasks, %.3f ms of work\n", s->path_len, s->path_us / 1e3);
  for (int32_t i = 0; i < s->path_len; i++) {
    const nd_trace_slice *x = &m->slices[s->path[i]];
    fprintf(f, "  %10.3f ms  +%8.3f ms  %-24s %-12s %-10s mb %d\n", (x->ts - s->start_us) / 1e3, x->dur / 1e3,
            nd__escape(a, sizeof a, x->name), nd__escape(b, sizeof b, m->threads[x->thread].name),
            x->phase[0] ? nd__escape(c, sizeof c, x->phase) : "-", x->micro_batch);
  }
  fprintf(f, "lower bound: %.3f ms = max(longest dependency path %.3f ms, work %.3f ms / %d workers = %.3f ms)\n",
          s->lower_bound_us / 1e3, s->dep_path_us / 1e3, s->work_us / 1e3, s->workers,
          fraction(s->work_us, s->workers) / 1e3);
  fprintf(f, "efficiency: %.1f%% (lower bound / span)\n", 100 * s->efficiency);
  if (s->placed_bound_us > 0)
    fprintf(f,
            "with each task on the worker it ran on: lower bound %.3f ms (no order the arrows allow is faster), "
            "efficiency %.1f%%\n",
            s->placed_bound_us / 1e3, 100 * s->placed_efficiency);
}

static cJSON *groups_json(const nd_trace_group *g, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(a, o);
    cJSON_AddStringToObject(o, "name", g[i].name);
    cJSON_AddNumberToObject(o, "count", g[i].count);
    cJSON_AddNumberToObject(o, "time_us", g[i].time_us);
  }
  return a;
}

static cJSON *summary_json(const char *what, const nd_trace_model *m, const nd_trace_summary *s) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "trace", what);
  cJSON_AddNumberToObject(o, "tasks", s->tasks);
  cJSON_AddNumberToObject(o, "workers", s->workers);
  cJSON_AddNumberToObject(o, "start_us", s->start_us);
  cJSON_AddNumberToObject(o, "end_us", s->end_us);
  cJSON_AddNumberToObject(o, "span_us", s->span_us);
  cJSON_AddNumberToObject(o, "work_us", s->work_us);
  cJSON *steps = m->n_steps ? cJSON_AddArrayToObject(o, "steps") : NULL;
  for (int k = 0; steps && k < m->n_steps; k++) {
    const nd_trace_step_span *st = &m->steps[k];
    double span = st->end_us - st->start_us;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToArray(steps, j);
    cJSON_AddNumberToObject(j, "step", (double)st->step);
    cJSON_AddNumberToObject(j, "span_us", span);
    cJSON_AddNumberToObject(j, "busy_us", s->step_busy_us[k]);
    cJSON_AddNumberToObject(j, "bubble_fraction", 1 - fraction(s->step_busy_us[k], span * s->workers));
  }
  cJSON *ws = cJSON_AddArrayToObject(o, "per_worker");
  double idle = 0;
  for (int t = 0; ws && t < m->n_threads; t++) {
    if (!nd_trace_is_worker(&m->threads[t])) continue;
    cJSON *w = cJSON_CreateObject();
    cJSON_AddItemToArray(ws, w);
    double w_idle = s->span_us - s->busy_us[t];
    idle += w_idle;
    cJSON_AddNumberToObject(w, "pid", m->threads[t].pid);
    cJSON_AddNumberToObject(w, "tid", m->threads[t].tid);
    cJSON_AddStringToObject(w, "name", m->threads[t].name);
    cJSON_AddNumberToObject(w, "tasks", m->threads[t].n_slices);
    cJSON_AddNumberToObject(w, "busy_us", s->busy_us[t]);
    cJSON_AddNumberToObject(w, "idle_us", w_idle);
    cJSON_AddNumberToObject(w, "bubble_fraction", fraction(w_idle, s->span_us));
    const nd_trace_idle *i = &s->idle[t];
    cJSON_AddNumberToObject(w, "idle_start_us", i->lead_us);
    cJSON_AddNumberToObject(w, "idle_waits_us", i->wait_us);
    cJSON_AddNumberToObject(w, "idle_short_gaps_us", i->short_us);
    cJSON_AddNumberToObject(w, "short_gaps", i->n_short);
    cJSON_AddNumberToObject(w, "idle_ready_us", i->ready_us);
    cJSON_AddNumberToObject(w, "idle_end_us", i->tail_us);
  }
  cJSON_AddNumberToObject(o, "idle_us", idle);
  cJSON_AddNumberToObject(o, "bubble_fraction", fraction(idle, s->span_us * s->workers));
  cJSON_AddItemToObject(o, "per_kind", groups_json(s->kinds, s->n_kinds));
  cJSON_AddItemToObject(o, "per_phase", groups_json(s->phases, s->n_phases));
  cJSON *cp = cJSON_AddObjectToObject(o, "critical_path");
  cJSON_AddNumberToObject(cp, "length_us", s->path_us);
  cJSON *chain = cJSON_AddArrayToObject(cp, "tasks");
  for (int32_t i = 0; chain && i < s->path_len; i++) {
    const nd_trace_slice *x = &m->slices[s->path[i]];
    cJSON *t = cJSON_CreateObject();
    cJSON_AddItemToArray(chain, t);
    cJSON_AddStringToObject(t, "name", x->name);
    cJSON_AddStringToObject(t, "worker", m->threads[x->thread].name);
    cJSON_AddNumberToObject(t, "ts", x->ts);
    cJSON_AddNumberToObject(t, "dur", x->dur);
    cJSON_AddStringToObject(t, "phase", x->phase);
    cJSON_AddNumberToObject(t, "micro_batch", x->micro_batch);
    cJSON_AddNumberToObject(t, "task", (double)x->task);
  }
  cJSON_AddNumberToObject(o, "dependency_path_us", s->dep_path_us);
  cJSON_AddNumberToObject(o, "lower_bound_us", s->lower_bound_us);
  cJSON_AddNumberToObject(o, "efficiency", s->efficiency);
  cJSON_AddNumberToObject(o, "placed_lower_bound_us", s->placed_bound_us);
  cJSON_AddNumberToObject(o, "placed_efficiency", s->placed_efficiency);
  return o;
}

int nd_trace_summary_print(FILE *f, const char *what, const nd_trace_model *m, const nd_trace_summary *s, int json) {
  if (!json) {
    print_text(f, what, m, s);
    return 0;
  }
  cJSON *o = summary_json(what, m, s);
  char *text = o ? cJSON_Print(o) : NULL;
  cJSON_Delete(o);
  if (!text) return ND_ENOMEM;
  fprintf(f, "%s\n", text);
  free(text);
  return 0;
}
