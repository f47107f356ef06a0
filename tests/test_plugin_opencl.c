/* A plugin's OpenCL kernel in a mixed-node training: the example plugin's
 * residual add (examples/plugins/opencl_add.c, CPU and OpenCL under one
 * name) selected by kernels.override on one CPU worker and one OpenCL
 * device. Its losses match the built-in kernels' on the same node (within
 * the OpenCL parity tolerance, 1e-4 relative) and residual_fwd tasks ran on
 * the device, so the plugin's OpenCL kernel was called. Skipped without an
 * OpenCL device. */
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
  int residual_on_device;
} seen;

static void task_done(void *user, int graph, int32_t task, double start, double end, int worker) {
  (void)start, (void)end;
  seen *s = user;
  if (graph == 0 && s->g->tasks[task].kind == ND_TASK_RESIDUAL_FWD &&
      starpu_worker_get_type(worker) == STARPU_OPENCL_WORKER)
    s->residual_on_device++;
}

static int train(const char *const *overrides, double *loss, int *on_device, nd_error *err) {
  nd_config *cfg = tiny_config(overrides);
  nd_trainer *tr = NULL;
  if (!cfg) return -1;
  int rc = nd_trainer_open(&tr, cfg, err);
  if (!rc) {
    seen s = {nd__trainer_graph(tr), 0};
    nd_exec_observer obs = {task_done, &s};
    nd_exec_observe(nd__trainer_exec(tr), &obs);
    rc = train_losses(tr, STEPS, loss);
    nd_exec_observe(nd__trainer_exec(tr), NULL);
    *on_device = s.residual_on_device;
  }
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

int main(void) {
  char plugins[1200];
  const char *build = getenv("ND_BUILDDIR");
  snprintf(plugins, sizeof plugins, "kernels.plugins=[%s/examples/plugins/.libs/libopencl_add.so]", build ? build : ".");
  const char *builtin[] = {"runtime.workers=1", "runtime.opencl_devices=1", "parallelism.pipeline_parallel_size=2",
                           "parallelism.micro_batches=4", "train.micro_batch_size=2", "parallelism.activation_slots=2",
                           NULL};
  const char *plugin[] = {"runtime.workers=1", "runtime.opencl_devices=1", "parallelism.pipeline_parallel_size=2",
                          "parallelism.micro_batches=4", "train.micro_batch_size=2", "parallelism.activation_slots=2",
                          plugins, "kernels.override={residual_fwd: ocl_add}", NULL};
  double ref[STEPS], mine[STEPS];
  int ref_dev = 0, mine_dev = 0;
  nd_error err = {0};
  int rc = train(builtin, ref, &ref_dev, &err);
  if (rc == ND_ENODEV) {
    skip("mixed node with the plugin's OpenCL residual add: no OpenCL device (%s)", err.msg);
    skip("the plugin's kernel ran on the device (no OpenCL device)");
    return done_testing();
  }
  if (!ok(rc == 0, "mixed node with the built-in kernels trains%s%s", rc ? ": " : "", rc ? err.msg : ""))
    return done_testing();
  rc = train(plugin, mine, &mine_dev, &err);
  if (!ok(rc == 0, "mixed node with the plugin's residual add trains%s%s", rc ? ": " : "", rc ? err.msg : ""))
    return done_testing();
  double worst = 0;
  for (int s = 0; s < STEPS; s++) worst = fmax(worst, fabs(mine[s] - ref[s]) / ref[s]);
  ok(worst < 1e-4, "losses of %d steps within %.2e relative of the built-in kernels' (need 1e-4)", STEPS, worst);
  ok(mine_dev > 0, "%d residual_fwd tasks of the plugin ran on the OpenCL device", mine_dev);
  return done_testing();
}
