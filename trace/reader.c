/* Reads a Chrome trace (Trace Event Format) into an nd_trace_model: complete
 * events become slices; flow events ("s", "f") become arrows between the
 * slices they bind to, as the viewers bind them. */
#include "trace/model.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/file.h"

/* One end of an arrow before binding: the key pairs "s" with "f". */
typedef struct flow_end {
  char key[96];
  int thread;
  double ts;
  int enclosing; /* "s", or "f" with "bp": "e"; else the next slice to start */
  int is_start;
} flow_end;

static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int num(const cJSON *o, const char *k, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!cJSON_IsNumber(v)) return 0;
  *out = v->valuedouble;
  return 1;
}

/* Out of int's range (1e300, say) is as good as absent: no undefined cast. */
static int int_or(const cJSON *o, const char *k, int dflt) {
  double d;
  return num(o, k, &d) && d >= INT_MIN && d <= INT_MAX ? (int)d : dflt;
}

/* Times beyond this many microseconds (about 31,700 years, far past any
 * epoch-based clock) or not finite are an error: they would make every later
 * computation (span, ticks, the chart's width) meaningless or endless. */
#define MAX_US 1e18

/* ts (and dur) of event i, checked: both must be numbers, dur not negative. */
static int times(const cJSON *e, int32_t i, const char *what, double *ts, double *dur, nd_error *err) {
  const char *bad = NULL, *field = "ts";
  double value = 0;
  if (!num(e, "ts", ts))
    bad = "is missing or not a number";
  else if (fabs(*ts) > MAX_US)
    bad = "is not a time within +-1e18 us", value = *ts;
  else if (dur && (field = "dur", !num(e, "dur", dur)))
    bad = "is missing or not a number";
  else if (dur && !(*dur >= 0 && *dur <= MAX_US))
    bad = *dur < 0 ? "is negative" : "is not a time within +-1e18 us", value = *dur;
  if (!bad) return 0;
  const char *name = str(e, "name");
  char shown[40] = "";
  if (value != 0) snprintf(shown, sizeof shown, " %g", value);
  return nd__fail(err, ND_EINVAL, "%s: event %d (\"%.64s\"): %s%s %s", what, (int)i, name ? name : "", field, shown,
                  bad);
}

/* pid and tid of event i: integers when present (absent: 0, as the viewers
 * read them). A string or an object there is refused, not folded into
 * thread 0:0 with every other such event. */
static int ids(const cJSON *e, int32_t i, const char *what, int *pid, int *tid, nd_error *err) {
  const char *keys[2] = {"pid", "tid"};
  int *out[2] = {pid, tid};
  for (int k = 0; k < 2; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, keys[k]);
    double d = cJSON_IsNumber(v) ? v->valuedouble : 0;
    if (v && !(cJSON_IsNumber(v) && d == floor(d) && d >= INT_MIN && d <= INT_MAX)) {
      const char *name = str(e, "name");
      return nd__fail(err, ND_EINVAL, "%s: event %d (\"%.64s\"): %s is not an integer", what, (int)i, name ? name : "",
                      keys[k]);
    }
    *out[k] = (int)d;
  }
  return 0;
}

/* Threads by (pid, tid): open addressing over indices into m->threads, so
 * that a trace with a new thread on every event stays O(n). */
typedef struct thread_index {
  int *slot; /* -1: empty */
  size_t cap;
} thread_index;

static size_t hash_of(int pid, int tid, size_t cap) {
  uint64_t h = ((uint64_t)(uint32_t)pid << 32 | (uint32_t)tid) * UINT64_C(0x9E3779B97F4A7C15);
  return (size_t)(h >> 17) & (cap - 1);
}

static int index_grow(thread_index *ix, const nd_trace_model *m) {
  size_t cap = ix->cap ? 2 * ix->cap : 64;
  int *slot = malloc(cap * sizeof *slot);
  if (!slot) return ND_ENOMEM;
  for (size_t i = 0; i < cap; i++) slot[i] = -1;
  for (int t = 0; t < m->n_threads; t++) {
    size_t h = hash_of(m->threads[t].pid, m->threads[t].tid, cap);
    while (slot[h] >= 0) h = (h + 1) & (cap - 1);
    slot[h] = t;
  }
  free(ix->slot);
  ix->slot = slot;
  ix->cap = cap;
  return 0;
}

