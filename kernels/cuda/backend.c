/* The CUDA backend's ops table: the launchers of kernels/cuda/kernels.h
 * behind the descriptor interface (a descriptor's data is a device
 * pointer), on the calling StarPU CUDA worker's stream and cuBLAS handle.
 * Launches only: the codelets are STARPU_CUDA_ASYNC, StarPU waits on the
 * stream. The GPT-2 kernels passed tests/test_cuda_kernels on an H200; the
 * Llama kinds and train.precision bf16's tasks have not run on a GPU yet
 * (docs/cuda.md, *Status on real hardware*). */
#include <stdio.h>
#include <starpu.h>
#include <starpu_cublas_v2.h>

#include "kernels/backend.h"
#include "kernels/cuda/cuda.h"
#include "kernels/device.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/nccl.h"

#define F(i) ((float *)c->t[i].data)
#define I(i) ((const int32_t *)c->t[i].data)
#define S    (starpu_cuda_get_local_stream())
#define BLAS (starpu_cublas_get_local_handle())

/* train.precision bf16: the task's output is stored in bf16 (kernels/cuda/kernels.h, out_bf16) */
#define OUT_BF16 (c->t[0].dtype == ND_KERNEL_BF16)

/* train.precision bf16: the GEMM's inputs as bf16, a bf16 tensor as it is,
 * an fp32 one (an output gradient, the attention output, a bias) rounded into
 * stream-ordered scratch; then the bf16 GEMM. Untested on a GPU so far. */
static int matmul_bf16(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  const nd_kind_row *row = nd_kind(c->task->kind);
  const void *in[ND_KIND_MAX_BUFFERS] = {0};
  void *scratch[ND_KIND_MAX_BUFFERS] = {0};
  int rc = 0;
  for (int i = 0; i < c->n && i < row->n_buffers && !rc; i++) {
    in[i] = c->t[i].data;
    if (row->buf[i].role != ND_ROLE_IN || !in[i] || c->t[i].dtype == ND_KERNEL_BF16) continue;
    int64_t n = 1;
    for (int d = 0; d < c->t[i].ndim; d++) n *= c->t[i].shape[d];
    if (!(rc = (int)cudaMallocAsync(&scratch[i], (size_t)(n > 0 ? n : 1) * 2, S)))
      rc = nd_cuda_cast_bf16(S, scratch[i], c->t[i].data, n);
    in[i] = scratch[i];
  }
  if (!rc && c->task->kind == ND_TASK_MATMUL_FWD)
    rc = nd_cuda_matmul_forward_bf16(BLAS, S, F(0), in[1], in[2], in[3], m->M, m->K, m->N, m->trans_w);
  else if (!rc && c->task->kind == ND_TASK_MATMUL_BWD_IN)
    rc = nd_cuda_matmul_backward_input_bf16(BLAS, F(0), in[1], in[2], m->M, m->K, m->N, m->trans_w, m->beta);
  else if (!rc)
    rc = nd_cuda_matmul_backward_weight_bf16(BLAS, S, F(0), c->t[1].data ? F(1) : NULL, in[2], in[3], m->M, m->K,
                                             m->N, m->trans_w, m->beta);
  for (int i = 0; i < ND_KIND_MAX_BUFFERS; i++)
    if (scratch[i]) cudaFreeAsync(scratch[i], S);
  return rc;
}

static int matmul_fwd(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  if (c->task->bf16) return matmul_bf16(c);
  return nd_cuda_matmul_forward(BLAS, S, F(0), F(1), F(2), c->t[3].data ? F(3) : NULL, m->M, m->K, m->N, m->trans_w);
}

static int matmul_bwd_input(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  if (c->task->bf16) return matmul_bf16(c);
  return nd_cuda_matmul_backward_input(BLAS, F(0), F(1), F(2), m->M, m->K, m->N, m->trans_w, m->beta);
}

static int matmul_bwd_weight(const nd_kcall *c) {
  const struct nd_mm_args *m = &c->task->a.mm;
  if (c->task->bf16) return matmul_bf16(c);
  return nd_cuda_matmul_backward_weight(BLAS, S, F(0), c->t[1].data ? F(1) : NULL, F(2), F(3), m->M, m->K, m->N,
                                        m->trans_w, m->beta);
}

/* the weights' bf16 copies, once a step: kernels/cpu/bf16.c's rounding, bit for bit */
static int cast_bf16(const nd_kcall *c) { return nd_cuda_cast_bf16(S, c->t[0].data, F(1), c->task->a.ew.n); }

static int layernorm_fwd(const nd_kcall *c) {
  const struct nd_ln_args *l = &c->task->a.ln;
  return nd_cuda_layernorm_forward(S, c->t[0].data, OUT_BF16, F(1), F(2), F(3), F(4), F(5), l->N, l->C);
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
  // out (B, T, NH, hs), lse (B, NH, T), qkv (B, T, 3, NH, hs)
  return nd_cuda_attention_forward(S, F(0), F(1), F(2), a->B, a->T, a->NH, a->hs);
}

