/* A layer's forward, input gradient or optimizer step on a rank as one
 * StarPU task that runs the IR's tasks in order. */
#include "tasks/chain.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/error.h"
#include "kernels/backend.h"
#include "tasks/forward.h"

/* W only without a fixed order: the zero-bubble orders move single weight
 * gradients into the gaps. */
static int chained_phase(int phase, int fixed) {
  return phase == ND_PHASE_F || phase == ND_PHASE_B || phase == ND_PHASE_OPTIMIZER || (phase == ND_PHASE_W && !fixed);
}

static int joins(const nd_task *a, const nd_task *b, int fixed) {
  return a->group == ND_GROUP_NONE && b->group == ND_GROUP_NONE && chained_phase(a->phase, fixed) &&
         a->phase == b->phase &&
         a->micro_batch == b->micro_batch && a->layer == b->layer && a->rank.dp == b->rank.dp &&
         a->rank.pp == b->rank.pp && a->rank.tp == b->rank.tp;
}

typedef struct seq_item {
  int home, position;
  int32_t task;
} seq_item;

static int seq_cmp(const void *pa, const void *pb) {
  const seq_item *a = pa, *b = pb;
  if (a->home != b->home) return a->home < b->home ? -1 : 1;
  return a->position > b->position ? -1 : a->position < b->position; /* position holds minus the position */
}

/* Each worker's sequence without the tasks a chain holds. */
static int renumber(const nd_graph *g, const int *home, int *position, const int32_t *len) {
  seq_item *s = malloc((size_t)(g->n_tasks ? g->n_tasks : 1) * sizeof *s);
  if (!s) return ND_ENOMEM;
  for (int32_t i = 0; i < g->n_tasks; i++) s[i] = (seq_item){home[i], position[i], i};
  qsort(s, (size_t)g->n_tasks, sizeof *s, seq_cmp);
  int held = 0;
  for (int32_t k = 0; k < g->n_tasks; k++) {
    if (k && s[k].home != s[k - 1].home) held = 0;
    if (len[s[k].task] == 0)
      held++;
    else
      position[s[k].task] += held;
  }
  free(s);
  return 0;
}

int nd__chain_plan(const nd_graph *g, const int *home, int *position, int fixed, const uint8_t *cls, int32_t *len) {
  int32_t lead = 0;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    int next_in_seq = i > 0 && (!position || (home[i] == home[i - 1] && position[i] == position[i - 1] - 1));
    if (next_in_seq && (!cls || cls[i] == cls[lead]) && joins(&g->tasks[lead], &g->tasks[i], fixed)) {
      len[lead]++;
      len[i] = 0;
    } else {
      lead = i;
      len[i] = 1;
    }
  }
  return position ? renumber(g, home, position, len) : 0;
}

int nd__chain_build(nd__chain *chain, const nd_graph *g, int32_t first, int32_t n, const int32_t *tensor,
                    const starpu_data_handle_t *handles, const nd__task_ctx *ctx) {
  int accesses = 1; /* never a 0-byte allocation */
  for (int32_t k = 0; k < n; k++) accesses += g->tasks[first + k].n_access;
  *chain = (nd__chain){first, n, 0, NULL, NULL, NULL, NULL, NULL, ctx + first};
  chain->handle = malloc((size_t)accesses * sizeof *chain->handle);
  chain->mode = malloc((size_t)accesses * sizeof *chain->mode);
  chain->slot = malloc((size_t)accesses * sizeof *chain->slot);
  chain->start_us = malloc((size_t)n * sizeof *chain->start_us);
  chain->end_us = malloc((size_t)n * sizeof *chain->end_us);
  if (!chain->handle || !chain->mode || !chain->slot || !chain->start_us || !chain->end_us) {
    nd__chain_free(chain);
    return ND_ENOMEM;
  }
  int s = 0;
  for (int32_t k = 0; k < n; k++) {
    const nd_task *t = &g->tasks[first + k];
    const nd_access *acc = nd_task_access(g, t);
    for (int a = 0; a < t->n_access; a++, s++) {
      starpu_data_handle_t h = handles[tensor[acc[a].tensor]];
      int b = 0;
      while (b < chain->n_buf && chain->handle[b] != h) b++;
      int writes = (acc[a].mode & ND_ACCESS_W) != 0;
      if (b == chain->n_buf) {
        chain->handle[chain->n_buf++] = h;
        chain->mode[b] = acc[a].mode == ND_ACCESS_W ? STARPU_W : writes ? STARPU_RW : STARPU_R;
      } else if (writes && chain->mode[b] == STARPU_R) {
        chain->mode[b] = STARPU_RW;
      }
      chain->slot[s] = b;
    }
  }
  return 0;
}

void nd__chain_free(nd__chain *chain) {
  free(chain->handle);
  free(chain->mode);
  free(chain->slot);
  free(chain->start_us);
  free(chain->end_us);
  chain->handle = NULL, chain->mode = NULL, chain->slot = NULL, chain->start_us = chain->end_us = NULL;
}

/* On any worker: each member's kernel for the worker's backend, in order
 * (a device's kernels only enqueue on its one queue, so they run in order
 * too; their times are then those of the enqueuing). */
static void run_chain(void *buffers[], void *arg) {
  nd__chain *chain = arg;
  int dev = nd__worker_backend(starpu_worker_get_id_check());
  const int *slot = chain->slot;
  for (int32_t k = 0; k < chain->n; k++) {
    const nd__task_ctx *c = &chain->ctx[k];
    int n = c->task->n_access;
    void *member[n > 0 ? n : 1];
    for (int a = 0; a < n; a++) member[a] = buffers[slot[a]];
    slot += n;
    chain->start_us[k] = starpu_timing_now();
    nd__codelet_call(member, c, dev);
    chain->end_us[k] = starpu_timing_now();
  }
}

void nd__chain_done(void *arg) {
  const nd__chain *chain = arg;
  int worker = starpu_worker_get_id();
  for (int32_t k = 0; k < chain->n; k++) {
    const nd__task_ctx *c = &chain->ctx[k];
    nd__forward_start(c->forward, chain->first + k);
    if (c->observer->task_done)
      c->observer->task_done(c->observer->user, c->which, chain->first + k, chain->start_us[k], chain->end_us[k],
                             worker);
  }
}

/* A worker runs a chain when its backend has a kernel for every member. */
static int can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl) {
  (void)nimpl;
  const nd__chain *chain = task->cl_arg;
  int dev = nd__worker_backend((int)workerid);
  for (int32_t k = 0; chain && k < chain->n; k++)
    if (!nd__codelet_runs(&chain->ctx[k], dev)) return 0;
  return chain != NULL;
}

static struct starpu_perfmodel model = {.type = STARPU_HISTORY_BASED, .symbol = "ndgraph_chain"};
static struct starpu_codelet codelet;

static void build(void) {
  starpu_codelet_init(&codelet);
  codelet.cpu_funcs[0] = run_chain;
  codelet.cpu_funcs_name[0] = "run_chain";
  for (int b = 0; b < ND_BACKEND_COUNT; b++)
    if (nd__backend(b) && nd__backend(b)->attach) nd__backend(b)->attach(&codelet, run_chain);
  codelet.can_execute = can_execute;
  codelet.nbuffers = STARPU_VARIABLE_NBUFFERS;
  codelet.model = &model;
  codelet.name = "chain";
}

struct starpu_codelet *nd__chain_codelet(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, build);
  return &codelet;
}
