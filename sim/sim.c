/* The event loop of the step simulator: tasks become ready when their
 * predecessors end, are queued as the scheduler queues them, and idle workers
 * take, or steal, the best task they may run. Data moves between memory
 * nodes as StarPU moves it (a read on a node without a valid copy copies it
 * there; a write leaves the writer's copy the only valid one), and every
 * buffer ever held on a node counts towards its peak (StarPU keeps them). */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

double nd_sim_task_seconds(const nd_sim_model *m, const nd_task *t, int kind) {
  const nd_sim_fit *f = &m->fit[t->kind][kind];
  if (!f->valid) return -1;
  double s = f->overhead_s + (double)t->flops * f->s_per_flop + (double)(t->bytes + t->comm_bytes) * f->s_per_byte;
  if (kind == ND_BACKEND_CPU && m->cpu_shared > 0) s *= m->cpu_shared;
  return s > 0 ? s : 0;
}

void nd_sim_schedule_free(nd_sim_schedule *s) {
  free(s->home);
  free(s->allowed);
  free(s->priority);
  free(s->rank_node);
  memset(s, 0, sizeof *s);
}

/* A binary heap of tasks; `before` orders them. */
typedef struct heap {
  int32_t *v;
  int32_t n;
} heap;

typedef struct sim {
  const nd_graph *g;
  const nd_edges *e;
  const nd_sim_machine *m;
  const nd_sim_model *model;
  const double *duration;
  const nd_sim_schedule *s;
  nd_sim_result *out;
  int32_t *waiting;
  double *end;       /* per task, when it ends */
  uint32_t *valid;   /* per tensor: nodes with a valid copy */
  uint32_t *present; /* per tensor: nodes that ever held it */
  heap q[ND_SIM_MAX_WORKERS];
  int32_t runnable[ND_SIM_MAX_WORKERS][ND_SIM_MAX_WORKERS]; /* [v][w]: tasks of q[v] that w may run */
  heap events; /* running tasks by end */
  int32_t running[ND_SIM_MAX_WORKERS];
  double free_at[ND_SIM_MAX_WORKERS], queued_s[ND_SIM_MAX_WORKERS];
  int32_t *seq; /* fixed: tasks of each worker in sequence order */
  int32_t seq_off[ND_SIM_MAX_WORKERS + 1], seq_at[ND_SIM_MAX_WORKERS];
  char *ready;                                      /* fixed: ready flags */
  int prox[ND_SIM_MAX_WORKERS][ND_SIM_MAX_WORKERS]; /* other workers, nearest first */
  unsigned rr;
  double now;
} sim;

static int queue_before(const sim *S, int32_t a, int32_t b) {
  if (S->s->use_priority && S->s->priority[a] != S->s->priority[b]) return S->s->priority[a] > S->s->priority[b];
  return a < b;
}
static int event_before(const sim *S, int32_t a, int32_t b) {
  return S->end[a] != S->end[b] ? S->end[a] < S->end[b] : a < b;
}

static void heap_push(sim *S, heap *h, int32_t t, int (*before)(const sim *, int32_t, int32_t)) {
  int32_t i = h->n++;
  h->v[i] = t;
  while (i > 0 && before(S, h->v[i], h->v[(i - 1) / 2])) {
    int32_t p = (i - 1) / 2, x = h->v[p];
    h->v[p] = h->v[i], h->v[i] = x, i = p;
  }
}
/* Removes item at. */
static int32_t heap_take(sim *S, heap *h, int32_t at, int (*before)(const sim *, int32_t, int32_t)) {
  int32_t top = h->v[at];
  h->v[at] = h->v[--h->n];
  for (int32_t i = at; i > 0 && before(S, h->v[i], h->v[(i - 1) / 2]);) { /* moved up */
    int32_t p = (i - 1) / 2, x = h->v[p];
    h->v[p] = h->v[i], h->v[i] = x, i = p;
  }
  for (int32_t i = at;;) {
    int32_t best = i, l = 2 * i + 1, r = l + 1;
    if (l < h->n && before(S, h->v[l], h->v[best])) best = l;
    if (r < h->n && before(S, h->v[r], h->v[best])) best = r;
    if (best == i) break;
    int32_t x = h->v[best];
    h->v[best] = h->v[i], h->v[i] = x, i = best;
  }
  return top;
}

