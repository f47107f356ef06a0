/* Sleeping idle workers: Debian's StarPU has non-blocking drivers, whose
 * workers call pop_task in a loop; without this an idle worker burns a core
 * that the submitting thread and the other workers need. A worker that has
 * found nothing for a while waits on a condition variable that every push
 * signals. The generation counter closes the window between "found nothing"
 * and "sleep": a push after the worker looked changes it, so it does not
 * sleep. */
#ifndef ND_SCHEDULER_IDLE_H
#define ND_SCHEDULER_IDLE_H

#include <pthread.h>
#include <stdatomic.h>

#include "configs/config.h"

typedef struct nd_idle {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_ulong gen;
  atomic_int sleepers; /* changed under mu; read without it by pushers */
} nd_idle;

void nd_idle_init(nd_idle *s);
void nd_idle_destroy(nd_idle *s);
static inline unsigned long nd_idle_generation(nd_idle *s) { return atomic_load(&s->gen); }
/* After work was queued. */
void nd_idle_notify(nd_idle *s);
/* Called by a worker in pop_task that found nothing since generation `seen`:
 * relaxes its StarPU state (so pushers can lock it) and sleeps until a push
 * or at most max_us. */
void nd_idle_sleep(nd_idle *s, unsigned long seen, int max_us);

/* Whether an idle worker should sleep now; *polls counts the times it found
 * no work since it last ran a task. After ND_IDLE_POLLS (about a
 * millisecond) it sleeps, unless idle workers are to stay awake
 * (nd_idle_stay_awake) and the step still has tasks in flight: then the gap
 * is a pipeline bubble that ends when a neighbour's task does, and a worker
 * that slept may start the next task late (on a virtual machine its halted
 * vCPU has handed the core back to the host), as StarPU's always-polling
 * policies do not (docs/scheduler.md, *Idle workers*, has the measurements).
 * Between steps nothing is in flight and it sleeps, leaving the cores to the
 * main thread. */
int nd_idle_should_sleep(int *polls);
/* For a CPU worker that found nothing to run: lends its core to a kernel
 * another worker runs (common/share.h, runtime.wait_policy `help`),
 * relaxed meanwhile so that pushers can lock it. Returns whether it helped;
 * then it has been busy and looks for work again before it may sleep. */
int nd_idle_help(int *polls);
/* The worker found a task: it is no longer idle. */
void nd_idle_end(int *polls);
/* Set before StarPU starts: whether idle workers stay awake while a step
 * runs. */
void nd_idle_stay_awake(int on);
/* runtime.wait_policy, decided here and nowhere else, before StarPU starts:
 * `auto` is help under `ndws` and active under the other policies where
 * each worker has a core of its own (own_cores), else passive. Sets whether
 * idle workers stay awake and whether kernels are offered to them
 * (common/share.h); returns the policy applied. */
enum nd_wait_policy nd_idle_wait_policy(enum nd_wait_policy asked, const char *policy, int own_cores);

#endif
