/* One CPU worker + one device reproduces the CPU-only single-rank
 * reference: losses of 6 steps within 1e-4 relative, for data, tensor and
 * pipeline parallelism at 2 (pipeline under ndws and 1f1b, and with
 * stage_layers auto, which calibrates and rebuilds, and keeps the even split
 * where the CPU workers alone beat the balanced one), free placement (tasks
 * on both) and one rank. With an OpenCL device, ranks are placed on both the
 * CPU worker and the device; with a GPU, every rank goes on the GPU (the
 * CPU worker loads batches) and free placement mixes the two. The strict
 * pipeline run also checks that tasks ran on the device, attention among them, and that data
 * crossed memory nodes (StarPU's bus statistics), so a run that silently
 * stays on the CPU fails. The same pipeline unobserved goes through the
 * trainer's placement trial where ranks land on both kinds of worker (all
 * workers against the CPU worker alone, train/trainer.c) and decides within
 * the 6 steps (the calibration and the trial's five; its losses checked as
 * every layout's: a device's kernels round differently from the CPU's, so
 * they are not bit-identical). Built twice: test_opencl_parity (an OpenCL
 * device) and, with ND_TEST_CUDA, test_cuda_parity (a CUDA device); skipped
 * without such a device.
 * tests/test_opencl_parity_llama.c builds it for model.arch llama, on OpenCL
 * and (test_cuda_parity_llama) on CUDA. */
#include <math.h>
#include <starpu.h>
#include <string.h>

#include "tasks/exec.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"
#include "train/trainer_internal.h"

#define STEPS 6
/* the tuning pass on a mixed node: the timed step, 2 on all workers, the switch, 2 on the CPU workers */
#define TUNING_STEPS 6

#ifdef ND_TEST_CUDA
#define DEVICE        "CUDA"
#define DEVICE_WORKER STARPU_CUDA_WORKER
#define DEVICE_KEY    "runtime.cuda_devices=1"
#else
#define DEVICE        "OpenCL"
#define DEVICE_WORKER STARPU_OPENCL_WORKER
#define DEVICE_KEY    "runtime.opencl_devices=1"
#endif

/* Settings of every run besides the layout: none for GPT-2. */
#ifndef PARITY_MODEL
#define PARITY_MODEL NULL
#endif
static const char *const model[] = {PARITY_MODEL, NULL};

typedef struct counts {
  int device_tasks, cpu_tasks, device_attention; /* attention: GPT-2's or grouped-query, forward or backward */
  int forwarded, targets_forwarded; /* outputs sent ahead to another memory node; of them, the last stage's targets */
  int micro_batches;
  const nd_graph *g;
} counts;

/* What the executor sends ahead when each task of the step ends (tasks/forward.h). */
static void count_forwarded(const nd_exec *ex, counts *c) {
  c->micro_batches = c->g->micro_batches;
  for (int32_t i = 0; i < c->g->n_tasks; i++) {
    const nd_task *t = &c->g->tasks[i];
    int32_t n = nd_exec_forwarded(ex, 0, i);
    c->forwarded += n;
    if (t->kind == ND_TASK_LOAD_BATCH && t->rank.pp == c->g->pp - 1) c->targets_forwarded += n;
  }
}

static void task_done(void *user, int graph, int32_t task, double start, double end, int worker) {
  (void)start, (void)end;
  counts *c = user;
  if (starpu_worker_get_type(worker) != DEVICE_WORKER) {
    c->cpu_tasks++;
    return;
  }
  c->device_tasks++;
  enum nd_task_kind k = c->g->tasks[task].kind;
  if (graph == 0 && (k == ND_TASK_ATTN_FWD || k == ND_TASK_ATTN_BWD || k == ND_TASK_GQA_FWD || k == ND_TASK_GQA_BWD))
    c->device_attention++;
}

/* stage_layers auto: the split is the balanced one, or the even one when the CPU workers alone, which the trainer
 * then tries, were timed faster than the balanced split's slowest stage (train/balance.c). */