static int thread_of(nd_trace_model *m, thread_index *ix, int pid, int tid) {
  if ((size_t)m->n_threads * 2 >= ix->cap && index_grow(ix, m)) return -1;
  size_t h = hash_of(pid, tid, ix->cap);
  for (; ix->slot[h] >= 0; h = (h + 1) & (ix->cap - 1))
    if (m->threads[ix->slot[h]].pid == pid && m->threads[ix->slot[h]].tid == tid) return ix->slot[h];
  nd_trace_thread *t = realloc(m->threads, (size_t)(m->n_threads + 1) * sizeof *t);
  if (!t) return -1;
  m->threads = t;
  t[m->n_threads] = (nd_trace_thread){.pid = pid, .tid = tid, .sort = tid};
  snprintf(t[m->n_threads].name, sizeof t->name, "%d:%d", pid, tid);
  ix->slot[h] = m->n_threads;
  return m->n_threads++;
}

static void copy(char *dst, size_t size, const char *src) { snprintf(dst, size, "%s", src ? src : ""); }

static int add_slice(nd_trace_model *m, const cJSON *e, int32_t event, int thread, int32_t *cap, double ts,
                     double dur) {
  if (m->n_slices == *cap) {
    int32_t n = *cap ? 2 * *cap : 256;
    nd_trace_slice *s = realloc(m->slices, (size_t)n * sizeof *s);
    if (!s) return ND_ENOMEM;
    m->slices = s;
    *cap = n;
  }
  nd_trace_slice *s = &m->slices[m->n_slices++];
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
  double d;
  *s = (nd_trace_slice){.thread = thread, .event = event, .micro_batch = -1, .task = -1, .step = -1, .in_step = -1};
  copy(s->name, sizeof s->name, str(e, "name"));
  s->ts = ts;
  s->dur = dur;
  if (cJSON_IsObject(args)) {
    copy(s->phase, sizeof s->phase, str(args, "phase"));
    s->micro_batch = int_or(args, "micro_batch", -1);
    if (num(args, "task", &d) && fabs(d) < 9e18) s->task = (int64_t)d;
    if (num(args, "step", &d) && d >= 0 && d < 9e18) s->step = (int64_t)d;
  }
  return 0;
}

static int add_flow_end(flow_end **ends, int32_t *n, int32_t *cap, const cJSON *e, int thread, int is_start,
                        double ts) {
  if (*n == *cap) {
    int32_t c = *cap ? 2 * *cap : 256;
    flow_end *f = realloc(*ends, (size_t)c * sizeof *f);
    if (!f) return ND_ENOMEM;
    *ends = f;
    *cap = c;
  }
  flow_end *f = &(*ends)[(*n)++];
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
  const char *cat = str(e, "cat"), *bp = str(e, "bp");
  char idtext[48];
  if (cJSON_IsString(id))
    copy(idtext, sizeof idtext, id->valuestring);
  else
    snprintf(idtext, sizeof idtext, "%.17g", cJSON_IsNumber(id) ? id->valuedouble : 0.0);
  snprintf(f->key, sizeof f->key, "%s\x1f%s", cat ? cat : "", idtext);
  f->thread = thread;
  f->ts = ts;
  f->is_start = is_start;
  f->enclosing = is_start || (bp && strcmp(bp, "e") == 0);
  return 0;
}

static int cmp_thread(const void *a, const void *b) {
  const nd_trace_thread *x = a, *y = b;
  if (x->pid != y->pid) return x->pid - y->pid;
  if (x->sort != y->sort) return x->sort - y->sort;
  return x->tid - y->tid;
}

