/* The global order of collectives on devices (tasks/collective.c), run on
 * CPU workers with the same code the NCCL all-reduces use: each participant
 * is pinned to its rank's worker and, like an NCCL kernel, blocks until all
 * of its peers have arrived. Producer tasks, on any worker, write each
 * participant's input and read a neighbour's, so a worker blocked in a
 * collective could starve a peer of its input if the order let it start
 * early. Asserted: every worker runs the collectives it takes part in in
 * submission order, no participant starts before every input of its
 * collective is written or before the previous collective has ended, and
 * every run ends (an alarm catches a deadlock), and each collective calls its
 * observer's callback once. Under lws and ndgraph's ndws. Those runs see a
 * wrong order only when the timing shows it; the dependencies themselves,
 * read from StarPU's task graph, are checked too, the same every run.
 * Also which all-reduces a placement sends to NCCL (nd_coll_gpu_units). */
#include <signal.h>
#include <starpu.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "scheduler/hints.h"
#include "scheduler/policies.h"
#include "tasks/collective.h"
#include "tasks/exec.h"
#include "tests/tap.h"

#define RANKS 4
#define COLLS 80

typedef struct coll {
  int n, rank[RANKS];
  atomic_int produced[RANKS], arrived, finished;
} coll;

typedef struct part_arg {
  int k, p;
} part_arg;

static coll colls[COLLS];
static part_arg args[COLLS][RANKS];
static atomic_int log_len[RANKS], gate_bad, chain_bad;
static int logs[RANKS][COLLS];
static unsigned seed = 12345;

static unsigned next(void) { return seed = seed * 1103515245u + 12345u, seed >> 8; }

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "not ok - a run did not end: collectives deadlocked\n";
  if (write(1, msg, sizeof msg - 1) < 0) _exit(2);
  _exit(1);
}

/* a producer: writes part p of collective k after a short, varying time */
static void produce(void *buffers[], void *arg) {
  (void)buffers;
  const part_arg *a = arg;
  usleep((useconds_t)(a->k * 37 + a->p * 101) % 400);
  atomic_store(&colls[a->k].produced[a->p], 1);
}

/* a participant: checks the order, then waits for its peers as NCCL does */
static void participate(void *buffers[], void *arg) {
  const part_arg *a = arg;
  coll *c = &colls[a->k];
  for (int p = 0; p < c->n; p++)
    if (!atomic_load(&c->produced[p])) atomic_fetch_add(&gate_bad, 1);
  if (a->k > 0 && atomic_load(&colls[a->k - 1].finished) != colls[a->k - 1].n) atomic_fetch_add(&chain_bad, 1);
  int w = c->rank[a->p];
  logs[w][atomic_fetch_add(&log_len[w], 1)] = a->k;
  atomic_fetch_add(&c->arrived, 1);
  while (atomic_load(&c->arrived) < c->n) usleep(20);
  ((int *)STARPU_VECTOR_GET_PTR(buffers[0]))[0] += 1;
  atomic_fetch_add(&c->finished, 1);
}

/* the collective's one report (participant 0's callback) */
static atomic_int reports, misreports;
static void reported(void *arg) {
  atomic_fetch_add(&reports, 1);
  /* participant 0 has ended, so every peer has passed the barrier */
  if (atomic_load(&((coll *)arg)->arrived) != ((coll *)arg)->n) atomic_fetch_add(&misreports, 1);
}

static struct starpu_codelet producer = {
    .cpu_funcs = {produce}, .nbuffers = 2, .modes = {STARPU_RW, STARPU_R}, .name = "producer"};
static struct starpu_codelet part_cl = {
    .cpu_funcs = {participate}, .nbuffers = STARPU_VARIABLE_NBUFFERS, .name = "participant"};

