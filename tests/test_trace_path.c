/* The critical path and the groups of `trace summarize`, computed in
 * O(n log n), against the plain definitions (a scan back over the worker's
 * earlier tasks, a search of the groups by name) on random traces with
 * overlapping and nested tasks, equal ends and arrows. */
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "trace/model.h"
#include "trace/summary.h"

#define EPS_US 1e-6

static double end_of(const nd_trace_slice *x) { return x->ts + x->dur; }

/* The definition: the arrow that ended last before c started; else the
 * earlier task of c's worker that did, the latest index among equal ends. */
static int32_t waited_for(const nd_trace_model *m, int32_t c) {
  const nd_trace_slice *x = &m->slices[c];
  int32_t best = -1;
  for (int32_t f = 0; f < m->n_flows; f++) {
    if (m->flows[f].to != c) continue;
    const nd_trace_slice *p = &m->slices[m->flows[f].from];
    if (end_of(p) <= x->ts + EPS_US && (best < 0 || end_of(p) > end_of(&m->slices[best]))) best = m->flows[f].from;
  }
  if (best >= 0) return best;
  for (int32_t i = c - 1; i >= 0 && m->slices[i].thread == x->thread; i--)
    if (end_of(&m->slices[i]) <= x->ts + EPS_US && (best < 0 || end_of(&m->slices[i]) > end_of(&m->slices[best])))
      best = i;
  return best;
}

static int cmp_slice(const void *a, const void *b) {
  const nd_trace_slice *x = a, *y = b;
  if (x->thread != y->thread) return x->thread - y->thread;
  return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Times on a coarse grid so that equal starts and ends are common. */
static void random_model(nd_trace_model *m, int n, int threads, unsigned seed) {
  static const char *const names[] = {"matmul", "gelu", "", "allreduce", "adamw"};
  srand(seed);
  memset(m, 0, sizeof *m);
  m->n_threads = threads;
  m->threads = calloc((size_t)threads, sizeof *m->threads);
  m->slices = calloc((size_t)n, sizeof *m->slices);
  m->n_slices = n;
  for (int i = 0; i < n; i++) {
    nd_trace_slice *s = &m->slices[i];
    s->thread = rand() % threads;
    s->ts = (rand() % (n / 2 + 1)) * 0.5;
    s->dur = (rand() % 8) * 0.5;
    strcpy(s->name, names[rand() % 5]);
    strcpy(s->phase, names[rand() % 5][0] == 'a' ? "optimizer" : "");
    m->threads[s->thread].n_slices++;
  }
  qsort(m->slices, (size_t)n, sizeof *m->slices, cmp_slice);
  m->flows = calloc((size_t)n, sizeof *m->flows);
  for (int f = 0; f < n / 3; f++) {
    int32_t a = rand() % n, b = rand() % n;
    if (a != b) m->flows[m->n_flows++] = (nd_trace_flow){a, b};
  }
}

static int same_path(const nd_trace_model *m, const nd_trace_summary *s) {
  char *seen = calloc((size_t)m->n_slices, 1);
  int32_t *path = malloc((size_t)m->n_slices * sizeof *path), len = 0, c = -1;
  for (int32_t i = 0; i < m->n_slices; i++)
    if (c < 0 || end_of(&m->slices[i]) > end_of(&m->slices[c])) c = i;
  for (; c >= 0 && !seen[c]; c = waited_for(m, c)) seen[c] = 1, path[len++] = c;
  int same = len == s->path_len;
  for (int32_t i = 0; same && i < len; i++) same = path[len - 1 - i] == s->path[i];
  free(seen);
  free(path);
  return same;
}

static int same_groups(const nd_trace_model *m, const nd_trace_summary *s) {
  int total = 0;
  for (int g = 0; g < s->n_kinds; g++) {
    int count = 0;
    for (int32_t i = 0; i < m->n_slices; i++)
      count += strcmp(m->slices[i].name[0] ? m->slices[i].name : "(none)", s->kinds[g].name) == 0;
    if (count != s->kinds[g].count) return 0;
    total += count;
  }
  return total == m->n_slices && s->n_kinds == 5;
}

int main(void) {
  for (unsigned seed = 1; seed <= 40; seed++) {
    nd_trace_model m;
    nd_trace_summary s;
    random_model(&m, 50 + (int)seed * 37, 1 + (int)seed % 4, seed);
    int rc = nd_trace_summarize(&m, &s);
    ok(rc == 0 && same_path(&m, &s) && same_groups(&m, &s),
       "seed %u: %d tasks on %d workers: the critical path (%d tasks) and the groups as defined", seed, m.n_slices,
       m.n_threads, rc ? -1 : s.path_len);
    if (!rc) nd_trace_summary_free(&s);
    nd_trace_model_free(&m);
  }
  return done_testing();
}