/* Threads in display order (process, sort index, id), the slices following. */
static int sort_threads(nd_trace_model *m, flow_end *ends, int32_t n_ends) {
  nd_trace_thread *old = malloc((size_t)(m->n_threads ? m->n_threads : 1) * sizeof *old);
  int *where = malloc((size_t)(m->n_threads ? m->n_threads : 1) * sizeof *where);
  if (!old || !where) {
    free(old);
    free(where);
    return ND_ENOMEM;
  }
  /* the old index rides along in n_slices (zero until counted below) */
  for (int i = 0; i < m->n_threads; i++) m->threads[i].n_slices = i;
  if (m->n_threads > 0) memcpy(old, m->threads, (size_t)m->n_threads * sizeof *old);
  if (m->n_threads > 1) qsort(m->threads, (size_t)m->n_threads, sizeof *m->threads, cmp_thread);
  for (int j = 0; j < m->n_threads; j++) {
    where[m->threads[j].n_slices] = j;
    m->threads[j].n_slices = 0;
  }
  for (int32_t i = 0; i < m->n_slices; i++) {
    m->slices[i].thread = where[m->slices[i].thread];
    m->threads[m->slices[i].thread].n_slices++;
  }
  for (int32_t i = 0; i < n_ends; i++) ends[i].thread = where[ends[i].thread];
  free(old);
  free(where);
  return 0;
}

/* At one start the shorter slice first: a zero-length slice at the start of
 * the next one (a remote task squeezed to its successor's start in a job's
 * trace) comes before it, not inside it; then the file's order. */
static int cmp_slice(const void *a, const void *b) {
  const nd_trace_slice *x = a, *y = b;
  if (x->thread != y->thread) return x->thread - y->thread;
  if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
  if (x->dur != y->dur) return (x->dur > y->dur) - (x->dur < y->dur);
  return (x->event > y->event) - (x->event < y->event);
}

/* A thread's slices one after another: the summary's busy and idle times,
 * its critical path and the chart's rows all take a thread for a worker that
 * runs one task at a time. Nested slices (a profiler's call stacks) would
 * count the same time twice (an idle time below zero), so they are refused.
 * Slices are sorted by (thread, ts); a nanosecond of overlap is rounding. */
static int one_at_a_time(const nd_trace_model *m, const char *what, nd_error *err) {
  for (int32_t i = 1; i < m->n_slices; i++) {
    const nd_trace_slice *a = &m->slices[i - 1], *b = &m->slices[i];
    if (a->thread != b->thread || b->ts >= a->ts + a->dur - 1e-3) continue;
    const nd_trace_thread *t = &m->threads[b->thread];
    return nd__fail(err, ND_EINVAL,
                    "%s: event %d (\"%.64s\") starts at %.3f us, inside event %d (\"%.64s\", %.3f-%.3f us) on "
                    "thread %d:%d; the summary and the chart need one task at a time on a thread",
                    what, (int)b->event, b->name, b->ts, (int)a->event, a->name, a->ts, a->ts + a->dur, t->pid, t->tid);
  }
  return 0;
}

static int cmp_end(const void *a, const void *b) {
  const flow_end *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : y->is_start - x->is_start; /* the start first */
}

/* The slice of `thread` an arrow end binds to, or -1. Slices are sorted by (thread, ts). */
static int32_t bind(const nd_trace_model *m, const int32_t *first, const flow_end *f) {
  int32_t lo = first[f->thread], hi = first[f->thread + 1];
  /* last slice starting at or before ts */
  int32_t a = lo, b = hi;
  while (a < b) {
    int32_t mid = (a + b) / 2;
    if (m->slices[mid].ts <= f->ts)
      a = mid + 1;
    else
      b = mid;
  }
  if (f->enclosing) {
    /* the innermost slice that contains ts: among those starting before, the latest */
    for (int32_t i = a - 1; i >= lo; i--)
      if (m->slices[i].ts + m->slices[i].dur >= f->ts) return i;
    return -1;
  }
  return a < hi ? a : -1;
}

static int bind_flows(nd_trace_model *m, flow_end *ends, int32_t n) {
  int32_t *first = calloc((size_t)m->n_threads + 1, sizeof *first);
  if (!first) return ND_ENOMEM;
  for (int32_t i = 0; i < m->n_slices; i++) first[m->slices[i].thread + 1]++;
  for (int t = 0; t < m->n_threads; t++) first[t + 1] += first[t];
  if (n > 1) qsort(ends, (size_t)n, sizeof *ends, cmp_end);
  m->flows = malloc((size_t)(n ? n : 1) * sizeof *m->flows);
  if (!m->flows) {
    free(first);
    return ND_ENOMEM;
  }
  int32_t from = -1;
  for (int32_t i = 0; i < n; i++) {
    if (i == 0 || strcmp(ends[i].key, ends[i - 1].key) != 0) from = -1;
    if (ends[i].is_start) {
      from = bind(m, first, &ends[i]);
      continue;
    }
    int32_t to = bind(m, first, &ends[i]);
    if (from >= 0 && to >= 0 && from != to) m->flows[m->n_flows++] = (nd_trace_flow){from, to};
  }
  free(first);
  return 0;
}