static int may_run(const sim *S, int32_t t, int w) {
  if (S->s->allowed[t] && !(S->s->allowed[t] >> w & 1)) return 0;
  return S->duration || S->model->fit[S->g->tasks[t].kind][S->m->kind[w]].valid;
}

static double compute_s(const sim *S, int32_t t, int w) {
  return S->duration ? S->duration[t] : nd_sim_task_seconds(S->model, &S->g->tasks[t], S->m->kind[w]);
}

/* Seconds to bring t's inputs to w's node (update: mark them moved). */
static double transfers(sim *S, int32_t t, int w, int update) {
  const nd_task *task = &S->g->tasks[t];
  const nd_access *acc = nd_task_access(S->g, task);
  int node = S->m->node[w];
  double s = 0;
  for (int a = 0; a < task->n_access; a++) {
    int32_t x = acc[a].tensor;
    const nd_tensor *tensor = &S->g->tensors[x];
    if ((acc[a].mode & ND_ACCESS_R) && S->valid[x] && !(S->valid[x] >> node & 1)) {
      int src = __builtin_ctz(S->valid[x]);
      double bw = S->m->bandwidth[src][node];
      s += S->m->latency_s + (bw > 0 ? (double)tensor->bytes / bw : 0);
      if (update) S->out->transfer_bytes += tensor->bytes;
    }
    if (!update) continue;
    if (!(S->present[x] >> node & 1)) S->present[x] |= 1u << node, S->out->peak_bytes[node] += tensor->bytes;
    S->valid[x] = acc[a].mode & ND_ACCESS_W ? 1u << node : S->valid[x] | 1u << node;
  }
  return s;
}

static double expected_s(sim *S, int32_t t, int w) {
  return compute_s(S, t, w) + transfers(S, t, w, 0) + S->model->gap_s[S->m->kind[w]];
}
static double ready_at(const sim *S, int w) { return fmax(S->free_at[w], S->now) + S->queued_s[w]; }

/* Task t joins (+1) or leaves (-1) q[v]: the workers that may run it count it. */
static void count_runnable(sim *S, int v, int32_t t, int delta) {
  for (int w = 0; w < S->m->n_workers; w++)
    if (may_run(S, t, w)) S->runnable[v][w] += delta;
}

/* Queues a ready task as the policy's push does. */
static void push(sim *S, int32_t t, int releaser) {
  const nd_sim_schedule *s = S->s;
  int n = S->m->n_workers, w = s->home[t];
  if (s->fixed) {
    S->ready[t] = 1;
    return;
  }
  if (w < 0 || !may_run(S, t, w)) w = releaser >= 0 && may_run(S, t, releaser) ? releaser : -1;
  for (int k = 0; w < 0 && k < n; k++) {
    int v = (int)((S->rr + (unsigned)k) % (unsigned)n);
    if (may_run(S, t, v)) w = v, S->rr = (unsigned)v + 1;
  }
  if (s->earliest_finish) { /* the first found wins ties */
    double best = w >= 0 ? ready_at(S, w) + expected_s(S, t, w) : HUGE_VAL;
    for (int v = 0; v < n; v++) {
      if (v == w || !may_run(S, t, v)) continue;
      double f = ready_at(S, v) + expected_s(S, t, v);
      if (f < best) best = f, w = v;
    }
  }
  if (w < 0) w = 0; /* nothing may run it: the checks of the schedule prevent this */
  S->queued_s[w] += expected_s(S, t, w);
  heap_push(S, &S->q[w], t, queue_before);
  count_runnable(S, w, t, 1);
}

/* May w take task t of victim v's queue? A thief must also finish it before
 * the owner would (its running task, the tasks queued ahead, then t). */
static int acceptable(sim *S, int v, int w, int32_t t) {
  if (!may_run(S, t, w)) return 0;
  if (v == w || !S->s->steal_if_faster) return 1;
  const heap *h = &S->q[v];
  double own = fmax(S->free_at[v], S->now) + expected_s(S, t, v);
  for (int32_t k = 0; k < h->n; k++)
    if (queue_before(S, h->v[k], t)) own += expected_s(S, h->v[k], v);
  return S->now + expected_s(S, t, w) < own;
}