static void check_auto_split(const nd_trainer *tr, const char *name) {
  nd_stage_info st[8];
  int p = 0, L = 0, balanced = 1, even = 1;
  double slowest = 0;
  while (p < 8 && nd_trainer_stage(tr, p, &st[p]) == 0) L += (int)st[p++].layers;
  for (int s = 0; s < p; s++) {
    slowest = fmax(slowest, st[s].other_ms + (double)st[s].balanced_layers * st[s].layer_ms);
    balanced &= st[s].layers == st[s].balanced_layers;
    even &= st[s].layers == L / p + (s < L % p);
  }
  if (!p) {
    ok(0, "mixed node, %s: the trainer reports its split", name);
  } else if (st[0].cpu_alone_ms < 0) {
    ok(balanced, "mixed node, %s: the CPU workers alone not tried, the balanced split kept", name);
  } else {
    int keep_even = slowest >= st[0].cpu_alone_ms;
    ok(keep_even ? even : balanced,
       "mixed node, %s: the balanced split's slowest stage %.2f ms against a step on the CPU workers alone %.2f ms: "
       "the %s split kept",
       name, slowest, st[0].cpu_alone_ms, keep_even ? "even" : "balanced");
  }
}

/* The tuning pass's outcome: the step the trainer stood at after it (0), and the choice it made. */
typedef struct after {
  long long tuned_at;
  nd_device_trial trial;
} after;

/* Trains STEPS steps; with c, counts tasks per device and bytes moved between memory nodes. With auto_split,
 * checks the split stage_layers auto chose. */
