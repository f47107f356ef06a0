/* runtime.wait_policy's mechanism (scheduler/idle.h): when an idle worker
 * of ndgraph's policies sleeps. Passive: after ND_IDLE_POLLS polls without
 * work. Active: not while a task is in flight, and as passive once none is.
 * First the rule itself, then ndws's workers as a process sees them: the
 * CPU time they use while the one task in flight sleeps, and after it. */
#include <starpu.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "scheduler/idle.h"
#include "scheduler/policies.h"
#include "tests/ndws_start.h"
#include "tests/tap.h"

#define WORKERS 2
#define HOLD_MS 300

static atomic_int release;

/* A task that stays in flight, without using a core, until released. */
static void hold(void *buffers[], void *arg) {
  (void)buffers;
  (void)arg;
  struct timespec ms = {0, 1000 * 1000};
  while (!atomic_load(&release)) nanosleep(&ms, NULL);
}

static struct starpu_codelet hold_cl = {.cpu_funcs = {hold}, .nbuffers = 0, .name = "hold"};

/* A held task submitted (starpu_task_wait it after setting release), or NULL. */
static struct starpu_task *hold_in_flight(void) {
  atomic_store(&release, 0);
  struct starpu_task *t = starpu_task_create();
  t->cl = &hold_cl;
  t->detach = 0;
  return starpu_task_submit(t) ? NULL : t;
}

/* The call at which the rule first says sleep, within `calls`; 0: never. */
static int first_sleep(int calls) {
  int polls = 0;
  for (int k = 1; k <= calls; k++)
    if (nd_idle_should_sleep(&polls)) return k;
  return 0;
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* The CPU time the process uses in HOLD_MS while one task is in flight, and
 * in HOLD_MS after it ended; the task itself sleeps. */
static int held(double *during, double *after) {
  struct starpu_task *t = hold_in_flight();
  if (!t) return -1;
  pause_ms(20); /* a worker has taken it; the other found nothing since */
  double c0 = cpu_seconds();
  pause_ms(HOLD_MS);
  *during = cpu_seconds() - c0;
  atomic_store(&release, 1);
  if (starpu_task_wait(t)) return -1;
  pause_ms(20);
  c0 = cpu_seconds();
  pause_ms(HOLD_MS);
  *after = cpu_seconds() - c0;
  return 0;
}

int main(void) {
  if (nd_test_start_ndws(WORKERS)) {
    skip("StarPU did not start");
    return done_testing();
  }

  nd_idle_stay_awake(0);
  ok(first_sleep(3 * ND_IDLE_POLLS) == ND_IDLE_POLLS, "passive: sleeps after %d polls", ND_IDLE_POLLS);
  nd_idle_stay_awake(1);
  ok(first_sleep(3 * ND_IDLE_POLLS) == ND_IDLE_POLLS, "active, no task in flight: sleeps after %d polls",
     ND_IDLE_POLLS);
  struct starpu_task *t = hold_in_flight();
  ok(t != NULL, "a task held in flight");
  ok(first_sleep(3 * ND_IDLE_POLLS) == 0, "active, a task in flight: never sleeps in %d polls", 3 * ND_IDLE_POLLS);
  nd_idle_stay_awake(0);
  ok(first_sleep(3 * ND_IDLE_POLLS) == ND_IDLE_POLLS, "passive, a task in flight: sleeps after %d polls",
     ND_IDLE_POLLS);
  atomic_store(&release, 1);
  ok(t && starpu_task_wait(t) == 0, "the held task ended");

  /* the idle worker of a 2-worker ndws: polling for HOLD_MS takes most of a
   * core even on a loaded machine, sleeping next to none */
  double during = 0, after = 0;
  nd_idle_stay_awake(1);
  int rc = held(&during, &after);
  ok(rc == 0 && during > 0.3 * HOLD_MS / 1e3,
     "active: the idle worker polls while a task is in flight (%.3f s of CPU in %.1f s)", during, HOLD_MS / 1e3);
  ok(after < 0.1 * HOLD_MS / 1e3, "active: the workers sleep once none is (%.3f s of CPU in %.1f s)", after,
     HOLD_MS / 1e3);
  nd_idle_stay_awake(0);
  rc = held(&during, &after);
  ok(rc == 0 && during < 0.1 * HOLD_MS / 1e3,
     "passive: the idle worker sleeps while a task is in flight (%.3f s of CPU in %.1f s)", during, HOLD_MS / 1e3);
  starpu_shutdown();
  return done_testing();
}