/* The best task of victim v's queue that w may take, or -1; an index into
 * its heap. The top is the best of the queue, so when it is acceptable
 * nothing else need be looked at (the owner, whose queue holds only tasks it
 * may run, never scans); a thief that may run none of v's tasks does not
 * scan either (ndws keeps a count of stealable tasks for the same reason). */
static int32_t find(sim *S, int v, int w) {
  heap *h = &S->q[v];
  if (!h->n || !S->runnable[v][w]) return -1;
  if (acceptable(S, v, w, h->v[0])) return 0;
  int32_t best = -1;
  for (int32_t i = 1; i < h->n; i++) {
    int32_t t = h->v[i];
    if ((best < 0 || queue_before(S, t, h->v[best])) && acceptable(S, v, w, t)) best = i;
  }
  return best;
}

/* Whether an OpenCL worker is computing now. */
static int opencl_busy(const sim *S) {
  for (int v = 0; v < S->m->n_workers; v++)
    if (S->m->kind[v] == ND_BACKEND_OPENCL && S->running[v] >= 0) return 1;
  return 0;
}

static void start(sim *S, int32_t t, int w) {
  /* a worker that waited long enough to stop polling has to be woken; a
   * model without a wake-up time gives it the gap */
  int k = S->m->kind[w];
  double gap = S->now - S->free_at[w] >= ND_SIM_POLL_S && S->model->wake_s[k] > 0 ? S->model->wake_s[k]
                                                                                 : S->model->gap_s[k];
  double xfer = transfers(S, t, w, 1), c = compute_s(S, t, w);
  if (!S->duration && k == ND_BACKEND_CPU && S->model->cpu_beside_opencl > 0 && opencl_busy(S))
    c *= S->model->cpu_beside_opencl;
  if (S->out->start) S->out->start[t] = S->now + gap;
  if (S->out->worker) S->out->worker[t] = w;
  S->end[t] = S->now + gap + xfer + c;
  S->out->busy_s[w] += c;
  S->running[w] = t;
  S->free_at[w] = S->end[t];
  heap_push(S, &S->events, t, event_before);
}

/* Idle workers first take from their own queues, then the still idle ones
 * steal: an owner polling its queue gets a task pushed to it before a thief
 * does (a chain homed on a slow device stays there, as it does at run time). */
static void dispatch(sim *S) {
  for (int pass = 0; pass < 2; pass++)
    for (int w = 0; w < S->m->n_workers; w++) {
      if (S->running[w] >= 0) continue;
      if (S->s->fixed) {
        if (pass == 0 && S->seq_at[w] < S->seq_off[w + 1] - S->seq_off[w]) {
          int32_t t = S->seq[S->seq_off[w] + S->seq_at[w]];
          if (S->ready[t]) S->seq_at[w]++, start(S, t, w);
        }
        continue;
      }
      int32_t at = pass == 0 && S->q[w].n ? find(S, w, w) : -1, victim = w;
      for (int k = 0; at < 0 && pass == 1 && S->s->steal && k < S->m->n_workers - 1; k++) {
        victim = S->prox[w][k];
        if (S->q[victim].n) at = find(S, victim, w);
      }
      if (at < 0) continue;
      int32_t t = heap_take(S, &S->q[victim], at, queue_before);
      count_runnable(S, victim, t, -1);
      S->queued_s[victim] = fmax(0, S->queued_s[victim] - expected_s(S, t, victim));
      start(S, t, w);
    }
}

/* Steal order: workers of the same memory node first, then by distance in the list. */
static void build_prox(sim *S) {
  int n = S->m->n_workers;
  for (int w = 0; w < n; w++) {
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
      for (int d = 1; d < n; d++)
        for (int sgn = -1; sgn <= 1; sgn += 2) {
          int v = w + sgn * d;
          if (v < 0 || v >= n || (S->m->node[v] == S->m->node[w]) != (pass == 0)) continue;
          S->prox[w][k++] = v;
        }
  }
}

