/* The cluster simulator's pieces against their formulas (docs/clusters.md):
 * the shipped cluster files read as written, a GEMM's and a memory-bound
 * task's roofline cost, a ring all-reduce, the tensor-parallel sum after a
 * row-parallel product, the `software:` terms (unfused attention, hidden
 * dropout, fp16 gradients in the data-parallel all-reduce), context
 * parallelism's ring blocks on the links, and a
 * compute-bound step that halves when the peak doubles. The hostile files are
 * tests/test_cluster.sh's. */
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
  ok(c.intra_bps == 200e9 && c.inter_bps == 192e9 && near(c.inter_latency_s, 5e-6, 1e-12),
     "its links at nccl-tests' measured bus bandwidths");
  ok(!strcmp(c.attention, "fused") && c.dropout == 0 && c.grad_bytes == 0,
     "no software section: fused attention, no dropout, the graph's gradient bytes");
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

  /* Megatron-LM 2021's attention, unfused: each kernel its own roofline */
  nd_cluster u = k;
  snprintf(u.attention, sizeof u.attention, "unfused");
  u.dropout = 0.1;
  nd_task attn = {.kind = ND_TASK_ATTN_FWD, .layer = 0, .flops = 1, .bytes = 1};
  attn.a.attn = (struct nd_attn_args){2, 1024, 8, 64};
  double n = 2 * 8 / 2.0, e = n * 1024 * 1024, f = 2 * n * 1024 * 1024 * 64, io = 2 * 2 * n * 1024 * 64;
#define KERNEL(fl, by) (5e-6 + fmax((fl) > 0 ? ((fl) + 1e9) / (100e12 * 0.8) : 0, (by) / (1e12 * 0.5)))
  want = KERNEL(f, io + 2 * e) + KERNEL(0, 4 * e) + KERNEL(0, 5 * e) + KERNEL(f, 2 * e + io);
  ok(near(nd_cluster_task_s(&u, &g, &attn, 2, u.peak_bf16), want, 1e-12),
     "unfused attention forward at tp 2: Q K^T writing b a s^2 fp16 scores, softmax reading and writing them, "
     "dropout with its byte mask, P V");
  attn.kind = ND_TASK_ATTN_BWD;
  want = 4 * KERNEL(f, io + 2 * e) + KERNEL(0, 5 * e) + KERNEL(0, 6 * e);
  ok(near(nd_cluster_task_s(&u, &g, &attn, 2, u.peak_bf16), want, 1e-12),
     "unfused attention backward: four GEMMs, dropout's and softmax's backward");
  u.dropout = 0;
  want = 4 * KERNEL(f, io + 2 * e) + KERNEL(0, 6 * e);
  ok(near(nd_cluster_task_s(&u, &g, &attn, 2, u.peak_bf16), want, 1e-12), "without dropout, no dropout kernel");
  ok(near(nd_cluster_task_s(&k, &g, &attn, 2, k.peak_bf16), KERNEL(0.5, 0.5), 1e-12),
     "fused attention (the default): the graph's own FLOPs and bytes");
  /* hidden dropout: the mask beside each residual add, a kernel of its own in the backward */
  u.dropout = 0.1;
  nd_task res = {.kind = ND_TASK_RESIDUAL_FWD, .layer = 1, .flops = 0, .bytes = 12000000};
  res.a.ew.n = 1000000;
  ok(near(nd_cluster_task_s(&u, &g, &res, 8, u.peak_bf16), KERNEL(0, 12e6) + 1e6 / (1e12 * 0.5), 1e-12),
     "a block's residual add with dropout: the add plus its byte mask, every tp rank");
  nd_task lnb = {.kind = ND_TASK_LN_BWD_IN, .layer = 1, .flops = 0, .bytes = 12000000};
  lnb.a.ln = (struct nd_ln_args){1000, 1000, 0, 0};
  ok(near(nd_cluster_task_s(&u, &g, &lnb, 8, u.peak_bf16), 2 * KERNEL(0, 12e6) - 12e6 / (1e12 * 0.5) + 5e6 / (1e12 * 0.5),
          1e-12),
     "a block's LayerNorm input gradient with dropout: plus a kernel reading the gradient and mask, writing the gradient");
  lnb.layer = g.L; /* ln_f: no dropout before it */
  ok(near(nd_cluster_task_s(&u, &g, &lnb, 8, u.peak_bf16), KERNEL(0, 12e6), 1e-12), "ln_f's gradient: no dropout");
  /* context parallelism's ring blocks cross the links */
  nd_task rt = {.kind = ND_TASK_RING_ATTN_FWD, .layer = 0, .flops = 0, .bytes = 1000, .comm_bytes = 8000000};
  rt.a.ring = (struct nd_ring_args){.cp = 2};
  ok(near(nd_cluster_task_s(&k, &g, &rt, 2, k.peak_bf16), KERNEL(0, 500) + 2e-6 + 4e6 / 200e9, 1e-12),
     "a ring block at cp 2 x tp 2: its 1/tp of the keys and values over NVLink before it");
  rt.a.ring.cp = 8;
  ok(near(nd_cluster_task_s(&k, &g, &rt, 2, k.peak_bf16), KERNEL(0, 500) + 4e-6 + 4e6 / (100e9 / 8), 1e-12),
     "at cp 8 x tp 2 (16 GPUs, past a node): on the GPU's share of the NICs");
#undef KERNEL

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
    /* fp16 gradients in the data-parallel all-reduce: half the graph's f32 bytes */
    nd_cluster half = k;
    half.intra_latency_s = half.inter_latency_s = 0;
    nd_cluster_step f32, f16;
    half.grad_bytes = 0;
    int rc1 = nd_cluster_simulate(cfg, &half, &f32, &err);
    half.grad_bytes = 2;
    int rc2 = nd_cluster_simulate(cfg, &half, &f16, &err);
    ok(!rc1 && !rc2 && f32.dp_allreduce_s > 0 && near(f16.dp_allreduce_s, f32.dp_allreduce_s / 2, 1e-9),
       "tp %d: grad_allreduce_bytes 2 halves the data-parallel all-reduce of f32 gradients (%.6f s, %.6f s)", tp,
       f32.dp_allreduce_s, f16.dp_allreduce_s);
    nd_config_free(cfg);
  }
  return done_testing();
}