static void apply_metadata(nd_trace_model *m, const cJSON *e, int thread) {
  const char *name = str(e, "name");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
  if (!name || !cJSON_IsObject(args)) return;
  if (strcmp(name, "thread_name") == 0 && str(args, "name")) {
    copy(m->threads[thread].name, sizeof m->threads[thread].name, str(args, "name"));
    m->threads[thread].named = 1;
  } else if (strcmp(name, "thread_sort_index") == 0)
    m->threads[thread].sort = int_or(args, "sort_index", m->threads[thread].sort);
}

int nd_trace_model_from_json(nd_trace_model *m, const cJSON *doc, const char *what, nd_error *err) {
  memset(m, 0, sizeof *m);
  const cJSON *events = cJSON_IsArray(doc) ? doc : cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
  if (!cJSON_IsArray(events)) return nd__fail(err, ND_EINVAL, "%s: not a Chrome trace (no traceEvents array)", what);
  flow_end *ends = NULL;
  int32_t n_ends = 0, cap_ends = 0, cap_slices = 0;
  int rc = 0;
  const cJSON *e;
  int32_t index = -1;
  thread_index ix = {NULL, 0};
  double ts = 0, dur = 0;
  cJSON_ArrayForEach(e, events) {
    const char *ph = str(e, "ph");
    index++;
    if (!ph) continue;
    int slice = strcmp(ph, "X") == 0, flow = strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0;
    int pid, tid;
    if (((slice || flow) && (rc = times(e, index, what, &ts, slice ? &dur : NULL, err))) ||
        (rc = ids(e, index, what, &pid, &tid, err)))
      goto cleanup;
    int thread = thread_of(m, &ix, pid, tid);
    if (thread < 0)
      rc = ND_ENOMEM;
    else if (slice)
      rc = add_slice(m, e, index, thread, &cap_slices, ts, dur);
    else if (flow)
      rc = add_flow_end(&ends, &n_ends, &cap_ends, e, thread, ph[0] == 's', ts);
    else if (strcmp(ph, "M") == 0)
      apply_metadata(m, e, thread);
    if (rc) goto cleanup;
  }
  if ((rc = sort_threads(m, ends, n_ends))) goto cleanup;
  if (m->n_slices > 1) qsort(m->slices, (size_t)m->n_slices, sizeof *m->slices, cmp_slice);
  if ((rc = one_at_a_time(m, what, err))) goto cleanup;
  if (!(rc = bind_flows(m, ends, n_ends))) rc = nd_trace_model_lay_steps(m);
cleanup:
  free(ix.slot);
  free(ends);
  if (rc) nd_trace_model_free(m);
  /* a bad event has said which; every other failure here is memory */
  return rc == ND_ENOMEM ? nd__fail(err, rc, "%s: out of memory reading the trace", what) : rc;
}

int nd_trace_model_load(nd_trace_model *m, const char *path, nd_error *err) {
  memset(m, 0, sizeof *m);
  char *text;
  int rc = nd__read_file(path, SIZE_MAX, &text, NULL);
  if (rc == ND_EDATA) return nd__fail(err, ND_EIO, "%s: not a regular file", path);
  if (rc) return nd__fail(err, rc, "%s: %s the trace", path, rc == ND_ENOMEM ? "out of memory reading" : "cannot read");
  cJSON *doc = cJSON_Parse(text);
  free(text);
  if (!doc) return nd__fail(err, ND_EINVAL, "%s: not valid JSON", path);
  rc = nd_trace_model_from_json(m, doc, path, err);
  cJSON_Delete(doc);
  return rc;
}

void nd_trace_model_free(nd_trace_model *m) {
  free(m->steps);
  free(m->slices);
  free(m->threads);
  free(m->flows);
  memset(m, 0, sizeof *m);
}
