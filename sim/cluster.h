/* A cluster that is not here: nodes of GPUs, each GPU's data-sheet peaks and
 * memory, a kernel-efficiency model, and the links inside and between nodes
 * (the file format is in docs/clusters.md). The simulator prices
 * each task on it by a roofline instead of a calibration's fit, and simulates
 * one data-parallel replica's pipeline of one tensor-parallel rank. */
#ifndef ND_SIM_CLUSTER_H
#define ND_SIM_CLUSTER_H

#include <stdint.h>

#include "common/error.h"
#include "configs/config.h"
#include "graph/ir.h"

typedef struct nd_cluster {
  char name[96], gpu[64];
  int nodes, gpus_per_node;
  /* data-sheet dense peaks, FLOP/s */
  double peak_fp32, peak_tf32, peak_bf16, peak_fp16;
  double hbm_bps;      /* bytes/s */
  int64_t hbm_bytes;   /* per GPU */
  double launch_s;     /* per task */
  /* a GEMM of f FLOPs runs at gemm_max * f / (f + gemm_half_flops) of the
   * peak; memory-bound work at `memory` of the HBM bandwidth; non-GEMM
   * arithmetic at `vector` of the fp32 peak */
  double gemm_max, gemm_half_flops, memory, vector;
  double intra_bps, intra_latency_s; /* per GPU and direction, inside a node */
  double inter_bps, inter_latency_s; /* per node and direction, all its NICs */
  /* What a run does that ndgraph's graph does not (the optional section
   * `software:`, each field optional, all off by default; docs/clusters.md):
   * Megatron-LM's 2021 runs, for a comparison with their published figures. */
  char attention[16]; /* "fused": ndgraph's attention kernels; "unfused": s x s scores in memory */
  double dropout;     /* > 0: the attention and hidden dropout passes */
  double grad_bytes;  /* bytes a gradient element takes in the data-parallel all-reduce; 0: the graph's */
} nd_cluster;

/* Reads a cluster file; a bad one is one line naming the file and the
 * problem (ND_ECONFIG). */
int nd_cluster_load(nd_cluster *c, const char *path, nd_error *err);

/* Seconds of one kernel of f FLOPs (tensor cores at gemm_peak when gemm,
 * else the vector rate) touching `bytes` of HBM: its launch plus the
 * roofline max(compute, bytes / (HBM x memory)). */
double nd_cluster_kernel_s(const nd_cluster *c, double flops, double bytes, int gemm, double gemm_peak);

/* Seconds of Megatron-LM's unfused attention (2021) over n heads of s
 * positions and head size d, elements of elt bytes: forward (backward 0)
 * Q K^T as a batched GEMM writing the s x s scores, the fused
 * scale-mask-softmax reading and writing them, dropout (c->dropout > 0:
 * probabilities and a byte mask) and the GEMM with V; backward (1) the two
 * GEMMs of the output gradient, the dropout's and the softmax's backward, and
 * the two GEMMs of the score gradient. Every kernel a roofline of its own,
 * the full s x s (no causal skip). */
double nd_cluster_unfused_attention_s(const nd_cluster *c, double n, double s, double d, double elt, int backward,
                                      double gemm_peak);
/* Seconds that hidden dropout adds to a pass over n elements of elt bytes
 * (Megatron's fused bias-dropout-add after the attention and the MLP):
 * forward, the byte mask it writes beside the residual add; backward (1), a
 * kernel of its own reading the gradient and the mask and writing the
 * gradient. 0 when c->dropout is 0. */
double nd_cluster_hidden_dropout_s(const nd_cluster *c, double n, double elt, int backward);

/* Seconds of a ring all-reduce of `bytes` over n ranks on links of bps
 * bytes/s and latency_s each: 2 (n - 1) / n * bytes / bps + 2 (n - 1) latency. */
double nd_ring_allreduce_s(int n, double bytes, double bps, double latency_s);

/* Seconds of task t of a graph built at tensor parallel 1 on one GPU of c,
 * as one rank of a tensor-parallel group of tp carries it: 1/tp of the work
 * of the kinds Megatron-style tensor parallelism splits, the roofline
 * max(FLOPs / (peak x efficiency), bytes / (HBM x memory)) plus the launch,
 * and after the products whose outputs the group sums, that all-reduce on
 * the node's links; GEMMs at gemm_peak FLOP/s. */
double nd_cluster_task_s(const nd_cluster *c, const nd_graph *g, const nd_task *t, int tp, double gemm_peak);
/* The tensor-core peak a GEMM of cfg's train.precision runs at (fp32: the fp32 peak). */
double nd_cluster_gemm_peak(const nd_cluster *c, const nd_config *cfg);

/* One step of cfg's layout on c, simulated (sim/cluster_step.c). */
typedef struct nd_cluster_step {
  double step_s;      /* the replica's pipeline plus the data-parallel all-reduce */
  double pipeline_s;  /* the replica's pipeline alone */
  double dp_allreduce_s;
  double bubble;
  double tokens_per_s;
  double model_flops; /* per step, every replica: the model's arithmetic, no recomputation */
  double tflops_per_gpu;
  int64_t gpu_bytes;  /* the fullest GPU's tensors */
  int gpus;
} nd_cluster_step;

/* Simulates cfg's layout (dp x cp x tp x pp GPUs of c); ND_ECONFIG with one
 * line when the layout does not fit the cluster. */
int nd_cluster_simulate(const nd_config *cfg, const nd_cluster *c, nd_cluster_step *out, nd_error *err);
/* The same from a cluster file: the simulated step time, for reports. */
int nd_cluster_step_seconds(const nd_config *cfg, const char *cluster_path, double *step_s, nd_error *err);

#endif
