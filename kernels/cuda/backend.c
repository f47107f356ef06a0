/* The CUDA backend's ops table: the launchers of kernels/cuda/kernels.h
 * behind the descriptor interface (a descriptor's data is a device
 * pointer), on the calling StarPU CUDA worker's stream and cuBLAS handle.
 * Launches only: the codelets are STARPU_CUDA_ASYNC, StarPU waits on the
 * stream. Untested on a GPU so far (docs/cuda.md). */
#include <math.h>
#include <stdio.h>
#include <starpu.h>
#include <starpu_cublas_v2.h>

#include "kernels/backend.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/nccl.h"

#define F(i) ((float *)c->t[i].data)
#define I(i) ((const int32_t *)c->t[i].data)
#define S    (starpu_cuda_get_local_stream())
#define H    (starpu_cublas_get_local_handle())

static int matmul_fwd(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  return nd_cuda_matmul_forward(H, S, F(0), F(1), F(2), c->t[3].data ? F(3) : NULL, m->M, m->K, m->N, m->trans_w);
}

static int matmul_bwd_input(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  return nd_cuda_matmul_backward_input(H, F(0), F(1), F(2), m->M, m->K, m->N, m->trans_w, m->beta);
}

static int matmul_bwd_weight(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  return nd_cuda_matmul_backward_weight(H, S, F(0), c->t[1].data ? F(1) : NULL, F(2), F(3), m->M, m->K, m->N,
                                        m->trans_w, m->beta);
}

static int layernorm_fwd(const nd_kcall *c) {
  const struct nd_ln_args *l = &c->task->a.ln;
  return nd_cuda_layernorm_forward(S, F(0), F(1), F(2), F(3), F(4), F(5), l->N, l->C);
}

static int layernorm_bwd_input(const nd_kcall *c) {
  const struct nd_ln_args *l = &c->task->a.ln;
  return nd_cuda_layernorm_backward_input(S, F(0), l->has_skip ? F(1) : NULL, F(2), F(3), F(4), F(5), F(6), l->N, l->C);
}

static int layernorm_bwd_weight(const nd_kcall *c) {
  const struct nd_ln_args *l = &c->task->a.ln;
  return nd_cuda_layernorm_backward_weight(S, F(0), F(1), F(2), F(3), F(4), F(5), l->N, l->C, l->beta);
}

static int attention_fwd(const nd_kcall *c) {
  const struct nd_attn_args *a = &c->task->a.attn;
  return nd_cuda_attention_forward(H, S, F(0), F(1), F(2), a->B, a->T, a->NH, a->hs);
}

static int attention_bwd(const nd_kcall *c) {
  const struct nd_attn_args *a = &c->task->a.attn;
  return nd_cuda_attention_backward(H, S, F(0), F(1), F(2), F(3), F(4), a->B, a->T, a->NH, a->hs);
}

static int gelu_fwd(const nd_kcall *c) { return nd_cuda_gelu_forward(S, F(0), F(1), c->task->a.ew.n); }

static int gelu_bwd(const nd_kcall *c) { return nd_cuda_gelu_backward(S, F(0), F(1), F(2), c->task->a.ew.n); }

static int residual_fwd(const nd_kcall *c) { return nd_cuda_residual_forward(S, F(0), F(1), F(2), c->task->a.ew.n); }

static int embedding_fwd(const nd_kcall *c) {
  const struct nd_emb_args *a = &c->task->a.emb;
  return nd_cuda_embedding_forward(S, F(0), I(1), F(2), a->wpe ? F(3) : NULL, a->B, a->T, a->C, a->v0, a->Vs);
}

/* one table per task: wte's shard, or wpe */
static int embedding_bwd(const nd_kcall *c) {
  const struct nd_emb_args *a = &c->task->a.emb;
  return nd_cuda_embedding_backward(S, a->wpe ? NULL : F(0), a->wpe ? F(0) : NULL, F(1), I(2), a->B, a->T, a->C, a->v0,
                                    a->Vs, a->beta);
}

static int crossentropy_stats(const nd_kcall *c) {
  const struct nd_ce_args *a = &c->task->a.ce;
  return nd_cuda_crossentropy_stats(S, F(0), F(1), I(2), a->N, a->Vs, a->v0);
}

static int crossentropy_bwd(const nd_kcall *c) {
  const struct nd_ce_args *a = &c->task->a.ce;
  return nd_cuda_crossentropy_backward(S, F(0), F(0), F(1), I(2), a->N, a->Vs, a->v0, c->step->loss_scale);
}

/* participants on one GPU: the CPU's rank-ordered sum, then copies; those on
 * different GPUs are one task each, allreduce_part below (tasks/collective.c) */
static int allreduce(const nd_kcall *c) {
  const struct nd_coll_args *a = &c->task->a.coll;
  int rc = 0;
  for (int p = 1; p < a->nparts && !rc; p++) rc = nd_cuda_accumulate(S, F(0), F(p), a->n);
  for (int p = 1; p < a->nparts && !rc; p++)
    rc = (int)cudaMemcpyAsync(F(p), F(0), (size_t)a->n * sizeof(float), cudaMemcpyDeviceToDevice, S);
  return rc;
}

