/* Vocabulary-parallel cross-entropy: per-shard statistics, their combination
 * (the log-sum-exp over the whole vocabulary, and the loss), the backward. */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "kernels/registry.h"
#include "tasks/codelets.h"

/* buffers: stats (N, 3), logits (N, Vs), targets (N) */
static void crossentropy_stats_cpu(void *buffers[], void *arg) {
  const struct nd_ce_args *a = &ND_CTX(arg)->task->a.ce;
  nd_crossentropy_stats(ND_F32(0), ND_F32(1), ND_I32(2), a->N, a->Vs, a->v0);
}
#ifdef ND_HAVE_OPENCL
static void crossentropy_stats_ocl(void *buffers[], void *arg) {
  const struct nd_ce_args *a = &ND_CTX(arg)->task->a.ce;
  cl_mem stats = ND_MEM(0), logits = ND_MEM(1), targets = ND_MEM(2);
  size_t n = (size_t)a->N;
  nd_ocl_arg args[] = {ND_OCL_ARG(stats), ND_OCL_ARG(logits), ND_OCL_ARG(targets), ND_OCL_ARG(a->Vs),
                       ND_OCL_ARG(a->v0)};
  ND_OCL_CHECK(ND_TASK_CE_STATS, nd_ocl_run(ND_OCL_ce_stats, 1, &n, 5, args));
}
#endif
ND_CODELET_OCL(crossentropy_stats, crossentropy_stats_cpu, crossentropy_stats_ocl);

/* buffers: lse (N) of each of the S shards, stats (N, 3) of each shard, loss (1, f64).
 * Only the rows of sequences below step->seq_limit count (an evaluation's tail). */
static void crossentropy_combine_cpu(void *buffers[], void *arg) {
  const nd__task_ctx *c = ND_CTX(arg);
  const nd_graph *g = c->graph;
  const nd_task *t = c->task;
  int S = t->a.ce.nshards, N = t->a.ce.N;
  const float **stats = malloc((size_t)S * sizeof *stats); /* S: the tensor-parallel size, up to 1024 */
  if (!stats) {
    nd__kernel_report(ND_TASK_CE_COMBINE, ND_ENOMEM);
    return;
  }
  for (int s = 0; s < S; s++) stats[s] = ND_F32(S + s);
  int64_t first = c->step->seq_base + (int64_t)(t->rank.dp * g->micro_batches + t->micro_batch) * g->B;
  int64_t valid = c->step->seq_limit - first;
  int rows = valid <= 0 ? 0 : valid >= g->B ? N : (int)valid * g->T;
  double sum = nd_crossentropy_combine(ND_F32(0), stats, S, rows);
  free(stats);
  for (int s = 1; s < S; s++) memcpy(ND_F32(s), ND_F32(0), (size_t)N * sizeof(float));
  double *loss = ND_F64(2 * S);
  const nd_access *acc = nd_task_access(g, t);
  double prev = acc[2 * S].mode & ND_ACCESS_R ? *loss : 0.0;
  *loss = prev + sum * c->step->loss_scale;
}
ND_CODELET(crossentropy_combine, crossentropy_combine_cpu);

/* buffers: logits (N, Vs) turned into dlogits in place, lse (N), targets (N) */
static void crossentropy_bwd_cpu(void *buffers[], void *arg) {
  const nd__task_ctx *c = ND_CTX(arg);
  const struct nd_ce_args *a = &c->task->a.ce;
  nd_crossentropy_backward(ND_F32(0), ND_F32(0), ND_F32(1), ND_I32(2), a->N, a->Vs, a->v0, c->step->loss_scale);
}
#ifdef ND_HAVE_OPENCL
static void crossentropy_bwd_ocl(void *buffers[], void *arg) {
  const nd__task_ctx *c = ND_CTX(arg);
  const struct nd_ce_args *a = &c->task->a.ce;
  cl_mem logits = ND_MEM(0), lse = ND_MEM(1), targets = ND_MEM(2);
  float scale = c->step->loss_scale;
  size_t g[] = {(size_t)a->N, (size_t)a->Vs};
  nd_ocl_arg args[] = {ND_OCL_ARG(logits), ND_OCL_ARG(lse), ND_OCL_ARG(targets), ND_OCL_ARG(a->v0), ND_OCL_ARG(scale)};
  ND_OCL_CHECK(ND_TASK_CE_BWD, nd_ocl_run(ND_OCL_ce_bwd, 2, g, 5, args));
}
#endif
ND_CODELET_OCL(crossentropy_bwd, crossentropy_bwd_cpu, crossentropy_bwd_ocl);