static int attention_bwd(const nd_kcall *c) {
  const struct nd_attn_args *a = &c->task->a.attn;
  // dqkv, dout, qkv, out, lse
  return nd_cuda_attention_backward(S, F(0), F(1), F(2), F(3), F(4), a->B, a->T, a->NH, a->hs);
}

static int rmsnorm_fwd(const nd_kcall *c) {
  const struct nd_rms_args *l = &c->task->a.rms;
  // out (N, C), rstd (N), inp (N, C), weight (C)
  return nd_cuda_rmsnorm_forward(S, c->t[0].data, OUT_BF16, F(1), F(2), F(3), l->N, l->C, l->eps);
}

static int rmsnorm_bwd_input(const nd_kcall *c) {
  const struct nd_rms_args *l = &c->task->a.rms;
  // dinp (N, C), dskip (N, C) or absent, dout, inp (N, C), weight (C), rstd (N)
  return nd_cuda_rmsnorm_backward_input(S, F(0), l->has_skip ? F(1) : NULL, F(2), F(3), F(4), F(5), l->N, l->C);
}

static int rmsnorm_bwd_weight(const nd_kcall *c) {
  const struct nd_rms_args *l = &c->task->a.rms;
  // dweight (C), dout (N, C), inp (N, C), rstd (N)
  return nd_cuda_rmsnorm_backward_weight(S, F(0), F(1), F(2), F(3), l->N, l->C, l->beta);
}

static int rope_fwd(const nd_kcall *c) {
  const struct nd_rope_args *r = &c->task->a.rope;
  return nd_cuda_rope_forward(S, F(0), F(1), r->B, r->T, r->H, r->hs, r->rope);
}

static int rope_bwd(const nd_kcall *c) {
  const struct nd_rope_args *r = &c->task->a.rope;
  return nd_cuda_rope_backward(S, F(0), F(1), r->B, r->T, r->H, r->hs, r->rope);
}

static int swiglu_fwd(const nd_kcall *c) {
  return nd_cuda_swiglu_forward(S, c->t[0].data, OUT_BF16, F(1), F(2), c->task->a.ew.n);
}

static int swiglu_bwd(const nd_kcall *c) {
  return nd_cuda_swiglu_backward(S, F(0), F(1), F(2), F(3), F(4), c->task->a.ew.n);
}

static int gqa_fwd(const nd_kcall *c) {
  const struct nd_gqa_args *a = &c->task->a.gqa;
  // out (B, T, NH, hs), lse (B, NH, T), q (B, T, NH, hs), k, v (B, T, NKV, hs)
  return nd_cuda_attention_gqa_forward(S, F(0), F(1), F(2), F(3), F(4), a->NH * a->hs, a->NKV * a->hs, a->B, a->T,
                                       a->NH, a->NKV, a->hs);
}

static int gqa_bwd(const nd_kcall *c) {
  const struct nd_gqa_args *a = &c->task->a.gqa;
  // dq, dk, dv, dout, q, k, v, out, lse
  return nd_cuda_attention_gqa_backward(S, F(0), F(1), F(2), F(3), F(4), F(5), F(6), F(7), F(8), a->NH * a->hs,
                                        a->NKV * a->hs, a->B, a->T, a->NH, a->NKV, a->hs);
}

static int gelu_fwd(const nd_kcall *c) {
  return nd_cuda_gelu_forward(S, c->t[0].data, OUT_BF16, F(1), c->task->a.ew.n);
}

static int gelu_bwd(const nd_kcall *c) { return nd_cuda_gelu_backward(S, F(0), F(1), F(2), c->task->a.ew.n); }

/* generation (graph/generate.c): GPT-2's packed qkv or Llama's q, k, v at the submission's position */
static int kv_attention(const nd_kcall *c) {
  const struct nd_cache_args *a = &c->task->a.cache;
  int packed = c->task->kind == ND_TASK_KV_ATTN, w = a->NH * a->hs;
  const float *q = F(3), *k = packed ? q + w : F(4), *v = packed ? q + 2 * w : F(5);
  if (c->step->pos < 0 || c->step->pos + a->T > a->positions) return 1;
  return nd_cuda_kv_attention(S, F(0), F(1), F(2), q, k, v, packed ? 3 * w : w, packed ? 3 * w : a->NKV * a->hs, a->T,
                              (int)c->step->pos, a->NH, a->NKV, a->hs, a->rotary ? &a->rope : NULL);
}

