/* ndws's ordering policy: a worker that is released while ready tasks of
 * distinct priorities wait in its queue runs them highest priority first.
 * One CPU worker is held by a task until every other task has been
 * submitted (in a shuffled order, without dependencies, so each is queued at
 * once), then released; the order the tasks ran in must be by priority. */
#include <stdatomic.h>
#include <starpu.h>
#include <stdlib.h>

#include "scheduler/policies.h"
#include "tests/ndws_start.h"
#include "tests/tap.h"

#define N_TASKS 64
#define ROUNDS  5

static atomic_int started, released, next_slot;
static int ran[N_TASKS]; /* priorities in the order the tasks ran */

static void hold(void *buffers[], void *arg) {
  (void)buffers, (void)arg;
  atomic_store(&started, 1);
  while (!atomic_load(&released)) starpu_sleep(0.001f);
}

static void record(void *buffers[], void *arg) {
  (void)buffers;
  ran[atomic_fetch_add(&next_slot, 1)] = (int)(intptr_t)arg;
}

static struct starpu_codelet hold_cl = {.cpu_funcs = {hold}, .nbuffers = 0, .name = "hold"};
static struct starpu_codelet record_cl = {.cpu_funcs = {record}, .nbuffers = 0, .name = "record"};

static int submit(struct starpu_codelet *cl, int priority, void *arg) {
  struct starpu_task *t = starpu_task_create();
  t->cl = cl;
  t->cl_arg = arg;
  t->priority = priority;
  return starpu_task_submit(t);
}

int main(void) {
  if (nd_test_start_ndws(1)) {
    skip("StarPU did not start");
    return done_testing();
  }
  srand(7);
  for (int round = 0; round < ROUNDS; round++) {
    atomic_store(&started, 0);
    atomic_store(&released, 0);
    atomic_store(&next_slot, 0);
    int rc = submit(&hold_cl, ND_WS_PRIO_MAX, NULL);
    while (!rc && !atomic_load(&started)) starpu_sleep(0.001f);
    /* distinct priorities spread over ndws's range, submitted shuffled */
    int prio[N_TASKS];
    for (int i = 0; i < N_TASKS; i++) prio[i] = (int)((long long)i * ND_WS_PRIO_MAX / N_TASKS) + round;
    for (int i = N_TASKS - 1; i > 0; i--) {
      int j = rand() % (i + 1), x = prio[i];
      prio[i] = prio[j], prio[j] = x;
    }
    for (int i = 0; i < N_TASKS && !rc; i++) rc = submit(&record_cl, prio[i], (void *)(intptr_t)prio[i]);
    atomic_store(&released, 1);
    starpu_task_wait_for_all();
    int sorted = atomic_load(&next_slot) == N_TASKS, first_bad = -1;
    for (int i = 1; i < N_TASKS && sorted; i++)
      if (ran[i - 1] <= ran[i]) sorted = 0, first_bad = i;
    ok(!rc && sorted, "round %d: %d queued tasks ran highest priority first", round, N_TASKS);
    if (first_bad >= 0) diag("position %d ran priority %d after %d", first_bad, ran[first_bad], ran[first_bad - 1]);
  }
  starpu_shutdown();
  return done_testing();
}