static int train(const char *const *overrides, double *loss, counts *c, uint64_t *bus_bytes, after *a,
                 const char *auto_split, nd_error *err) {
  const char *kv[24];
  int n = 0;
  for (int i = 0; model[i]; i++) kv[n++] = model[i];
  for (int i = 0; overrides[i]; i++) kv[n++] = overrides[i];
  kv[n] = NULL;
  nd_config *cfg = tiny_config(kv);
  nd_trainer *tr = NULL;
  int rc = -1;
  if (!cfg) return -1;
  if ((rc = nd_trainer_open(&tr, cfg, err))) goto done;
  if (auto_split) check_auto_split(tr, auto_split);
  if ((rc = nd_trainer_tune(tr, err))) goto done;
  a->tuned_at = nd_trainer_steps_done(tr);
  nd_exec_observer obs = {task_done, c};
  if (c) {
    c->g = nd__trainer_graph(tr);
    nd_exec_observe(nd__trainer_exec(tr), &obs); /* profiling on: the bus statistics count from here */
  }
  rc = train_losses(tr, STEPS, loss);
  nd_trainer_device_trial(tr, &a->trial);
  if (c) count_forwarded(nd__trainer_exec(tr), c);
  if (c) {
    *bus_bytes = 0;
    for (int b = 0; b < starpu_bus_get_count(); b++) {
      struct starpu_profiling_bus_info info;
      if (starpu_bus_get_profiling_info(b, &info) == 0) *bus_bytes += (uint64_t)info.transferred_bytes;
    }
    nd_exec_observe(nd__trainer_exec(tr), NULL);
  }
done:
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

int main(void) {
  double ref[STEPS];
  nd_error err = {0};
  after a = {0};
  if (!ok(train(single_rank, ref, NULL, NULL, &a, NULL, &err) == 0, "CPU-only single-rank reference trains"))
    return done_testing();

  static const struct layout {
    const char *name, *kv[8];
  } layouts[] = {
      {"dp 2", {"parallelism.data_parallel_size=2", "parallelism.micro_batches=1", "train.micro_batch_size=4", NULL}},
      {"tp 2", {"parallelism.tensor_parallel_size=2", "parallelism.micro_batches=1", "train.micro_batch_size=8", NULL}},
      {"pp 2 ndws",
       {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=4", "train.micro_batch_size=2",
        "parallelism.activation_slots=2", NULL}},
      {"pp 2 ndws, strict",
       {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=4", "train.micro_batch_size=2",
        "parallelism.activation_slots=2", "runtime.placement=strict", NULL}},
      {"pp 2 1f1b",
       {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=4", "train.micro_batch_size=2",
        "parallelism.activation_slots=2", "runtime.scheduler=1f1b", NULL}},
      {"pp 2 stage_layers auto",
       {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=4", "train.micro_batch_size=2",
        "parallelism.activation_slots=2", "parallelism.stage_layers=auto", NULL}},
      {"pp 2 ndws, placement trials",
       {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=4", "train.micro_batch_size=2",
        "parallelism.activation_slots=2", NULL}},
      {"free placement: tasks on the CPU and the device",
       {"parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=4", "train.micro_batch_size=2",
        "parallelism.activation_slots=2", "runtime.placement=free", "runtime.scheduler=dmdas", NULL}},
      {"dp 2, free placement",
       {"parallelism.data_parallel_size=2", "parallelism.micro_batches=1", "train.micro_batch_size=4",
        "runtime.placement=free", "runtime.scheduler=dmdas", NULL}},
      {"one rank on both devices",
       {"parallelism.micro_batches=2", "train.micro_batch_size=4", "parallelism.activation_slots=2", NULL}},
  };
  int n = (int)(sizeof layouts / sizeof layouts[0]);
  for (int i = 0; i < n; i++) {
    const char *ov[12];
    int k = 0;
    ov[k++] = "runtime.workers=1";
    ov[k++] = DEVICE_KEY;
    for (int j = 0; layouts[i].kv[j]; j++) ov[k++] = layouts[i].kv[j];
    ov[k] = NULL;
    double loss[STEPS];
    counts c = {0};
    uint64_t bus = 0;
    /* strict: the device keeps its stage whatever the placement trial would choose on a loaded machine */
    int watch = strstr(layouts[i].name, "strict") != NULL;
    const char *auto_split = strstr(layouts[i].name, "auto") ? layouts[i].name : NULL;
    int rc = train(ov, loss, watch ? &c : NULL, &bus, &a, auto_split, &err);
    if (rc == ND_ENODEV) {
      skip("mixed node, %s: no " DEVICE " device (%s)", layouts[i].name, err.msg);
      if (watch) skip("mixed node: data crosses memory nodes (no " DEVICE " device)");
      continue;
    }
    if (!ok(rc == 0, "mixed node, %s: trains%s%s", layouts[i].name, rc ? ": " : "", rc ? err.msg : "")) continue;
    double worst = 0;
    for (int s = 0; s < STEPS; s++) worst = fmax(worst, fabs(loss[s] - ref[s]) / ref[s]);
    ok(worst < 1e-4, "mixed node, %s: losses of %d steps within %.2e relative of the CPU reference (need 1e-4)",
       layouts[i].name, STEPS, worst);
    if (strstr(layouts[i].name, "trials")) {
      ok(a.tuned_at == 0, "mixed node, %s: the tuning pass chooses the placement, then training starts at step 0",
         layouts[i].name);
      ok(a.trial.decided && a.trial.step == TUNING_STEPS && a.trial.all_ms > 0 && a.trial.cpu_ms > 0 &&
             a.trial.kept_devices == (a.trial.all_ms < a.trial.cpu_ms),
         "mixed node, %s: the choice is reported: step %lld, %.1f ms with all workers, %.1f on the CPU alone -> %s",
         layouts[i].name, a.trial.step, a.trial.all_ms, a.trial.cpu_ms, a.trial.kept_devices ? "all" : "CPU alone");
    }
    if (strstr(layouts[i].name, "strict") || strstr(layouts[i].name, "1f1b"))
      ok(!a.trial.decided, "mixed node, %s: no placement trial to report", layouts[i].name);
    if (watch)
      ok(c.device_tasks > 0 && c.cpu_tasks > 0 && c.device_attention > 0 && bus > 0,
         "mixed node, %s: %d tasks on the " DEVICE " device (%d of them attention), %d on the CPU, %llu bytes moved "
         "between memory nodes",
         layouts[i].name, c.device_tasks, c.device_attention, c.cpu_tasks, (unsigned long long)bus);
    if (watch)
      ok(c.forwarded > 0 && c.targets_forwarded == c.micro_batches,
         "mixed node, %s: %d outputs sent ahead to the other memory node when their producer ends, the last stage's "
         "targets among them (%d of %d micro-batches)",
         layouts[i].name, c.forwarded, c.targets_forwarded, c.micro_batches);
  }
  return done_testing();
}