/* x += wpe's rows from the submission's position: the residual add's kernel */
static int position_add(const nd_kcall *c) {
  const struct nd_cache_args *a = &c->task->a.cache;
  if (c->step->pos < 0 || c->step->pos + a->T > a->positions) return 1;
  return nd_cuda_residual_forward(S, F(0), F(0), F(1) + (size_t)c->step->pos * a->hs, (int64_t)a->T * a->hs);
}

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

static int crossentropy_lse(const nd_kcall *c) { return nd_cuda_crossentropy_lse(S, F(0), F(1), c->task->a.ce.N); }

static int crossentropy_bwd(const nd_kcall *c) {
  const struct nd_ce_args *a = &c->task->a.ce;
  return nd_cuda_crossentropy_backward(S, F(0), F(0), F(1), I(2), a->N, a->Vs, a->v0, c->step->loss_scale);
}

/* the shared glue's primitives (kernels/device.h), on the worker's stream */
static int accumulate(void *out, void *x, int64_t n) { return nd_cuda_accumulate(S, out, x, n); }
static int copy(void *dst, void *src, size_t bytes) {
  return (int)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S);
}
static int read_back(void *host, void *src, size_t bytes) {
  int rc = (int)cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, S);
  return rc ? rc : (int)cudaStreamSynchronize(S);
}
static const nd_device_prims prims = {accumulate, copy, read_back};

/* participants on one GPU; those on different GPUs are one task each,
 * allreduce_part below (tasks/collective.c) */
static int allreduce(const nd_kcall *c) { return nd__device_allreduce(&prims, c); }
static int sendrecv(const nd_kcall *c) { return nd__device_sendrecv(&prims, c); }

static int grad_sumsq(const nd_kcall *c) {
  int rc = 0;
  for (int p = 1; p < c->n && !rc; p++) rc = nd_cuda_sumsq(S, (double *)c->t[0].data, F(p), c->t[p].shape[0], p > 1);
  return rc;
}

/* the clipping factor needs the norm on the host: one wait on the stream */
static int adamw(const nd_kcall *c) {
  const nd_step *s = c->step;
  float scale, wd;
  int rc = nd__device_adamw_factors(&prims, c, &scale, &wd);
  return rc ? rc
            : nd_cuda_adamw(S, F(0), F(1), F(2), F(3), c->task->a.adamw.n, s->lr, s->beta1, s->beta2, s->eps, wd, scale,
                            s->adam_t);
}

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
  int *rc = arg, r = nd_cuda_set_tf32(BLAS, rc[starpu_worker_get_id()] != 0);
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
  *device = nd__device_worker();
  return S;
}

static void configure(struct starpu_conf *conf, int n, long spare_cores) {
  (void)spare_cores;
  conf->ncuda = n;
}

/* the implementations only enqueue on the worker's stream: StarPU waits for it */
static void attach(struct starpu_codelet *cl, nd_worker_fn fn) {
  cl->cuda_funcs[0] = fn;
  cl->cuda_flags[0] = STARPU_CUDA_ASYNC;
}

static void *buffer_data(void *buffer) { return (void *)STARPU_VECTOR_GET_PTR(buffer); }

const nd_backend_ops nd__cuda_backend = {
    .device = ND_BACKEND_CUDA,
    .worker_type = STARPU_CUDA_WORKER,
    .present = nd_cuda_device_count,
    .configure = configure,
    .driver_takes_core = 1, /* StarPU's thread driving each device */
    .attach = attach,
    .buffer_data = buffer_data,
    .start = start,
    .stop = stop,
    .queue = queue,
    .supports = nd__device_supports, /* train.precision bf16's tasks included */
    .impl = {ND_DEVICE_IMPLS, [ND_TASK_GRAD_SUMSQ] = grad_sumsq, [ND_TASK_RMSNORM_FWD] = rmsnorm_fwd,
             [ND_TASK_RMSNORM_BWD_IN] = rmsnorm_bwd_input, [ND_TASK_RMSNORM_BWD_W] = rmsnorm_bwd_weight,
             [ND_TASK_ROPE_FWD] = rope_fwd, [ND_TASK_ROPE_BWD] = rope_bwd, [ND_TASK_SWIGLU_FWD] = swiglu_fwd,
             [ND_TASK_SWIGLU_BWD] = swiglu_bwd, [ND_TASK_GQA_FWD] = gqa_fwd, [ND_TASK_GQA_BWD] = gqa_bwd,
             [ND_TASK_KV_ATTN] = kv_attention, [ND_TASK_KV_GQA] = kv_attention, [ND_TASK_POS_ADD] = position_add,
             [ND_TASK_CAST_BF16] = cast_bf16},
    .declined = {ND_DEVICE_DECLINED, ND_RING_DECLINED},
    .set_tf32 = set_tf32,
    .comm_create = nd_cuda_comm_create,
    .allreduce_part = allreduce_part,
    .describe = describe,
    .check_call = nd_cuda_check_call,
};