static int sendrecv(const nd_kcall *c) {
  return (int)cudaMemcpyAsync(F(1), F(0), (size_t)c->task->a.ew.n * sizeof(float), cudaMemcpyDeviceToDevice, S);
}

static int grad_sumsq(const nd_kcall *c) {
  int rc = 0;
  for (int p = 1; p < c->n && !rc; p++) rc = nd_cuda_sumsq(S, (double *)c->t[0].data, F(p), c->t[p].shape[0], p > 1);
  return rc;
}

/* the clipping factor needs the norm on the host: one wait on the stream */
static int adamw(const nd_kcall *c) {
  const struct nd_adamw_args *a = &c->task->a.adamw;
  const nd_step *s = c->step;
  double normsq = 0;
  int rc = (int)cudaMemcpyAsync(&normsq, c->t[4].data, sizeof normsq, cudaMemcpyDeviceToHost, S);
  if (!rc) rc = (int)cudaStreamSynchronize(S);
  if (rc) return rc;
  return nd_cuda_adamw(S, F(0), F(1), F(2), F(3), a->n, s->lr, s->beta1, s->beta2, s->eps,
                       a->decay ? s->weight_decay : 0.0f, nd_clip_scale(sqrt(normsq), s->grad_clip), s->adam_t);
}

static int supports(const nd_task *t) { return t->kind != ND_TASK_ALLREDUCE || t->a.coll.dtype == ND_F32; }

static int start(nd_error *err) {
  (void)err;
  starpu_cublas_init(); /* a cuBLAS handle per CUDA worker, on its stream */
  return 0;
}

static void stop(void) {
  nd_cuda_comms_free();
  starpu_cublas_shutdown();
}

/* runs on each CUDA worker: its own cuBLAS handle */
static void handle_math(void *arg) {
  int *rc = arg, r = nd_cuda_set_tf32(H, rc[starpu_worker_get_id()] != 0);
  rc[starpu_worker_get_id()] = r ? -r : 0;
}

static int set_tf32(int on, nd_error *err) {
  int rc[STARPU_NMAXWORKERS];
  for (int w = 0; w < STARPU_NMAXWORKERS; w++) rc[w] = on;
  starpu_execute_on_each_worker(handle_math, rc, STARPU_CUDA);
  for (unsigned w = 0; w < starpu_worker_get_count(); w++)
    if (starpu_worker_get_type((int)w) == STARPU_CUDA_WORKER && rc[w] < 0)
      return nd__fail(err, ND_ERUNTIME, "runtime.tf32: cuBLAS refused the math mode on worker %u (status %d)", w,
                      -rc[w]);
  return 0;
}

static int allreduce_part(void *data, int64_t n, int f64, int comm, int rank) {
  return nd_cuda_allreduce_part(S, data, n, f64, comm, rank);
}

static int describe(int devid, char *out, size_t size) {
  struct cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, devid) != cudaSuccess) return -1;
  snprintf(out, size, "%s, %.1f GiB", p.name, (double)p.totalGlobalMem / (1 << 30));
  return 0;
}

static void *queue(int *device) {
  *device = starpu_worker_get_devid(starpu_worker_get_id());
  return starpu_cuda_get_local_stream();
}

const nd_backend_ops nd__cuda_backend = {
    .name = "cuda",
    .device = ND_BACKEND_CUDA,
    .start = start,
    .stop = stop,
    .queue = queue,
    .supports = supports,
    .impl = {[ND_TASK_MATMUL_FWD] = matmul_fwd,
             [ND_TASK_MATMUL_BWD_IN] = matmul_bwd_input,
             [ND_TASK_MATMUL_BWD_W] = matmul_bwd_weight,
             [ND_TASK_LN_FWD] = layernorm_fwd,
             [ND_TASK_LN_BWD_IN] = layernorm_bwd_input,
             [ND_TASK_LN_BWD_W] = layernorm_bwd_weight,
             [ND_TASK_ATTN_FWD] = attention_fwd,
             [ND_TASK_ATTN_BWD] = attention_bwd,
             [ND_TASK_ACT_FWD] = gelu_fwd,
             [ND_TASK_ACT_BWD] = gelu_bwd,
             [ND_TASK_RESIDUAL_FWD] = residual_fwd,
             [ND_TASK_EMBED_FWD] = embedding_fwd,
             [ND_TASK_EMBED_BWD] = embedding_bwd,
             [ND_TASK_CE_STATS] = crossentropy_stats,
             [ND_TASK_CE_BWD] = crossentropy_bwd,
             [ND_TASK_ALLREDUCE] = allreduce,
             [ND_TASK_SENDRECV] = sendrecv,
             [ND_TASK_GRAD_SUMSQ] = grad_sumsq,
             [ND_TASK_ADAMW] = adamw},
    .set_tf32 = set_tf32,
    .comm_create = nd_cuda_comm_create,
    .allreduce_part = allreduce_part,
    .describe = describe,
};
