/* The cluster simulator's pieces against their formulas (docs/planner.md,
 * "Clusters"): the shipped cluster files read as written, a GEMM's and a
 * memory-bound task's roofline cost, a ring all-reduce, the tensor-parallel
 * sum after a row-parallel product, and a compute-bound step that halves
 * when the peak doubles. The hostile files are tests/test_cluster.sh's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cluster.h"
#include "tests/tap.h"

static int near(double a, double b, double rel) { return fabs(a - b) <= rel * fabs(b); }

static nd_config *small_gpt(int tp, int pp) {
  char tps[64], pps[64];
  snprintf(tps, sizeof tps, "parallelism.tensor_parallel_size=%d", tp);
  snprintf(pps, sizeof pps, "parallelism.pipeline_parallel_size=%d", pp);
  const char *kv[] = {"model.n_layer=4", "model.n_head=4", "model.n_embd=256", "model.vocab_size=512",
                      "model.seq_len=128", "train.micro_batch_size=2", "parallelism.micro_batches=4",
                      "parallelism.data_parallel_size=2", tps, pps, "train.precision=bf16"};
  nd_config *cfg = NULL;
  nd_error err = {0};
  if (nd_config_new(&cfg)) return NULL;
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    if (nd_config_set_assignment(cfg, kv[i], &err)) {
      diag("%s: %s", kv[i], err.msg);
      nd_config_free(cfg);
      return NULL;
    }
  return cfg;
}

int main(void) {
  const char *src = getenv("ND_SRCDIR") ? getenv("ND_SRCDIR") : ".";
  char path[4096];
  snprintf(path, sizeof path, "%s/configs/clusters/dgx-a100.yaml", src);
  nd_cluster c;
  nd_error err = {0};
  int rc = nd_cluster_load(&c, path, &err);
  if (!ok(rc == 0, "dgx-a100.yaml reads")) diag("%s", err.msg);
  ok(c.nodes == 560 && c.gpus_per_node == 8 && !strcmp(c.gpu, "A100-SXM4-80GB"), "its nodes, GPUs a node and GPU name");
  ok(c.peak_bf16 == 312e12 && c.peak_tf32 == 156e12 && c.peak_fp32 == 19.5e12 && c.hbm_bps == 2039e9 &&
         c.hbm_bytes == 80LL << 30,
     "its data-sheet figures in FLOP/s, bytes/s and bytes");
  ok(c.intra_bps == 300e9 && c.inter_bps == 200e9 && near(c.inter_latency_s, 5e-6, 1e-12), "its links");
  snprintf(path, sizeof path, "%s/configs/clusters/dgx-h100.yaml", src);
  ok(nd_cluster_load(&c, path, &err) == 0 && c.peak_bf16 == 989.4e12, "dgx-h100.yaml reads");

  /* a hand-made cluster with round figures */
  nd_cluster k = {.nodes = 4, .gpus_per_node = 8, .peak_fp32 = 10e12, .peak_tf32 = 50e12, .peak_bf16 = 100e12,
                  .peak_fp16 = 100e12, .hbm_bps = 1e12, .hbm_bytes = 1LL << 36, .launch_s = 5e-6, .gemm_max = 0.8,
                  .gemm_half_flops = 1e9, .memory = 0.5, .vector = 0.25, .intra_bps = 200e9,
                  .intra_latency_s = 2e-6, .inter_bps = 100e9, .inter_latency_s = 4e-6};
  nd_graph g = {.C = 1024, .L = 2, .bf16 = 1};
  nd_task mm = {.kind = ND_TASK_MATMUL_FWD, .layer = 0, .flops = 2LL * 4096 * 1024 * 3072, .bytes = 40000000};
  mm.a.mm = (struct nd_mm_args){4096, 1024, 3072, 0, 0, 0};
  double want = 5e-6 + (mm.flops + 1e9) / (100e12 * 0.8);
  ok(near(nd_cluster_task_s(&k, &g, &mm, 1, k.peak_bf16), want, 1e-12),
     "a compute-bound GEMM: launch + (FLOPs + half) / (peak x gemm_max)");
  want = 5e-6 + (mm.flops / 4.0 + 1e9) / (100e12 * 0.8);
  ok(near(nd_cluster_task_s(&k, &g, &mm, 4, k.peak_bf16), want, 1e-12),
     "a column-parallel GEMM at tp 4: a quarter of the FLOPs, no sum after it");
  nd_task ew = {.kind = ND_TASK_ACT_FWD, .layer = 0, .flops = 8LL * 1000000, .bytes = 64000000};
  want = 5e-6 + 64e6 / (1e12 * 0.5);
  ok(near(nd_cluster_task_s(&k, &g, &ew, 1, k.peak_bf16), want, 1e-12),
     "a memory-bound kind: launch + bytes / (HBM x memory)");
  nd_task ln = {.kind = ND_TASK_LN_FWD, .layer = 0, .flops = 8LL * 4096 * 1024, .bytes = 64000000};
  ok(near(nd_cluster_task_s(&k, &g, &ln, 8, k.peak_bf16), want, 1e-12), "a LayerNorm is not split by tp 8");
  ok(near(nd_ring_allreduce_s(8, 1e9, 200e9, 2e-6), 2.0 * 7 / 8 * 1e9 / 200e9 + 14 * 2e-6, 1e-12),
     "ring all-reduce: 2 (n-1)/n bytes / bandwidth + 2 (n-1) latency");
  ok(nd_ring_allreduce_s(1, 1e9, 200e9, 2e-6) == 0, "a ring of one sums nothing");
  nd_task row = {.kind = ND_TASK_MATMUL_FWD, .layer = 1, .flops = 2LL * 4096 * 4096 * 1024, .bytes = 1};
  row.a.mm = (struct nd_mm_args){4096, 4096, 1024, 0, 0, 0};
  want = 5e-6 + (row.flops / 8.0 + 1e9) / (100e12 * 0.8) + 5e-6 +
         nd_ring_allreduce_s(8, 2.0 * 4096 * 1024, 200e9, 2e-6);
  ok(near(nd_cluster_task_s(&k, &g, &row, 8, k.peak_bf16), want, 1e-12),
     "a row-parallel GEMM at tp 8: an eighth of the FLOPs, then the group's all-reduce of its bf16 output on NVLink");

  /* compute-bound: no launch, no GEMM ramp, memory and links nearly free */
  nd_cluster fast = k;
  fast.launch_s = 0, fast.gemm_half_flops = 0, fast.hbm_bps = 1e18, fast.intra_bps = fast.inter_bps = 1e18;
  fast.intra_latency_s = fast.inter_latency_s = 0;
  nd_cluster twice = fast;
  twice.peak_fp32 *= 2, twice.peak_tf32 *= 2, twice.peak_bf16 *= 2, twice.peak_fp16 *= 2;
  for (int tp = 1; tp <= 2; tp++) {
    nd_config *cfg = small_gpt(tp, 2);
    nd_cluster_step a, b;
    if (!ok(cfg && nd_cluster_simulate(cfg, &fast, &a, &err) == 0 && nd_cluster_simulate(cfg, &twice, &b, &err) == 0,
            "tp %d pp 2 simulates", tp)) {
      diag("%s", err.msg);
      nd_config_free(cfg);
      continue;
    }
    ok(near(b.step_s, a.step_s / 2, 0.02), "tp %d: doubling the peak halves a compute-bound step (%.6f s, %.6f s)", tp,
       a.step_s, b.step_s);
    ok(a.gpus == 2 * tp * 2 && a.tokens_per_s > 0 && a.tflops_per_gpu > 0 && a.bubble > 0 && a.bubble < 1,
       "tp %d: %d GPUs, tokens/s, TFLOP/s per GPU and a bubble", tp, a.gpus);
    nd_config_free(cfg);
  }
  return done_testing();
}
