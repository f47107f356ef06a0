/* Idle workers of non-blocking drivers: when they sleep, and the
 * condition-variable sleep itself. */
#include "scheduler/idle.h"

#include <starpu.h>
#include <time.h>

#include "common/share.h"
#include "configs/policies.h"
#include "scheduler/policies.h"

static atomic_int stay_awake;

void nd_idle_stay_awake(int on) { atomic_store(&stay_awake, on); }

enum nd_wait_policy nd_idle_wait_policy(enum nd_wait_policy asked, const char *policy, int own_cores) {
  enum nd_wait_policy wait = asked;
  /* the fixed orders keep each stage's worker to its stage, as published */
  if (wait == ND_WAIT_AUTO)
    wait = !own_cores ? ND_WAIT_PASSIVE : nd_policy_of(policy) == ND_POLICY_NDWS ? ND_WAIT_HELP : ND_WAIT_ACTIVE;
  nd_idle_stay_awake(wait == ND_WAIT_ACTIVE || wait == ND_WAIT_HELP);
  nd__share_enable(wait == ND_WAIT_HELP);
  return wait;
}

int nd_idle_should_sleep(int *polls) {
  if (++*polls < ND_IDLE_POLLS) return 0;
  /* asked once per ND_IDLE_POLLS: StarPU counts the tasks in flight under a
   * mutex that every submission and completion takes */
  if (atomic_load_explicit(&stay_awake, memory_order_relaxed) && starpu_task_nsubmitted() > 0) {
    *polls = 0;
    return 0;
  }
  *polls = ND_IDLE_POLLS;
  return 1;
}

int nd_idle_help(int *polls) {
  if (starpu_worker_get_type(starpu_worker_get_id()) != STARPU_CPU_WORKER) return 0;
  starpu_worker_relax_on();
  int helped = nd__share_help();
  starpu_worker_relax_off();
  if (helped) *polls = 0;
  return helped;
}

void nd_idle_end(int *polls) { *polls = 0; }

void nd_idle_init(nd_idle *s) {
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &attr);
  pthread_condattr_destroy(&attr);
  atomic_init(&s->gen, 0);
  atomic_init(&s->sleepers, 0);
}

void nd_idle_destroy(nd_idle *s) {
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
}

void nd_idle_notify(nd_idle *s) {
  /* sequentially consistent on both sides: either this push sees the
   * sleeper, or the sleeper sees the new generation */
  atomic_fetch_add(&s->gen, 1);
  if (!atomic_load(&s->sleepers)) return;
  pthread_mutex_lock(&s->mu);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

void nd_idle_sleep(nd_idle *s, unsigned long seen, int max_us) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_nsec += (long)max_us * 1000;
  until.tv_sec += until.tv_nsec / 1000000000;
  until.tv_nsec %= 1000000000;
  /* another lock than our own: let pushers lock this worker meanwhile */
  starpu_worker_relax_on();
  pthread_mutex_lock(&s->mu);
  atomic_fetch_add(&s->sleepers, 1);
  while (atomic_load(&s->gen) == seen)
    if (pthread_cond_timedwait(&s->cv, &s->mu, &until)) break;
  atomic_fetch_sub(&s->sleepers, 1);
  pthread_mutex_unlock(&s->mu);
  starpu_worker_relax_off();
}
