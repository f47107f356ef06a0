/* A plugin's OpenCL kernels in a mixed-node training (one CPU worker, one
 * OpenCL device): the example plugin's residual add
 * (examples/plugins/opencl_add.c, CPU and OpenCL under one name) selected by
 * kernels.override matches the built-in kernels' losses, and its SiLU
 * (model.activation: silu_ocl) matches the CPU-only SiLU of
 * examples/plugins/example.c, within the OpenCL parity tolerance (1e-4
 * relative); in both, tasks of the kind ran on the device, so the plugin's
 * OpenCL kernel was called. Skipped without an OpenCL device. */
#include <math.h>
#include <starpu.h>
#include <stdio.h>

#include "tasks/exec.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"
#include "train/trainer_internal.h"

#define STEPS 5

typedef struct seen {
  const nd_graph *g;
  enum nd_task_kind kind;
  int on_device;
} seen;

static void task_done(void *user, int graph, int32_t task, double start, double end, int worker) {
  (void)start, (void)end;
  seen *s = user;
  if (graph == 0 && s->g->tasks[task].kind == s->kind && starpu_worker_get_type(worker) == STARPU_OPENCL_WORKER)
    s->on_device++;
}

/* Trains STEPS steps; *on_device: tasks of `kind` that ran on the OpenCL device. */
static int train(const char *const *overrides, enum nd_task_kind kind, double *loss, int *on_device, nd_error *err) {
  nd_config *cfg = tiny_config(overrides);
  nd_trainer *tr = NULL;
  if (!cfg) return -1;
  int rc = nd_trainer_open(&tr, cfg, err);
  if (!rc) {
    seen s = {nd__trainer_graph(tr), kind, 0};
    nd_exec_observer obs = {task_done, &s};
    nd_exec_observe(nd__trainer_exec(tr), &obs);
    rc = train_losses(tr, STEPS, loss);
    nd_exec_observe(nd__trainer_exec(tr), NULL);
    *on_device = s.on_device;
  }
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

/* strict: stage 1 stays on the device whatever the placement trial would
 * choose on a loaded machine, so the plugin's device kernel must run */
#define MIXED                                                                                      \
  "runtime.workers=1", "runtime.opencl_devices=1", "parallelism.pipeline_parallel_size=2",         \
      "parallelism.micro_batches=4", "train.micro_batch_size=2", "parallelism.activation_slots=2", \
      "runtime.placement=strict"

static void compare(const double *mine, const double *ref, int on_device, const char *what, const char *kind) {
  double worst = 0;
  for (int s = 0; s < STEPS; s++) worst = fmax(worst, fabs(mine[s] - ref[s]) / ref[s]);
  ok(worst < 1e-4, "%s: losses of %d steps within %.2e relative (need 1e-4)", what, STEPS, worst);
  ok(on_device > 0, "%s: %d %s tasks ran on the OpenCL device", what, on_device, kind);
}

int main(void) {
  char plugins[1200], cpu_silu[1200];
  const char *build = getenv("ND_BUILDDIR");
  snprintf(plugins, sizeof plugins, "kernels.plugins=[%s/examples/plugins/.libs/libopencl_add.so]",
           build ? build : ".");
  snprintf(cpu_silu, sizeof cpu_silu, "kernels.plugins=[%s/examples/plugins/.libs/libexample.so]", build ? build : ".");
  const char *builtin[] = {MIXED, NULL};
  const char *plugin[] = {MIXED, plugins, "kernels.override={residual_fwd: ocl_add}", NULL};
  const char *silu_cpu[] = {MIXED, cpu_silu, "model.activation=silu", NULL};
  const char *silu_ocl[] = {MIXED, plugins, "model.activation=silu_ocl", NULL};
  double ref[STEPS], mine[STEPS];
  int ref_dev = 0, mine_dev = 0;
  nd_error err = {0};
  int rc = train(builtin, ND_TASK_RESIDUAL_FWD, ref, &ref_dev, &err);
  if (rc == ND_ENODEV) {
    skip("mixed node with the plugin's OpenCL kernels: no OpenCL device (%s)", err.msg);
    return done_testing();
  }
  if (!ok(rc == 0, "mixed node with the built-in kernels trains%s%s", rc ? ": " : "", rc ? err.msg : ""))
    return done_testing();
  rc = train(plugin, ND_TASK_RESIDUAL_FWD, mine, &mine_dev, &err);
  if (!ok(rc == 0, "mixed node with the plugin's residual add trains%s%s", rc ? ": " : "", rc ? err.msg : ""))
    return done_testing();
  compare(mine, ref, mine_dev, "the plugin's residual add vs the built-in", "residual_fwd");
  rc = train(silu_cpu, ND_TASK_ACT_FWD, ref, &ref_dev, &err);
  if (!ok(rc == 0, "mixed node with a CPU-only SiLU trains%s%s", rc ? ": " : "", rc ? err.msg : ""))
    return done_testing();
  rc = train(silu_ocl, ND_TASK_ACT_FWD, mine, &mine_dev, &err);
  if (!ok(rc == 0, "mixed node with the plugin's OpenCL SiLU trains%s%s", rc ? ": " : "", rc ? err.msg : ""))
    return done_testing();
  ok(ref_dev == 0, "a CPU-only plugin activation stays off the device (%d tasks there)", ref_dev);
  compare(mine, ref, mine_dev, "the plugin's OpenCL SiLU vs a CPU-only SiLU", "activation_fwd");
  return done_testing();
}