static void run(const char *policy_name, struct starpu_sched_policy *policy) {
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = RANKS;
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.precedence_over_environment_variables = 1;
  conf.sched_policy_name = policy ? NULL : policy_name;
  conf.sched_policy = policy;
  if (starpu_init(&conf)) {
    skip("%s: StarPU did not start", policy_name);
    return;
  }
  if (starpu_cpu_worker_get_count() < RANKS) {
    skip("%s: StarPU started %u CPU workers, the test needs %d", policy_name, starpu_cpu_worker_get_count(), RANKS);
    starpu_shutdown();
    return;
  }
  memset(colls, 0, sizeof colls);
  memset(logs, 0, sizeof logs);
  for (int w = 0; w < RANKS; w++) atomic_store(&log_len[w], 0);
  atomic_store(&gate_bad, 0);
  atomic_store(&chain_bad, 0);
  atomic_store(&reports, 0);
  atomic_store(&misreports, 0);
  static int value[RANKS];
  starpu_data_handle_t h[RANKS];
  for (int r = 0; r < RANKS; r++)
    starpu_vector_data_register(&h[r], STARPU_MAIN_RAM, (uintptr_t)&value[r], 1, sizeof value[r]);
  alarm(60);
  int rc = 0;
  for (int k = 0; k < COLLS && !rc; k++) {
    coll *c = &colls[k];
    /* 2 to 4 distinct ranks in a random order */
    int perm[RANKS] = {0, 1, 2, 3};
    for (int i = RANKS - 1; i > 0; i--) {
      int j = (int)(next() % (unsigned)(i + 1)), t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
    c->n = 2 + (int)(next() % (RANKS - 1));
    for (int p = 0; p < c->n; p++) c->rank[p] = perm[p];
    starpu_data_handle_t parts[RANKS];
    int workers[RANKS];
    void *pargs[RANKS];
    for (int p = 0; p < c->n; p++) {
      args[k][p] = (part_arg){k, p};
      rc |= starpu_task_insert(&producer, STARPU_RW, h[c->rank[p]], STARPU_R, h[(c->rank[p] + 1) % RANKS],
                               STARPU_CL_ARGS_NFREE, &args[k][p], sizeof args[k][p], 0);
      parts[p] = h[c->rank[p]];
      workers[p] = starpu_worker_get_by_type(STARPU_CPU_WORKER, c->rank[p]);
      pargs[p] = &args[k][p];
    }
    rc |= nd__coll_submit(&part_cl, parts, workers, pargs, c->n, reported, &colls[k]);
  }
  starpu_task_wait_for_all();
  alarm(0);
  ok(rc == 0, "%s: %d collectives and their producers submitted", policy_name, COLLS);
  int in_order = 1, complete = 1;
  for (int w = 0; w < RANKS; w++) {
    int want = 0;
    for (int k = 0; k < COLLS; k++)
      for (int p = 0; p < colls[k].n; p++)
        if (colls[k].rank[p] == w) {
          if (want >= atomic_load(&log_len[w]) || logs[w][want] != k) in_order = 0;
          want++;
          break;
        }
    complete &= want == atomic_load(&log_len[w]);
  }
  ok(in_order && complete, "%s: each worker ran its collectives in submission order", policy_name);
  ok(atomic_load(&gate_bad) == 0, "%s: no participant started before its collective's inputs were written (%d did)",
     policy_name, atomic_load(&gate_bad));
  ok(atomic_load(&chain_bad) == 0, "%s: no collective started before the previous one ended (%d did)", policy_name,
     atomic_load(&chain_bad));
  ok(atomic_load(&reports) == COLLS && atomic_load(&misreports) == 0,
     "%s: each collective reported once, after its participants ran (%d reports)", policy_name, atomic_load(&reports));
  nd__coll_stop();
  for (int r = 0; r < RANKS; r++) starpu_data_unregister(h[r]);
  starpu_shutdown();
}

/* ------------------------------------------------ the dependencies themselves */

/* The order above is observed only when the timing lets a wrong order show;
 * here it is read from the task graph StarPU builds, every run the same. A
 * held task writes every input; behind it, collective 1 over parts 0, 1, 2
 * and collective 2 over parts 2, 3 are submitted, and nothing can run, so
 * each task's successors (starpu_task_get_task_succs) are what the submission
 * declared. Asserted: each collective's gate precedes all of its participants,
 * and every participant of collective 1, also those on parts collective 2 does
 * not touch, precedes collective 2's gate (only the gate's read-write access
 * to the ordering token gives that). */
static void noop(void *buffers[], void *arg) { (void)buffers, (void)arg; }
static struct starpu_codelet noop_part = {.cpu_funcs = {noop}, .nbuffers = STARPU_VARIABLE_NBUFFERS, .name = "p"};
static struct starpu_codelet hold_cl = {
    .where = STARPU_NOWHERE, .nbuffers = 4, .modes = {STARPU_W, STARPU_W, STARPU_W, STARPU_W}, .name = "hold"};

/* the tasks t precedes directly, each once (at most 16) */
static int succs(struct starpu_task *t, struct starpu_task *out[16]) {
  struct starpu_task *all[32];
  int n = starpu_task_get_task_succs(t, 32, all), m = 0;
  for (int i = 0; i < n && i < 32; i++) {
    int seen = 0;
    for (int j = 0; j < m; j++) seen |= out[j] == all[i];
    if (!seen && m < 16) out[m++] = all[i];
  }
  return m;
}
static int is_gate(const struct starpu_task *t) {
  return t->cl && t->cl->name && !strcmp(t->cl->name, "collective_gate");
}

/* Whether a precedes b, directly or through the tasks without a codelet that
 * StarPU inserts (a writer after several readers waits on one such task). */
static int precedes(struct starpu_task *a, struct starpu_task *b, int depth) {
  struct starpu_task *s[16];
  int n = succs(a, s);
  for (int i = 0; i < n; i++)
    if (s[i] == b || (!s[i]->cl && depth > 0 && precedes(s[i], b, depth - 1))) return 1;
  return 0;
}

static void deps(void) {
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = 1;
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.precedence_over_environment_variables = 1;
  conf.sched_policy_name = "lws";
  if (starpu_init(&conf)) {
    skip("dependencies: StarPU did not start");
    return;
  }
  static int value[4];
  static part_arg pa[2][3] = {{{0, 0}, {0, 1}, {0, 2}}, {{1, 0}, {1, 1}}};
  starpu_data_handle_t h[4];
  for (int r = 0; r < 4; r++)
    starpu_vector_data_register(&h[r], STARPU_MAIN_RAM, (uintptr_t)&value[r], 1, sizeof value[r]);
  const starpu_tag_t held = 0x6e64, release = 0x6e65;
  starpu_tag_declare_deps(held, 1, release);
  struct starpu_task *hold = starpu_task_create();
  hold->cl = &hold_cl;
  for (int r = 0; r < 4; r++) hold->handles[r] = h[r];
  hold->use_tag = 1;
  hold->tag_id = held;
  hold->detach = 0;
  hold->destroy = 0;
  int workers[3] = {0, 0, 0}, rc = starpu_task_submit(hold);
  starpu_data_handle_t p1[3] = {h[0], h[1], h[2]}, p2[2] = {h[2], h[3]};
  void *a1[3] = {&pa[0][0], &pa[0][1], &pa[0][2]}, *a2[2] = {&pa[1][0], &pa[1][1]};
  rc |= nd__coll_submit(&noop_part, p1, workers, a1, 3, NULL, NULL);
  rc |= nd__coll_submit(&noop_part, p2, workers, a2, 2, NULL, NULL);
  ok(rc == 0, "dependencies: a held task and two collectives submitted");
  /* the gates, among the held task's successors; each one's participants */
  struct starpu_task *gate[2] = {NULL}, *part[2][3] = {{NULL}}, *s[16], *ps[16];
  int nparts[2] = {0}, n = succs(hold, s);
  for (int i = 0; i < n; i++) {
    if (!is_gate(s[i])) continue;
    int m = succs(s[i], ps);
    for (int j = 0; j < m; j++) {
      if (ps[j]->cl != &noop_part) continue;
      const part_arg *a = ps[j]->cl_arg;
      gate[a->k] = s[i];
      if (nparts[a->k] < 3) part[a->k][nparts[a->k]++] = ps[j];
    }
  }
  ok(gate[0] && gate[1] && gate[0] != gate[1] && nparts[0] == 3 && nparts[1] == 2,
     "dependencies: each gate precedes every participant of its collective (%d of 3, %d of 2)", nparts[0], nparts[1]);
  int before = 0;
  for (int j = 0; j < nparts[0]; j++) before += gate[1] && precedes(part[0][j], gate[1], 4);
  ok(before == 3, "dependencies: collective 2's gate follows all 3 participants of collective 1 (%d do)", before);
  starpu_tag_notify_from_apps(release);
  if (starpu_task_wait(hold)) diag("dependencies: the held task failed");
  starpu_task_destroy(hold);
  starpu_task_wait_for_all();
  nd__coll_stop();
  for (int r = 0; r < 4; r++) starpu_data_unregister(h[r]);
  starpu_shutdown();
}

/* ------------------------------------------------ which all-reduces go to NCCL */

static nd_graph *graph(int dp, int tp) {
  nd_config *cfg = NULL;
  nd_graph *g = NULL;
  nd_error err = {0};
  char a[2][64];
  snprintf(a[0], sizeof a[0], "parallelism.data_parallel_size=%d", dp);
  snprintf(a[1], sizeof a[1], "parallelism.tensor_parallel_size=%d", tp);
  if (!nd_config_new(&cfg) && !nd_config_set_assignment(cfg, a[0], &err) &&
      !nd_config_set_assignment(cfg, a[1], &err) && !nd_config_set_assignment(cfg, "model.n_layer=2", &err) &&
      !nd_config_set_assignment(cfg, "parallelism.pipeline_parallel_size=1", &err) && nd_graph_build(&g, cfg, 0, &err))
    diag("graph: %s", err.msg);
  nd_config_free(cfg);
  return g;
}

/* Whether part ranks of all-reduce t include rank r. */
static int touches(const nd_graph *g, const nd_task *t, int r) {
  const nd_access *acc = nd_task_access(g, t);
  for (int p = 0; p < t->a.coll.nparts; p++)
    if (nd_rank_index(g, g->tensors[acc[p].tensor].home) == r) return 1;
  return 0;
}

/* Rank r on unit of_rank[r]: how many of g's all-reduces do and do not go
 * to NCCL, in two classes: those touching rank cpu_rank (when >= 0), else
 * those with two parts on one GPU of a GPU per tensor-parallel pair (the
 * tensor-parallel ones and the norm's over all ranks), and the others. */
static void on_nccl(const nd_graph *g, nd_unit *units, const int *of_rank, int cpu_rank, int counts[2][2]) {
  int first[RANKS], count[RANKS], unit[RANKS];
  for (int r = 0; r < RANKS; r++) first[r] = of_rank[r], count[r] = 1;
  nd_rank_map pl = {RANKS, first, count, units, 5};
  memset(counts, 0, 4 * sizeof counts[0][0]);
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (t->kind != ND_TASK_ALLREDUCE) continue;
    int cls = cpu_rank >= 0 ? touches(g, t, cpu_rank) : t->group == ND_GROUP_TP || t->group == ND_GROUP_ALL;
    counts[cls][nd_coll_gpu_units(g, &pl, t, unit)]++;
  }
}

