/* Two trainers in one process do not disturb each other: each owns its
 * kernel table and plugins, and StarPU is shared. Trainer A (the example
 * plugin's SiLU, data parallel 2) and trainer B (built-in GeLU, pipeline
 * parallel 2, another model depth) give bitwise the losses of their runs
 * alone: one after the other, with interleaved steps, and with `plan` (no
 * plugins) reported while A is open. A trainer that asks StarPU for other
 * workers while one is open is refused with ND_ECONFIG. */
#include <stdio.h>
#include <string.h>

#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define STEPS 4

static char plugins_set[2048];

static int same(const double *a, const double *b) { return memcmp(a, b, STEPS * sizeof *a) == 0; }

static int step(nd_trainer *tr, double *loss) {
  nd_step_result r;
  nd_error err = {0};
  int rc = nd_trainer_step(tr, &r, &err);
  if (rc) fprintf(stderr, "# step: %s\n", err.msg);
  *loss = r.loss;
  return rc;
}

static nd_trainer *open_trainer(nd_config *cfg, nd_error *err) {
  nd_trainer *tr = NULL;
  if (cfg && nd_trainer_open(&tr, cfg, err)) return NULL;
  return tr;
}

int main(void) {
  const char *build = getenv("ND_BUILDDIR");
  snprintf(plugins_set, sizeof plugins_set, "kernels.plugins=[%s/examples/plugins/.libs/libexample.so]",
           build ? build : ".");
  const char *const a_kv[] = {plugins_set, "model.activation=silu", "parallelism.data_parallel_size=2", NULL};
  const char *const b_kv[] = {"model.n_layer=2", "parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=2",
                              NULL};
  const char *const c_kv[] = {"runtime.workers=1", NULL};
  double a_alone[STEPS], b_alone[STEPS], a[STEPS], b[STEPS];
  nd_error err = {0};

  if (!ok(run_losses(a_kv, STEPS, a_alone) == 0, "trainer A (plugin SiLU, dp 2) trains alone") ||
      !ok(run_losses(b_kv, STEPS, b_alone) == 0, "trainer B (GeLU, pp 2, 2 layers) trains alone"))
    return done_testing();
  ok(!same(a_alone, b_alone), "A and B compute different losses (%.6f, %.6f at step %d)", a_alone[STEPS - 1],
     b_alone[STEPS - 1], STEPS);

  /* interleaved steps, and a plan without plugins while both are open */
  nd_config *ca = tiny_config(a_kv), *cb = tiny_config(b_kv), *cc = tiny_config(c_kv);
  nd_trainer *ta = open_trainer(ca, &err);
  ok(ta != NULL, "trainer A opens%s%s", ta ? "" : ": ", ta ? "" : err.msg);
  nd_trainer *tb = ta ? open_trainer(cb, &err) : NULL;
  ok(tb != NULL, "trainer B opens while A is open%s%s", tb ? "" : ": ", tb ? "" : err.msg);
  int rc = 0;
  for (int s = 0; s < STEPS && ta && tb && !rc; s++) {
    rc = step(ta, &a[s]) || step(tb, &b[s]);
    if (s == 1) {
      FILE *devnull = fopen("/dev/null", "w");
      int prc = nd_plan_report(cb, 1, devnull, 0, NULL, &err);
      if (devnull) fclose(devnull);
      ok(prc == 0, "plan (built-in kernels) reports while A and B are open%s%s", prc ? ": " : "", prc ? err.msg : "");
    }
  }
  if (ta && tb) {
    ok(!rc && same(a, a_alone),
       "A with interleaved steps and a plan: bitwise the losses alone (%.9f vs %.9f at step %d)", a[STEPS - 1],
       a_alone[STEPS - 1], STEPS);
    ok(!rc && same(b, b_alone), "B with interleaved steps: bitwise the losses alone (%.9f vs %.9f at step %d)",
       b[STEPS - 1], b_alone[STEPS - 1], STEPS);
  }
  nd_trainer *tc = ta ? open_trainer(cc, &err) : NULL;
  ok(ta && !tc && err.code == ND_ECONFIG && strstr(err.msg, "StarPU already runs"),
     "a trainer asking for other workers while one is open is refused (ND_ECONFIG): %s", err.msg);
  nd_trainer_close(tc);
  nd_trainer_close(tb);
  nd_trainer_close(ta);

  /* one after the other, in the same process, after the above */
  ok(run_losses(b_kv, STEPS, b) == 0 && same(b, b_alone), "B again after A and B closed: bitwise the same losses");
  ok(run_losses(a_kv, STEPS, a) == 0 && same(a, a_alone), "A again after B: bitwise the same losses");
  nd_config_free(ca);
  nd_config_free(cb);
  nd_config_free(cc);
  return done_testing();
}
