/* Determinism and resumption: the same configuration and seed give the same
 * bits run after run and under every scheduling policy, a run stopped and
 * resumed from its checkpoint continues with exactly the losses of a straight
 * run, a trainer restarted after some steps (what stage_layers: auto does
 * when it keeps the even split) trains as a fresh one, and stage_layers: auto
 * on a node of one kind keeps equal stages' bits. */
#include <stdlib.h>
#include <unistd.h>

#include "tests/runtime/harness.h"
#include "tests/tap.h"
#include "train/trainer_internal.h"

#define STEPS 5

static const char *layout[] = {
    "parallelism.pipeline_parallel_size=2", "parallelism.tensor_parallel_size=2", "parallelism.micro_batches=4",
    "parallelism.activation_slots=2",       "train.micro_batch_size=2",           NULL};

/* Trains `steps` steps of the tiny model with `extra` on top of the layout. */
static int losses_of(const char *extra, int steps, double *out) {
  const char *ov[8];
  int n = 0;
  for (; layout[n]; n++) ov[n] = layout[n];
  ov[n++] = extra;
  ov[n] = NULL;
  return run_losses(ov, steps, out);
}

static int same_bits(const double *a, const double *b, int n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

int main(void) {
  double a[STEPS], b[STEPS], c[STEPS];
  /* determinism: twice the same run, then under other policies */
  int twice = losses_of("runtime.scheduler=lws", STEPS, a) == 0 && losses_of("runtime.scheduler=lws", STEPS, b) == 0;
  ok(twice && same_bits(a, b, STEPS), "two runs give bit-identical losses (%.9f ... %.9f)", a[0], a[STEPS - 1]);
  const char *policies[] = {"eager", "prio", "ws", "dmdas"};
  for (int i = 0; i < 4; i++) {
    char kv[64];
    snprintf(kv, sizeof kv, "runtime.scheduler=%s", policies[i]);
    ok(losses_of(kv, STEPS, c) == 0 && same_bits(a, c, STEPS), "policy %s gives the same bits as lws", policies[i]);
  }

  /* resumption: 10 straight steps against 5 + checkpoint + resume + 5 */
  char dir[] = "/tmp/ndgraph-resume-XXXXXX";
  if (!mkdtemp(dir)) return done_testing();
  char save[128], step5[160];
  snprintf(save, sizeof save, "train.save_dir=%s", dir);
  snprintf(step5, sizeof step5, "%s/step-5", dir);
  double straight[10], resumed[10];
  const char *ov[8];
  int n = 0;
  for (; layout[n]; n++) ov[n] = layout[n];
  ov[n++] = save;
  ov[n] = NULL;
  nd_config *cfg = tiny_config(ov);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  int rc = losses_of(save, 10, straight);
  if (!rc) rc = nd_trainer_open(&tr, cfg, &err);
  if (!rc) rc = train_losses(tr, 5, resumed);
  if (!rc) rc = nd_trainer_save(tr, &err);
  nd_trainer_close(tr);
  tr = NULL;
  if (!rc) rc = nd_trainer_open(&tr, cfg, &err);
  if (!rc) rc = nd_trainer_load(tr, step5, 1, &err);
  ok(!rc && nd_trainer_steps_done(tr) == 5, "resumed at step 5 %s", err.msg);
  if (!rc) rc = train_losses(tr, 5, resumed + 5);
  ok(!rc && same_bits(straight, resumed, 10), "10 straight steps and 5 + resume + 5 give bit-identical losses");
  nd_trainer_close(tr);
  tr = NULL;

  /* restart: 3 steps, back to step 0, then the tuning pass (which refuses to
   * run after a step) and 5 steps as a fresh, untuned trainer's */
  double restarted[STEPS + 3];
  rc = nd_trainer_open(&tr, cfg, &err);
  if (!rc) rc = train_losses(tr, 3, restarted);
  ok(!rc && nd_trainer_tune(tr, &(nd_error){0}) == ND_EINVAL, "no tuning pass after a step");
  if (!rc) rc = nd__trainer_restart(tr, &err);
  if (!rc) rc = nd_trainer_tune(tr, &err);
  ok(!rc && nd_trainer_steps_done(tr) == 0, "restarted, then tuned: at step 0 %s", err.msg);
  if (!rc) rc = train_losses(tr, STEPS, restarted + 3);
  ok(!rc && same_bits(straight, restarted + 3, STEPS),
     "after 3 steps, a restart and the tuning pass, %d steps give a fresh run's bits (%.9f ... %.9f)", STEPS,
     restarted[3],
     restarted[STEPS + 2]);
  nd_trainer_close(tr);
  nd_config_free(cfg);

  /* stage_layers auto where every stage lands on CPU workers: nothing to measure, equal stages' bits */
  ok(losses_of("parallelism.stage_layers=auto", STEPS, c) == 0 && losses_of("runtime.scheduler=ndws", STEPS, b) == 0 &&
         same_bits(b, c, STEPS),
     "stage_layers auto on CPU workers alone gives equal stages' bits");
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) diag("could not remove %s", dir);
  return done_testing();
}