static void plan(void) {
  nd_graph *g = graph(2, 2); /* ranks d0t0, d0t1, d1t0, d1t1 */
  if (!ok(g != NULL, "a dp 2, tp 2 graph")) return;
  nd_unit units[5] = {{NULL, 0, ND_BACKEND_CPU, 0, 0},
                      {NULL, 1, ND_BACKEND_CUDA, 1, 0},
                      {NULL, 2, ND_BACKEND_CUDA, 2, 1},
                      {NULL, 3, ND_BACKEND_CUDA, 3, 2},
                      {NULL, 4, ND_BACKEND_CUDA, 4, 3}};
  int own[RANKS] = {1, 2, 3, 4}, pairs[RANKS] = {1, 1, 2, 2}, cpu[RANKS] = {0, 2, 3, 4}, c[2][2];
  /* c[class][on NCCL] */
  on_nccl(g, units, own, -1, c);
  ok(c[0][0] + c[1][0] == 0 && c[0][1] > 0 && c[1][1] > 0, "a GPU per rank: all %d all-reduces on NCCL",
     c[0][1] + c[1][1]);
  on_nccl(g, units, pairs, -1, c);
  ok(c[1][1] == 0 && c[1][0] > 0 && c[0][0] == 0 && c[0][1] > 0,
     "a GPU per tensor-parallel pair: the %d tensor-parallel and norm all-reduces stay ordered sums, the %d "
     "data-parallel ones on NCCL",
     c[1][0], c[0][1]);
  on_nccl(g, units, cpu, 0, c);
  ok(c[1][1] == 0 && c[1][0] > 0 && c[0][0] == 0 && c[0][1] > 0,
     "rank 0 on a CPU worker: its %d all-reduces stay ordered sums, the %d others on NCCL", c[1][0], c[0][1]);
  nd_graph_free(g);
}

int main(void) {
  nd_runtime_starpu_env();
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  signal(SIGALRM, on_alarm);
  plan();
  deps();
  run("lws", NULL);
  run("ndws", &nd_ndws_policy);
  return done_testing();
}
