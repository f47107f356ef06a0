/* bench/mixed-node: one CPU worker beside one OpenCL device (PoCL on a
 * CPU-only machine), pipeline_parallel_size 2. Rows: the default
 * configuration (what a user gets without tuning: ndws, the default
 * placement, equal stages), fixed and dynamic schedules with each stage held
 * to its device (strict), stage_layers auto, StarPU's dmdas with free
 * placement, the CPU worker alone (the fastest device here), and the
 * default again: how far two runs of one configuration fall apart on this
 * machine, the noise every other row is read against. The rows run in turn,
 * ROUNDS times (interleaved, so that a noisy machine slows them alike; round
 * k starts at row k, so that no row always runs first); a row is the median
 * of its runs, each run the median of its steps after the trainer settles
 * (the calibration step, and where ranks land on both the CPU worker and the
 * device, the five steps of its placement trial).
 * The ideal adds both devices' throughputs: 1 / (1 / T_cpu + 1 / T_device),
 * T_device estimated as T_cpu times the device's time per layer over the
 * CPU's, both measured in the strict equal-stages ndws run.
 *
 *   bench/mixed-node [STEPS] [SLOTS] [MODEL] [ROUNDS]
 *   (defaults 3, 2, big: 8 layers, n_embd 256, 8 x 64 tokens, 8 micro-batches;
 *    small: 4 layers, n_embd 128, 4 x 64 tokens, 4 micro-batches; 3 rounds) */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/run.h"

static const struct {
  const char *label, *policy, *stages, *placement;
  int opencl;
  const char *models; /* ND_NDWS_MODELS: "0" without the steal check */
} rows[] = {{"default (ndws)", "ndws", "[]", "", 1, "steal"},
            {"ndws without models", "ndws", "[]", "", 1, "0"},
            {"auto stages, ndws", "ndws", "auto", "", 1, "steal"},
            {"equal stages, 1f1b", "1f1b", "[]", "strict", 1, "steal"},
            {"equal stages, 1f1b-split", "1f1b-split", "[]", "strict", 1, "steal"},
            {"equal stages, ndws", "ndws", "[]", "strict", 1, "steal"},
            {"auto stages, ndws", "ndws", "auto", "strict", 1, "steal"},
            {"equal stages, dmdas", "dmdas", "[]", "free", 1, "steal"},
            {"CPU worker alone", "ndws", "[]", "", 0, "steal"},
            {"default, again", "ndws", "[]", "", 1, "steal"}};
enum { N_ROWS = sizeof rows / sizeof rows[0], ROW_STRICT_NDWS = 5, ROW_CPU = 8 };