static int prepare_fixed(sim *S) {
  const nd_graph *g = S->g;
  int n = S->m->n_workers;
  S->seq = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *S->seq);
  S->ready = calloc((size_t)(g->n_tasks ? g->n_tasks : 1), 1);
  if (!S->seq || !S->ready) return ND_ENOMEM;
  memset(S->seq_off, 0, sizeof S->seq_off);
  for (int32_t t = 0; t < g->n_tasks; t++) S->seq_off[S->s->home[t] + 1]++;
  for (int w = 0; w < n; w++) S->seq_off[w + 1] += S->seq_off[w];
  /* priority = minus the position in the home's sequence: place by it */
  for (int32_t t = 0; t < g->n_tasks; t++) {
    int w = S->s->home[t];
    int32_t pos = -S->s->priority[t];
    if (pos < 0 || S->seq_off[w] + pos >= S->seq_off[w + 1]) return ND_EINVAL;
    S->seq[S->seq_off[w] + pos] = t;
  }
  return 0;
}

int nd_sim_run(const nd_graph *g, const nd_edges *e, const nd_sim_machine *m, const nd_sim_model *model,
               const double *duration, const nd_sim_schedule *s, nd_sim_result *out) {
  if (m->n_workers < 1 || m->n_workers > ND_SIM_MAX_WORKERS || m->n_nodes > ND_SIM_MAX_NODES) return ND_EINVAL;
  double *keep_start = out->start, *keep_end = out->end;
  int *keep_worker = out->worker;
  memset(out, 0, sizeof *out);
  out->start = keep_start, out->end = keep_end, out->worker = keep_worker;
  sim *S = calloc(1, sizeof *S);
  if (!S) return ND_ENOMEM;
  size_t nt = (size_t)(g->n_tasks ? g->n_tasks : 1), nx = (size_t)(g->n_tensors ? g->n_tensors : 1);
  *S = (sim){.g = g, .e = e, .m = m, .model = model, .duration = duration, .s = s, .out = out};
  S->waiting = malloc(nt * sizeof *S->waiting);
  S->end = malloc(nt * sizeof *S->end);
  S->valid = malloc(nx * sizeof *S->valid);
  S->present = malloc(nx * sizeof *S->present);
  S->events.v = malloc((size_t)m->n_workers * sizeof *S->events.v);
  int rc = S->waiting && S->end && S->valid && S->present && S->events.v ? 0 : ND_ENOMEM;
  for (int w = 0; w < m->n_workers && !rc; w++) {
    S->running[w] = -1;
    if (!(S->q[w].v = malloc(nt * sizeof *S->q[w].v))) rc = ND_ENOMEM;
  }
  if (!rc && s->fixed) rc = prepare_fixed(S);
  if (rc) goto cleanup;
  build_prox(S);
  for (int32_t x = 0; x < g->n_tensors; x++) {
    int node = s->rank_node ? s->rank_node[nd_rank_index(g, g->tensors[x].home)] : 0;
    S->valid[x] = S->present[x] = 1u << node;
    out->peak_bytes[node] += g->tensors[x].bytes;
  }
  for (int32_t t = 0; t < g->n_tasks; t++) {
    S->waiting[t] = e->pred_off[t + 1] - e->pred_off[t];
    if (!S->waiting[t]) push(S, t, -1);
  }
  int32_t done = 0;
  for (dispatch(S); S->events.n;) {
    /* every task ending now, then the workers choose */
    S->now = S->end[S->events.v[0]];
    while (S->events.n && S->end[S->events.v[0]] <= S->now) {
      int32_t t = heap_take(S, &S->events, 0, event_before);
      int w = -1;
      for (int v = 0; v < m->n_workers; v++)
        if (S->running[v] == t) S->running[v] = -1, w = v;
      if (out->end) out->end[t] = S->end[t];
      done++;
      for (int32_t k = e->succ_off[t]; k < e->succ_off[t + 1]; k++)
        if (--S->waiting[e->succ[k]] == 0) push(S, e->succ[k], w);
    }
    dispatch(S);
  }
  if (done != g->n_tasks) {
    rc = ND_EINVAL; /* a task no worker may run, or a fixed sequence against the dependencies */
    goto cleanup;
  }
  out->step_s = S->now + model->step_overhead_s;
  double busy = 0;
  for (int w = 0; w < m->n_workers; w++) busy += out->busy_s[w];
  out->bubble = out->step_s > 0 ? 1 - busy / (out->step_s * m->n_workers) : 0;
cleanup:
  for (int w = 0; w < m->n_workers; w++) free(S->q[w].v);
  free(S->events.v), free(S->waiting), free(S->end), free(S->valid), free(S->present), free(S->seq), free(S->ready);
  free(S);
  return rc;
}
