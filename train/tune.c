/* The tuning pass before the first step (nd_trainer_tune): measures the
 * step, gives the scheduler what it measured, and on a mixed node chooses
 * between the devices and the CPU workers alone; then the trainer starts
 * again at step 0, so that the steps it trains only read the result. */
#include <math.h>
#include <stdlib.h>

#include "common/error.h"
#include "scheduler/policies.h"
#include "tasks/schedule.h"
#include "train/trainer_internal.h"

static void record_duration(void *user, int graph, int32_t task, double start_us, double end_us, int worker) {
  (void)worker;
  if (graph == 0) ((double *)user)[task] = (end_us - start_us) * 1e-6;
}

/* The faster of n steps, in ms. */
static int fastest_ms(nd_trainer *tr, int n, double *ms, nd_error *err) {
  for (int k = 0; k < n; k++) {
    nd_step_result res;
    int rc = nd_trainer_step(tr, &res, err);
    if (rc) return rc;
    *ms = k == 0 ? res.step_ms : fmin(res.step_ms, *ms);
  }
  return 0;
}

/* When ranks land on CPU workers and devices, a slower device can make the
 * step slower than the CPU workers alone (docs/opencl.md): two steps with
 * all workers, then three with the CPU workers alone, and the devices stay
 * only if the faster of their two steps beat the faster of the last two on
 * the CPU workers (ties to the CPU workers). The first step on the CPU
 * workers is not compared: it starts with the data where the devices left
 * it. The faster of two, not one step each: this machine's noise only ever
 * adds time, and one step slowed by it (a CPU step of 316 ms where they took
 * 200-205, 2026-12-02) kept a device that made every later step 30% slower.
 * Only placement changes, so the losses do not. */
static int device_trial(nd_trainer *tr, const double *seconds, nd_device_trial *d, nd_error *err) {
  int rc = fastest_ms(tr, 2, &d->all_ms, err);
  if (!rc) rc = nd__trainer_apply_hints(tr, seconds, 1, err);
  nd_step_result res;
  if (!rc) rc = nd_trainer_step(tr, &res, err); /* the switch */
  if (!rc) rc = fastest_ms(tr, 2, &d->cpu_ms, err);
  if (rc) return rc;
  d->decided = 1;
  d->kept_devices = d->all_ms < d->cpu_ms;
  d->step = nd_trainer_steps_done(tr);
  return d->kept_devices ? nd__trainer_apply_hints(tr, seconds, 0, err) : 0;
}

int nd_trainer_tune(nd_trainer *tr, nd_error *err) {
  const nd_config *cfg = nd__trainer_config(tr);
  if (nd_trainer_steps_done(tr) != 0)
    return nd__fail(err, ND_EINVAL, "trainer: nd_trainer_tune runs before the first step (and before a resume)");
  /* the fixed orders have no use for measured priorities, nor a placement to choose */
  if (!cfg->runtime.tune || nd_sched_is_fixed(cfg->runtime.scheduler)) return 0;
  const nd_graph *g = nd__trainer_graph(tr);
  nd_exec *ex = nd__trainer_exec(tr);
  double *seconds = calloc((size_t)g->n_tasks + 1, sizeof *seconds);
  if (!seconds) return nd__fail(err, ND_ENOMEM, "trainer: out of memory");
  /* one step with every task timed: priorities from durations instead of the FLOPs/bytes model */
  nd_step_result res;
  nd_exec_observe(ex, &(nd_exec_observer){record_duration, seconds});
  int rc = nd_trainer_step(tr, &res, err);
  nd_exec_observe(ex, NULL);
  if (!rc) rc = nd_sched_apply(ex, 0, g, cfg, seconds, err);
  nd_device_trial trial = {0};
  if (!rc && nd__trainer_tries_cpu_alone(cfg, g)) rc = device_trial(tr, seconds, &trial, err);
  free(seconds);
  if (!rc) rc = nd__trainer_rewind(tr, &trial, err);
  return rc;
}