static int run(int i, int small, int slots, int steps, nd_bench_row *out) {
  char a[5][64];
  snprintf(a[0], sizeof a[0], "runtime.scheduler=%s", rows[i].policy);
  snprintf(a[1], sizeof a[1], "parallelism.stage_layers=%s", rows[i].stages);
  snprintf(a[2], sizeof a[2], "runtime.opencl_devices=%d", rows[i].opencl);
  snprintf(a[3], sizeof a[3], "parallelism.activation_slots=%d", slots);
  snprintf(a[4], sizeof a[4], "runtime.placement=%s", rows[i].placement[0] ? rows[i].placement : "affinity");
  const char *big[] = {"model.n_layer=8", "model.n_embd=256", "train.micro_batch_size=8", "parallelism.micro_batches=8",
                       NULL};
  const char *lite[] = {"model.n_layer=4", "model.n_embd=128", "train.micro_batch_size=4",
                        "parallelism.micro_batches=4", NULL};
  const char *const *model = small ? lite : big;
  const char *kv[] = {a[0],
                      a[1],
                      a[2],
                      a[3],
                      model[0],
                      model[1],
                      model[2],
                      model[3],
                      "model.n_head=4",
                      "model.seq_len=64",
                      "model.vocab_size=256",
                      "parallelism.pipeline_parallel_size=2",
                      "runtime.workers=1",
                      "train.eval_every=0",
                      "train.save_dir=",
                      "train.steps=100",
                      rows[i].placement[0] ? a[4] : NULL,
                      NULL};
  setenv("ND_NDWS_MODELS", rows[i].models, 1);
  if (nd_bench_run(kv, steps, out)) {
    fprintf(stderr, "bench/mixed-node: %s failed\n", rows[i].label);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  nd_blas_select_kernels(argv);
  const char *me = "bench/mixed-node";
  int steps = argc > 1 ? nd_bench_count(me, "STEPS", argv[1], 1, 1000) : 3;
  int slots = argc > 2 ? nd_bench_count(me, "SLOTS", argv[2], 1, 64) : 2;
  int rounds = argc > 4 ? nd_bench_count(me, "ROUNDS", argv[4], 1, ND_BENCH_MAX_ROUNDS) : 3;
  if (steps < 0 || slots < 0 || rounds < 0) return 2;
  if (argc > 3 && strcmp(argv[3], "small") && strcmp(argv[3], "big")) {
    fprintf(stderr, "%s: MODEL '%s': not big or small\n", me, argv[3]);
    return 2;
  }
  int small = argc > 3 && strcmp(argv[3], "small") == 0;
  nd_bench_row runs[N_ROWS][ND_BENCH_MAX_ROUNDS], r[N_ROWS];
  /* round k starts at row k: no row is always the first or the last of a round */
  for (int k = 0; k < rounds; k++)
    for (int j = 0; j < N_ROWS; j++) {
      int i = (j + k) % N_ROWS;
      if (run(i, small, slots, steps, &runs[i][k])) return 1;
    }
  nd_bench_paired pr[N_ROWS];
  for (int i = 1; i < N_ROWS; i++)
    pr[i] = nd_bench_pair(runs[0], runs[i], rounds, offsetof(nd_bench_row, step_ms)); /* before the medians */
  for (int i = 0; i < N_ROWS; i++) r[i] = nd_bench_median(runs[i], rounds);
  /* the device's time per layer over the CPU's, from the strict equal-stages run */
  const nd_bench_row *s = &r[ROW_STRICT_NDWS];
  int cpu = s->is_cpu[0] ? 0 : 1; /* the stage on the CPU worker: placement puts stage 0 there */
  double cpu_layer = (1 - s->bubble[cpu]) / s->stage_layers[0],
         dev_layer = (1 - s->bubble[1 - cpu]) / s->stage_layers[1];
  double t_cpu = r[ROW_CPU].step_ms, t_dev = t_cpu * dev_layer / cpu_layer, ideal = 1 / (1 / t_cpu + 1 / t_dev);
  printf("\n1 CPU worker + 1 OpenCL device, pp=2, %s, %d slots; each row: median of %d runs interleaved with the\n"
         "other rows (round k starting at row k), each run the median of %d steps after the calibration step and, "
         "without strict placement, the\n"
         "five steps that choose between the device and the CPU alone; ideal = 1 / (1 / T_cpu + 1 / T_device)\n"
         "= %.1f ms (T_cpu %.1f ms measured, T_device %.1f ms = T_cpu x %.2f, the device's time per layer over the "
         "CPU's)\n\n",
         small ? "4 layers, n_embd 128, 4 micro-batches of 4 x 64 tokens"
               : "8 layers, n_embd 256, 8 micro-batches of 8 x 64 tokens",
         slots, rounds, steps, ideal, t_cpu, t_dev, dev_layer / cpu_layer);
  printf("| configuration            | placement | stage_layers | step ms | / default | of ideal | bound ms | "
         "efficiency |\n");
  printf("|--------------------------|-----------|--------------|--------:|----------:|---------:|---------:|----------"
         "-:|\n");
  for (int i = 0; i < N_ROWS; i++) {
    char split[32];
    snprintf(split, sizeof split, "[%d, %d]", r[i].stage_layers[0], r[i].stage_layers[1]);
    printf("| %-24s | %-9s | %-12s | %7.1f | %9.3f | %8.3f | %8.1f | %10.3f |\n", rows[i].label,
           rows[i].placement[0] ? rows[i].placement : "default", split, r[i].step_ms, r[i].step_ms / r[0].step_ms,
           ideal / r[i].step_ms, r[i].bound_ms, r[i].bound_ms / r[i].step_ms);
  }
  if (rounds < 2) return 0;
  printf("\nThe default's step over each row's, paired by round (each round runs every row once, so that the\n"
         "machine's drift between rounds cancels): the median over the rounds, its 95%% confidence interval\n"
         "(bench/paired.h: a ratio whose interval holds 1 is not resolved by this run), the lowest and the\n"
         "highest, and in how many rounds the default was the faster\n\n");
  printf("| configuration            | placement | default / (paired) | 95%% interval | lowest | highest | default "
         "faster |\n");
  printf("|--------------------------|-----------|-------------------:|-------------:|-------:|--------:|--------------"
         "-:|\n");
  for (int i = 1; i < N_ROWS; i++) {
    char faster[24], interval[32];
    snprintf(faster, sizeof faster, "%d/%d", pr[i].faster, pr[i].rounds);
    printf("| %-24s | %-9s | %18.3f | %12s | %6.3f | %7.3f | %14s |\n", rows[i].label,
           rows[i].placement[0] ? rows[i].placement : "default", pr[i].median, nd_bench_interval(interval, &pr[i]),
           pr[i].lowest, pr[i].highest, faster);
  }
  return 0;
}
