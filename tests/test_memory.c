/* Activation memory is bounded by activation_slots: each stage holds exactly
 * `slots` micro-batches' buffers, and, measured on a real run, the activation
 * data alive on a stage never exceeds `slots` micro-batches' worth, and no
 * buffer is overwritten while its micro-batch still needs it. */
#include <stdlib.h>

#include "tests/runtime/harness.h"
#include "tests/tap.h"
#include "train/trainer_internal.h"

typedef struct span {
  double start, end;
} span;

typedef struct record {
  const nd_graph *g;
  double *start, *end; /* [task] */
} record;

static void on_task(void *user, int graph, int32_t task, double start_us, double end_us, int worker) {
  record *r = user;
  (void)worker;
  if (graph != 0) return;
  r->start[task] = start_us;
  r->end[task] = end_us;
}

typedef struct event {
  double t;
  int64_t delta; /* bytes that become live (> 0) or free (< 0) */
} event;

static int by_time(const void *a, const void *b) {
  const event *x = a, *y = b;
  if (x->t != y->t) return (x->t > y->t) - (x->t < y->t);
  return (x->delta > y->delta) - (x->delta < y->delta); /* frees first at the same instant */
}

/* The runtime's activation memory on stage s over the run: a buffer holds a
 * micro-batch's data from the start of the first task that writes it for that
 * micro-batch to the end of the last task that accesses it. Returns the peak
 * of live bytes, and sets *overwritten when one micro-batch's data was still
 * live in a buffer when another's was written there. */
static int64_t peak_live_bytes(const record *r, int s, int M, int *overwritten) {
  const nd_graph *g = r->g;
  size_t n = (size_t)g->n_tensors * (size_t)M;
  span *live = malloc(n * sizeof *live);
  for (size_t k = 0; k < n; k++) live[k] = (span){1e300, -1e300};
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (t->micro_batch < 0) continue;
    const nd_access *acc = nd_task_access(g, t);
    for (int a = 0; a < t->n_access; a++) {
      const nd_tensor *x = &g->tensors[acc[a].tensor];
      if (x->slot < 0 || x->home.pp != s) continue;
      span *l = &live[(size_t)acc[a].tensor * M + t->micro_batch];
      if ((acc[a].mode & ND_ACCESS_W) && r->start[i] < l->start) l->start = r->start[i];
      if (r->end[i] > l->end) l->end = r->end[i];
    }
  }
  event *ev = malloc(2 * n * sizeof *ev);
  size_t ne = 0;
  *overwritten = 0;
  for (int32_t x = 0; x < g->n_tensors; x++)
    for (int m = 0; m < M; m++) {
      span l = live[(size_t)x * M + m];
      if (l.end < l.start) continue;
      ev[ne++] = (event){l.start, g->tensors[x].bytes};
      ev[ne++] = (event){l.end, -g->tensors[x].bytes};
      for (int k = 0; k < m; k++) {
        span o = live[(size_t)x * M + k];
        if (o.end >= o.start && l.start < o.end && o.start < l.end) *overwritten = 1;
      }
    }
  qsort(ev, ne, sizeof *ev, by_time);
  int64_t bytes = 0, peak = 0;
  for (size_t k = 0; k < ne; k++) {
    bytes += ev[k].delta;
    if (bytes > peak) peak = bytes;
  }
  free(ev);
  free(live);
  return peak;
}

static void check(int slots) {
  char kv[64];
  snprintf(kv, sizeof kv, "parallelism.activation_slots=%d", slots);
  const char *ov[] = {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=8",
                      "train.micro_batch_size=1", "runtime.scheduler=eager", kv, NULL};
  nd_config *cfg = tiny_config(ov);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  if (!ok(cfg && nd_trainer_open(&tr, cfg, &err) == 0, "slots %d: trainer opens %s", slots, err.msg)) goto done;
  const nd_graph *g = nd__trainer_graph(tr);
  int64_t one_mb[ND_MAX_STAGES] = {0};
  for (int s = 0; s < g->pp; s++) {
    int64_t all = 0, one = 0;
    for (int32_t i = 0; i < g->n_tensors; i++) {
      const nd_tensor *x = &g->tensors[i];
      if (x->slot < 0 || x->home.pp != s) continue;
      all += x->bytes;
      if (x->slot == 0) one += x->bytes;
    }
    ok(all == slots * one, "slots %d, stage %d: activation buffers %lld bytes = %d x %lld bytes of one micro-batch",
       slots, s, (long long)all, slots, (long long)one);
    one_mb[s] = one;
  }
  record r = {g, calloc((size_t)g->n_tasks, sizeof(double)), calloc((size_t)g->n_tasks, sizeof(double))};
  nd_exec_observe(nd__trainer_exec(tr), &(nd_exec_observer){on_task, &r});
  double loss[2];
  int rc = train_losses(tr, 2, loss);
  nd_exec_observe(nd__trainer_exec(tr), NULL);
  if (ok(rc == 0, "slots %d: two steps run", slots))
    for (int s = 0; s < g->pp; s++) {
      int overwritten;
      int64_t peak = peak_live_bytes(&r, s, g->micro_batches, &overwritten);
      ok(peak > 0 && peak <= slots * one_mb[s],
         "slots %d, stage %d: live activations peak at %lld bytes, within %d x %lld (%.2f micro-batches)", slots, s,
         (long long)peak, slots, (long long)one_mb[s], (double)peak / (double)one_mb[s]);
      ok(!overwritten, "slots %d, stage %d: no buffer is overwritten while its data is still needed", slots, s);
    }
  free(r.start);
  free(r.end);
done:
  nd_trainer_close(tr);
  nd_config_free(cfg);
}

int main(void) {
  for (int slots = 1; slots <= 3; slots++) check(slots);
  return done_testing();
}
