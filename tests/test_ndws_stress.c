/* ndws under random DAGs, driven on StarPU directly with tiny codelets:
 * thousands of tasks with random durations, priorities and worker
 * restrictions on 4 workers. Every task must run exactly once, after all of
 * its predecessors ended, on a worker it may use, and every run must end
 * (a lost wake-up would hang it: the alarm turns that into a failure). */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <starpu.h>
#include <time.h>
#include <unistd.h>

#include "scheduler/policies.h"
#include "tests/ndws_start.h"
#include "tests/tap.h"

#define N_TASKS   2000
#define MAX_PREDS 4
#define ROUNDS    20
#define WORKERS   4

typedef struct node {
  int n_pred, pred[MAX_PREDS];
  int spin_us;
  uint32_t allowed; /* 0: any */
  atomic_int runs;
  atomic_int done;
  atomic_int bad_order, bad_worker;
} node;

static node nodes[N_TASKS];

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void body(void *buffers[], void *arg) {
  (void)buffers;
  node *n = arg;
  atomic_fetch_add(&n->runs, 1);
  for (int p = 0; p < n->n_pred; p++)
    if (!atomic_load(&nodes[n->pred[p]].done)) atomic_fetch_add(&n->bad_order, 1);
  int w = starpu_worker_get_id();
  if (n->allowed && !(n->allowed >> w & 1)) atomic_fetch_add(&n->bad_worker, 1);
  double until = now_us() + n->spin_us;
  while (now_us() < until) {}
  atomic_store(&n->done, 1);
}

static struct starpu_codelet cl = {.cpu_funcs = {body}, .nbuffers = 0, .name = "stress"};

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "not ok - a run did not end (lost wake-up?)\n";
  if (write(1, msg, sizeof msg - 1) < 0) _exit(2);
  _exit(1);
}

/* One random DAG: edges only to earlier tasks; mostly short tasks, some long;
 * about a third restricted to one or two workers. */
static void make_dag(unsigned seed) {
  srand(seed);
  for (int i = 0; i < N_TASKS; i++) {
    node *n = &nodes[i];
    n->n_pred = i ? rand() % (MAX_PREDS + 1) : 0;
    for (int p = 0; p < n->n_pred; p++) n->pred[p] = rand() % i;
    n->spin_us = rand() % 10 == 0 ? 50 + rand() % 200 : rand() % 5;
    int r = rand() % 6;
    n->allowed = r == 0   ? 1u << (rand() % WORKERS)
                 : r == 1 ? (1u << (rand() % WORKERS)) | (1u << (rand() % WORKERS))
                          : 0;
    atomic_store(&n->runs, 0);
    atomic_store(&n->done, 0);
    atomic_store(&n->bad_order, 0);
    atomic_store(&n->bad_worker, 0);
  }
}

static int run_dag(struct starpu_task **tasks) {
  for (int i = 0; i < N_TASKS; i++) {
    struct starpu_task *t = starpu_task_create();
    t->cl = &cl;
    t->cl_arg = &nodes[i];
    t->priority = rand() % (ND_WS_PRIO_MAX + 1);
    t->detach = 0;
    if (nodes[i].allowed) {
      t->workerids_len = 1;
      t->workerids = &nodes[i].allowed;
    }
    /* a home for some tasks, not always one they may use */
    if (rand() % 2) t->sched_data = (void *)(intptr_t)(1 + rand() % WORKERS);
    struct starpu_task *preds[MAX_PREDS];
    for (int p = 0; p < nodes[i].n_pred; p++) preds[p] = tasks[nodes[i].pred[p]];
    if (nodes[i].n_pred) starpu_task_declare_deps_array(t, (unsigned)nodes[i].n_pred, preds);
    tasks[i] = t;
  }
  /* submit in a shuffled-ish order: tasks may wait on tasks submitted later */
  for (int i = N_TASKS - 1; i >= 0; i--)
    if (starpu_task_submit(tasks[i])) return -1;
  starpu_task_wait_for_all();
  for (int i = 0; i < N_TASKS; i++) starpu_task_destroy(tasks[i]);
  return 0;
}

int main(void) {
  if (nd_test_start_ndws(WORKERS)) {
    skip("StarPU did not start");
    return done_testing();
  }
  ok(starpu_cpu_worker_get_count() == WORKERS, "%u workers", starpu_cpu_worker_get_count());
  ok(starpu_sched_get_max_priority() == ND_WS_PRIO_MAX, "ndws advertises its priority range");
  signal(SIGALRM, on_alarm);
  static struct starpu_task *tasks[N_TASKS];
  for (int round = 0; round < ROUNDS; round++) {
    make_dag(1000u + (unsigned)round);
    alarm(30);
    int rc = run_dag(tasks);
    alarm(0);
    int once = 1, order = 1, where = 1;
    for (int i = 0; i < N_TASKS; i++) {
      once &= atomic_load(&nodes[i].runs) == 1;
      order &= atomic_load(&nodes[i].bad_order) == 0;
      where &= atomic_load(&nodes[i].bad_worker) == 0;
    }
    ok(rc == 0 && once && order && where, "round %d: %d tasks ran once each, after their predecessors, where allowed",
       round, N_TASKS);
  }
  /* idle: the workers must sleep rather than spin */
  struct timespec ts = {0, 200 * 1000 * 1000};
  clock_t c0 = clock();
  nanosleep(&ts, NULL);
  double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
  ok(cpu < 0.1, "idle workers use little CPU (%.3f s of CPU in 0.2 s wall, 4 workers)", cpu);
  starpu_shutdown();
  return done_testing();
}
