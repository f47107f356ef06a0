/* Every task kind with an OpenCL implementation, run through its codelet on
 * the OpenCL device and on the CPU worker, on random inputs of several
 * shapes: the written buffers agree within a relative tolerance
 * (||ocl - cpu|| / ||cpu||): 1e-5 for GEMM-free kernels, 2e-5 where sums of
 * many terms run in another order (GEMMs, attention, column sums), 1e-4 for
 * AdamW (sqrt and division of tiny moments). Skipped without an OpenCL device. */
#include <math.h>
#include <starpu.h>
#include <string.h>

#include "ndgraph/ndgraph.h"
#include "tasks/codelets.h"
#include "tests/tap.h"

#define MAXB 9

typedef struct kcase {
  const char *name;
  nd_task t;
  int n;
  int64_t numel[MAXB];
  int is_int[MAXB]; /* token ids in [0, range) */
  int range;
  uint8_t mode[MAXB]; /* ND_ACCESS_* */
  double tol;
} kcase;

static uint64_t rng = 88172645463325252ull;
static double uni(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

static void *make(const kcase *k, int b) {
  if (k->numel[b] == 1 && k->t.kind == ND_TASK_ADAMW && b == 4) {
    double *d = malloc(sizeof *d);
    *d = 4.0; /* a squared norm above grad_clip^2: clipping is exercised */
    return d;
  }
  if (k->is_int[b]) {
    int32_t *v = malloc((size_t)k->numel[b] * sizeof *v);
    for (int64_t i = 0; i < k->numel[b]; i++) v[i] = (int32_t)(uni() * k->range);
    return v;
  }
  float *v = malloc((size_t)k->numel[b] * sizeof *v);
  for (int64_t i = 0; i < k->numel[b]; i++) v[i] = (float)(uni() * 2 - 1);
  if (k->t.kind == ND_TASK_ADAMW && b == 2)
    for (int64_t i = 0; i < k->numel[b]; i++) v[i] = fabsf(v[i]) * 0.01f; /* second moments are >= 0 */
  if (k->t.kind == ND_TASK_CE_LSE && b == 1)
    for (int64_t i = 1; i < k->numel[b]; i += 3) v[i] = 1.0f + fabsf(v[i]) * 100.0f; /* a row's sum of exps is >= 1 */
  return v;
}

static size_t elem(const kcase *k, int b) { return k->t.kind == ND_TASK_ADAMW && b == 4 ? 8 : 4; }

static void run(const kcase *k, void **data, int worker, const nd_step *step) {
  starpu_data_handle_t h[MAXB];
  nd_task t = k->t;
  t.n_access = k->n; /* the CPU dispatch reads the buffers by access */
  nd__task_ctx ctx = {.task = &t, .step = step};
  struct starpu_task *task = starpu_task_create();
  task->cl = nd__codelet(k->t.kind);
  task->cl_arg = &ctx;
  task->nbuffers = k->n;
  task->execute_on_a_specific_worker = 1;
  task->workerid = (unsigned)worker;
  task->synchronous = 1;
  if (k->n > STARPU_NMAXBUFS) { /* gqa_bwd's 9; StarPU frees the arrays with the task */
    task->dyn_handles = malloc((size_t)k->n * sizeof *task->dyn_handles);
    task->dyn_modes = malloc((size_t)k->n * sizeof *task->dyn_modes);
    if (!task->dyn_handles || !task->dyn_modes) abort();
  }
  for (int b = 0; b < k->n; b++) {
    starpu_vector_data_register(&h[b], STARPU_MAIN_RAM, (uintptr_t)data[b], (uint32_t)k->numel[b], elem(k, b));
    STARPU_TASK_SET_HANDLE(task, h[b], b);
    STARPU_TASK_SET_MODE(task,
                         k->mode[b] == ND_ACCESS_R   ? STARPU_R
                         : k->mode[b] == ND_ACCESS_W ? STARPU_W
                                                     : STARPU_RW,
                         b);
  }
  if (starpu_task_submit(task)) nd__kernel_report(NULL, k->t.kind, ND_BACKEND_CPU, -1);
  for (int b = 0; b < k->n; b++) starpu_data_unregister(h[b]);
}

static double rel_err(const float *a, const float *ref, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
    den += (double)ref[i] * ref[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void check(const kcase *k, int cpu, int ocl, const nd_step *step) {
  void *a[MAXB], *b[MAXB];
  for (int i = 0; i < k->n; i++) {
    a[i] = make(k, i);
    b[i] = malloc((size_t)k->numel[i] * elem(k, i));
    memcpy(b[i], a[i], (size_t)k->numel[i] * elem(k, i));
  }
  nd_error err = {0};
  nd__kernel_failure(NULL, &err); /* clears any earlier failure */
  run(k, a, cpu, step);
  run(k, b, ocl, step);
  int failed = nd__kernel_failure(NULL, &err);
  double worst = 0;
  for (int i = 0; i < k->n; i++)
    if ((k->mode[i] & ND_ACCESS_W) && !k->is_int[i]) worst = fmax(worst, rel_err(b[i], a[i], k->numel[i]));
  ok(!failed && worst <= k->tol, "%s: OpenCL within %.2e of the CPU (tolerance %.0e)%s%s", k->name, worst, k->tol,
     failed ? ": " : "", failed ? err.msg : "");
  for (int i = 0; i < k->n; i++) free(a[i]), free(b[i]);
}

#define R  ND_ACCESS_R
#define W  ND_ACCESS_W
#define RW ND_ACCESS_RW

static int cases(kcase *out) {
  int n = 0;
  static char names[128][96];
  static const int mm[][3] = {{32, 48, 64}, {64, 128, 96}, {17, 33, 50}};
  for (int s = 0; s < 3; s++)
    for (int tw = 0; tw <= 1; tw++) {
      int M = mm[s][0], K = mm[s][1], N = mm[s][2], hb = !tw;
      kcase k = {.tol = 2e-5};
      k.t.a.mm = (struct nd_mm_args){M, K, N, tw, hb, (float)(s % 2)};
      snprintf(names[n], 96, "matmul_fwd %dx%dx%d%s", M, K, N, tw ? " trans_w" : " bias");
      k.name = names[n], k.t.kind = ND_TASK_MATMUL_FWD, k.n = 3 + hb;
      memcpy(k.numel, (int64_t[]){(int64_t)M * N, (int64_t)M * K, (int64_t)K * N, N}, sizeof(int64_t) * 4);
      memcpy(k.mode, (uint8_t[]){W, R, R, R}, 4);
      out[n++] = k;
      /* the IR's input gradients always overwrite (beta 0) */
      snprintf(names[n], 96, "matmul_bwd_input %dx%dx%d%s", M, K, N, tw ? " trans_w" : "");
      k.name = names[n], k.t.kind = ND_TASK_MATMUL_BWD_IN, k.n = 3, k.t.a.mm.beta = 0;
      memcpy(k.numel, (int64_t[]){(int64_t)M * K, (int64_t)M * N, (int64_t)K * N}, sizeof(int64_t) * 3);
      memcpy(k.mode, (uint8_t[]){W, R, R}, 3);
      out[n++] = k;
      k.t.a.mm.beta = (float)(s % 2);
      snprintf(names[n], 96, "matmul_bwd_weight %dx%dx%d%s beta %d", M, K, N, tw ? " trans_w" : " bias", s % 2);
      k.name = names[n], k.t.kind = ND_TASK_MATMUL_BWD_W, k.n = 3 + hb;
      if (hb)
        memcpy(k.numel, (int64_t[]){(int64_t)K * N, N, (int64_t)M * N, (int64_t)M * K}, sizeof(int64_t) * 4);
      else
        memcpy(k.numel, (int64_t[]){(int64_t)K * N, (int64_t)M * N, (int64_t)M * K}, sizeof(int64_t) * 3);
      memcpy(k.mode, (uint8_t[]){RW, hb ? RW : R, R, R}, 4);
      out[n++] = k;
    }
  static const int ln[][2] = {{16, 32}, {64, 128}, {7, 50}};
  for (int s = 0; s < 3; s++) {
    int N = ln[s][0], C = ln[s][1];
    kcase k = {.tol = 1e-5};
    k.t.a.ln = (struct nd_ln_args){N, C, s != 1, (float)(s % 2)};
    snprintf(names[n], 96, "layernorm_fwd %dx%d", N, C);
    k.name = names[n], k.t.kind = ND_TASK_LN_FWD, k.n = 6;
    memcpy(k.numel, (int64_t[]){(int64_t)N * C, N, N, (int64_t)N * C, C, C}, sizeof(int64_t) * 6);
    memcpy(k.mode, (uint8_t[]){W, W, W, R, R, R}, 6);
    out[n++] = k;
    snprintf(names[n], 96, "layernorm_bwd_input %dx%d%s", N, C, s != 1 ? " skip" : "");
    k.name = names[n], k.t.kind = ND_TASK_LN_BWD_IN, k.n = 6 + (s != 1);
    /* dinp, [dskip], dout, inp, weight, mean, rstd: the kind's row */
    if (s != 1)
      memcpy(k.numel, (int64_t[]){(int64_t)N * C, (int64_t)N * C, (int64_t)N * C, (int64_t)N * C, C, N, N},
             sizeof(int64_t) * 7);
    else
      memcpy(k.numel, (int64_t[]){(int64_t)N * C, (int64_t)N * C, (int64_t)N * C, C, N, N}, sizeof(int64_t) * 6);
    memcpy(k.mode, (uint8_t[]){W, R, R, R, R, R, R}, 7);
    out[n++] = k;
    snprintf(names[n], 96, "layernorm_bwd_weight %dx%d beta %d", N, C, s % 2);
    k.name = names[n], k.t.kind = ND_TASK_LN_BWD_W, k.n = 6, k.tol = 2e-5;
    memcpy(k.numel, (int64_t[]){C, C, (int64_t)N * C, (int64_t)N * C, N, N}, sizeof(int64_t) * 6);
    memcpy(k.mode, (uint8_t[]){RW, RW, R, R, R, R}, 6);
    out[n++] = k;
  }
  static const int at[][4] = {{2, 16, 2, 8}, {1, 64, 4, 16}, {3, 9, 3, 5}};
  for (int s = 0; s < 3; s++) {
    int B = at[s][0], T = at[s][1], NH = at[s][2], hs = at[s][3], C = NH * hs;
    kcase k = {.tol = 2e-5};
    k.t.a.attn = (struct nd_attn_args){B, T, NH, hs};
    snprintf(names[n], 96, "attention_fwd B %d T %d NH %d hs %d", B, T, NH, hs);
    k.name = names[n], k.t.kind = ND_TASK_ATTN_FWD, k.n = 3;
    memcpy(k.numel, (int64_t[]){(int64_t)B * T * C, (int64_t)B * NH * T, (int64_t)B * T * 3 * C}, sizeof(int64_t) * 3);
    memcpy(k.mode, (uint8_t[]){W, W, R}, 3);
    out[n++] = k;
    snprintf(names[n], 96, "attention_bwd B %d T %d NH %d hs %d", B, T, NH, hs);
    /* dqkv, dout, qkv, out, lse: any values, the backward is a function of them all */
    k.name = names[n], k.t.kind = ND_TASK_ATTN_BWD, k.n = 5;
    memcpy(k.numel,
           (int64_t[]){(int64_t)B * T * 3 * C, (int64_t)B * T * C, (int64_t)B * T * 3 * C, (int64_t)B * T * C,
                       (int64_t)B * NH * T},
           sizeof(int64_t) * 5);
    memcpy(k.mode, (uint8_t[]){W, R, R, R, R}, 5);
    out[n++] = k;
  }
  static const int64_t ew[] = {1, 1000, 65537};
  for (int s = 0; s < 3; s++) {
    int64_t m = ew[s];
    kcase k = {.tol = 1e-5};
    k.t.a.ew.n = m;
    snprintf(names[n], 96, "activation_fwd (gelu) n %lld", (long long)m);
    k.name = names[n], k.t.kind = ND_TASK_ACT_FWD, k.n = 2;
    memcpy(k.numel, (int64_t[]){m, m}, sizeof(int64_t) * 2);
    memcpy(k.mode, (uint8_t[]){W, R}, 2);
    out[n++] = k;
    snprintf(names[n], 96, "activation_bwd (gelu) n %lld", (long long)m);
    k.name = names[n], k.t.kind = ND_TASK_ACT_BWD, k.n = 3;
    memcpy(k.numel, (int64_t[]){m, m, m}, sizeof(int64_t) * 3);
    memcpy(k.mode, (uint8_t[]){W, R, R}, 3);
    out[n++] = k;
    snprintf(names[n], 96, "residual_fwd n %lld", (long long)m);
    k.name = names[n], k.t.kind = ND_TASK_RESIDUAL_FWD;
    out[n++] = k;
    snprintf(names[n], 96, "sendrecv n %lld", (long long)m);
    k.name = names[n], k.t.kind = ND_TASK_SENDRECV, k.n = 2;
    memcpy(k.mode, (uint8_t[]){R, W}, 2);
    out[n++] = k;
    k.t.a.coll = (struct nd_coll_args){.n = m, .nparts = 2 + s, .dtype = ND_F32};
    snprintf(names[n], 96, "allreduce (rank-ordered sum) %d parts of %lld", 2 + s, (long long)m);
    k.name = names[n], k.t.kind = ND_TASK_ALLREDUCE, k.n = 2 + s;
    for (int p = 0; p < k.n; p++) k.numel[p] = m, k.mode[p] = RW;
    out[n++] = k;
    k.t.a.adamw = (struct nd_adamw_args){.n = m, .decay = s != 1};
    snprintf(names[n], 96, "adamw n %lld%s", (long long)m, s != 1 ? " decay" : "");
    k.name = names[n], k.t.kind = ND_TASK_ADAMW, k.n = 5, k.tol = 1e-4;
    memcpy(k.numel, (int64_t[]){m, m, m, m, 1}, sizeof(int64_t) * 5);
    memcpy(k.mode, (uint8_t[]){RW, RW, RW, R, R}, 5);
    out[n++] = k;
  }
  static const int em[][5] = {{2, 8, 16, 0, 50}, {4, 16, 32, 100, 156}, {1, 5, 7, 3, 11}}; /* B T C v0 Vs */
  for (int s = 0; s < 3; s++) {
    int B = em[s][0], T = em[s][1], C = em[s][2], v0 = em[s][3], Vs = em[s][4], wpe = s != 1;
    kcase k = {.tol = 1e-5, .range = 256};
    k.t.a.emb = (struct nd_emb_args){.B = B, .T = T, .C = C, .v0 = v0, .Vs = Vs, .wpe = wpe, .beta = (float)(s % 2)};
    snprintf(names[n], 96, "embedding_fwd B %d T %d C %d shard [%d, %d)%s", B, T, C, v0, v0 + Vs, wpe ? " wpe" : "");
    k.name = names[n], k.t.kind = ND_TASK_EMBED_FWD, k.n = 3 + wpe;
    memcpy(k.numel, (int64_t[]){(int64_t)B * T * C, (int64_t)B * T, (int64_t)Vs * C, (int64_t)T * C},
           sizeof(int64_t) * 4);
    memcpy(k.is_int, (int[]){0, 1, 0, 0}, sizeof(int) * 4);
    memcpy(k.mode, (uint8_t[]){W, R, R, R}, 4);
    out[n++] = k;
    for (int table = 0; table <= 1; table++) {
      k.t.a.emb.wpe = table;
      snprintf(names[n], 96, "embedding_bwd %s B %d T %d C %d beta %d", table ? "wpe" : "wte shard", B, T, C, s % 2);
      k.name = names[n], k.t.kind = ND_TASK_EMBED_BWD, k.n = 3;
      memcpy(k.numel, (int64_t[]){table ? (int64_t)T * C : (int64_t)Vs * C, (int64_t)B * T * C, (int64_t)B * T},
             sizeof(int64_t) * 3);
      memcpy(k.is_int, (int[]){0, 0, 1, 0}, sizeof(int) * 4);
      memcpy(k.mode, (uint8_t[]){RW, R, R}, 3);
      out[n++] = k;
    }
  }
  static const int ce[][3] = {{16, 256, 0}, {33, 100, 50}, {64, 1000, 0}}; /* N Vs v0 */
  for (int s = 0; s < 3; s++) {
    int N = ce[s][0], Vs = ce[s][1], v0 = ce[s][2];
    kcase k = {.tol = 1e-5, .range = v0 + Vs + 20};
    k.t.a.ce = (struct nd_ce_args){N, Vs, v0, 1};
    snprintf(names[n], 96, "crossentropy_stats N %d shard [%d, %d)", N, v0, v0 + Vs);
    k.name = names[n], k.t.kind = ND_TASK_CE_STATS, k.n = 3;
    memcpy(k.numel, (int64_t[]){(int64_t)N * 3, (int64_t)N * Vs, N}, sizeof(int64_t) * 3);
    memcpy(k.is_int, (int[]){0, 0, 1}, sizeof(int) * 3);
    memcpy(k.mode, (uint8_t[]){W, R, R}, 3);
    out[n++] = k;
    snprintf(names[n], 96, "crossentropy_lse N %d (one shard)", N);
    k.name = names[n], k.t.kind = ND_TASK_CE_LSE, k.n = 2;
    memcpy(k.numel, (int64_t[]){N, (int64_t)N * 3}, sizeof(int64_t) * 2);
    memcpy(k.is_int, (int[]){0, 0, 0}, sizeof(int) * 3);
    memcpy(k.mode, (uint8_t[]){W, R}, 2);
    out[n++] = k;
    snprintf(names[n], 96, "crossentropy_bwd N %d shard [%d, %d)", N, v0, v0 + Vs);
    k.n = 3;
    memcpy(k.is_int, (int[]){0, 0, 1}, sizeof(int) * 3);
    k.name = names[n], k.t.kind = ND_TASK_CE_BWD;
    memcpy(k.numel, (int64_t[]){(int64_t)N * Vs, N, N}, sizeof(int64_t) * 3);
    memcpy(k.mode, (uint8_t[]){RW, R, R}, 3);
    out[n++] = k;
  }
  /* Llama's kinds */
  for (int s = 0; s < 3; s++) {
    int N = ln[s][0], C = ln[s][1];
    kcase k = {.tol = 1e-5};
    k.t.a.rms = (struct nd_rms_args){N, C, s != 1, (float)(s % 2), 1e-5f};
    snprintf(names[n], 96, "rmsnorm_fwd %dx%d", N, C);
    k.name = names[n], k.t.kind = ND_TASK_RMSNORM_FWD, k.n = 4;
    memcpy(k.numel, (int64_t[]){(int64_t)N * C, N, (int64_t)N * C, C}, sizeof(int64_t) * 4);
    memcpy(k.mode, (uint8_t[]){W, W, R, R}, 4);
    out[n++] = k;
    snprintf(names[n], 96, "rmsnorm_bwd_input %dx%d%s", N, C, s != 1 ? " skip" : "");
    k.name = names[n], k.t.kind = ND_TASK_RMSNORM_BWD_IN, k.n = 5 + (s != 1);
    /* dinp, [dskip], dout, inp, weight, rstd */
    if (s != 1)
      memcpy(k.numel, (int64_t[]){(int64_t)N * C, (int64_t)N * C, (int64_t)N * C, (int64_t)N * C, C, N},
             sizeof(int64_t) * 6);
    else
      memcpy(k.numel, (int64_t[]){(int64_t)N * C, (int64_t)N * C, (int64_t)N * C, C, N}, sizeof(int64_t) * 5);
    memcpy(k.mode, (uint8_t[]){W, R, R, R, R, R}, 6);
    out[n++] = k;
    snprintf(names[n], 96, "rmsnorm_bwd_weight %dx%d beta %d", N, C, s % 2);
    k.name = names[n], k.t.kind = ND_TASK_RMSNORM_BWD_W, k.n = 4, k.tol = 2e-5;
    memcpy(k.numel, (int64_t[]){C, (int64_t)N * C, (int64_t)N * C, N}, sizeof(int64_t) * 4);
    memcpy(k.mode, (uint8_t[]){RW, R, R, R}, 4);
    out[n++] = k;
  }
  static const int rp[][4] = {{2, 16, 2, 8}, {1, 64, 4, 16}, {3, 9, 3, 6}, {3, 9, 3, 6}};
  for (int s = 0; s < 4; s++) {
    int B = rp[s][0], T = rp[s][1], H = rp[s][2], hs = rp[s][3];
    int64_t m = (int64_t)B * T * H * hs;
    kcase k = {.tol = 1e-5};
    /* the last: Llama 3's scaling, pair 0 kept, 1 blended, 2 divided */
    k.t.a.rope = (struct nd_rope_args){m,
                                       B,
                                       T,
                                       H,
                                       hs,
                                       s == 3   ? (nd_rope){10000.0f, 4.0f, 0.1f, 2.0f, 16.0f}
                                       : s == 1 ? ND_ROPE_DEFAULT(500000.0f)
                                                : ND_ROPE_DEFAULT(10000.0f)};
    for (int bwd = 0; bwd <= 1; bwd++) {
      snprintf(names[n], 96, "rope_%s B %d T %d H %d hs %d%s", bwd ? "bwd" : "fwd", B, T, H, hs,
               s == 3 ? " llama3" : "");
      k.name = names[n], k.t.kind = bwd ? ND_TASK_ROPE_BWD : ND_TASK_ROPE_FWD, k.n = 2;
      memcpy(k.numel, (int64_t[]){m, m}, sizeof(int64_t) * 2);
      memcpy(k.mode, (uint8_t[]){W, R}, 2);
      out[n++] = k;
    }
  }
  for (int s = 0; s < 3; s++) {
    int64_t m = ew[s];
    kcase k = {.tol = 1e-5};
    k.t.a.ew.n = m;
    snprintf(names[n], 96, "swiglu_fwd n %lld", (long long)m);
    k.name = names[n], k.t.kind = ND_TASK_SWIGLU_FWD, k.n = 3;
    memcpy(k.numel, (int64_t[]){m, m, m}, sizeof(int64_t) * 3);
    memcpy(k.mode, (uint8_t[]){W, R, R}, 3);
    out[n++] = k;
    snprintf(names[n], 96, "swiglu_bwd n %lld", (long long)m);
    k.name = names[n], k.t.kind = ND_TASK_SWIGLU_BWD, k.n = 5;
    memcpy(k.numel, (int64_t[]){m, m, m, m, m}, sizeof(int64_t) * 5);
    memcpy(k.mode, (uint8_t[]){W, W, R, R, R}, 5);
    out[n++] = k;
  }
  static const int gq[][5] = {
      {2, 16, 4, 2, 8}, {1, 64, 4, 1, 16}, {3, 9, 6, 3, 5}, {2, 8, 2, 2, 4}}; /* B T NH NKV hs */
  for (int s = 0; s < 4; s++) {
    int B = gq[s][0], T = gq[s][1], NH = gq[s][2], NKV = gq[s][3], hs = gq[s][4];
    int64_t nq = (int64_t)B * T * NH * hs, nkv = (int64_t)B * T * NKV * hs, nl = (int64_t)B * NH * T;
    kcase k = {.tol = 2e-5};
    k.t.a.gqa = (struct nd_gqa_args){B, T, NH, hs, NKV};
    snprintf(names[n], 96, "gqa_fwd B %d T %d NH %d NKV %d hs %d", B, T, NH, NKV, hs);
    k.name = names[n], k.t.kind = ND_TASK_GQA_FWD, k.n = 5;
    memcpy(k.numel, (int64_t[]){nq, nl, nq, nkv, nkv}, sizeof(int64_t) * 5);
    memcpy(k.mode, (uint8_t[]){W, W, R, R, R}, 5);
    out[n++] = k;
    snprintf(names[n], 96, "gqa_bwd B %d T %d NH %d NKV %d hs %d", B, T, NH, NKV, hs);
    k.name = names[n], k.t.kind = ND_TASK_GQA_BWD, k.n = 9;
    memcpy(k.numel, (int64_t[]){nq, nkv, nkv, nq, nq, nkv, nkv, nq, nl}, sizeof(int64_t) * 9);
    memcpy(k.mode, (uint8_t[]){W, W, W, R, R, R, R, R, R}, 9);
    out[n++] = k;
  }
  return n;
}

int main(void) {
  static kcase all[128];
  int n = cases(all);
  nd_config *cfg;
  nd_error err = {0};
  if (nd_config_new(&cfg) || nd_config_set_assignment(cfg, "runtime.workers=1", &err) ||
      nd_config_set_assignment(cfg, "runtime.opencl_devices=1", &err)) {
    ok(0, "configuration: %s", err.msg);
    return done_testing();
  }
  int rc = nd_runtime_start(cfg, &err);
  nd_config_free(cfg);
  if (rc) {
    for (int i = 0; i < n; i++) skip("%s: no OpenCL device (%s)", all[i].name, err.msg);
    return done_testing();
  }
  int cpu = -1, ocl = -1;
  starpu_worker_get_ids_by_type(STARPU_CPU_WORKER, &cpu, 1);
  starpu_worker_get_ids_by_type(STARPU_OPENCL_WORKER, &ocl, 1);
  char ocl_name[128];
  starpu_worker_get_name(ocl, ocl_name, sizeof ocl_name);
  diag("CPU worker %d, OpenCL worker %d (%s)", cpu, ocl, ocl_name);
  nd_step step = {.loss_scale = 1.0f / 512,
                  .lr = 1e-2f,
                  .beta1 = 0.9f,
                  .beta2 = 0.95f,
                  .eps = 1e-8f,
                  .weight_decay = 0.1f,
                  .grad_clip = 1.0f,
                  .adam_t = 3};
  for (int i = 0; i < n; i++) check(&all[i], cpu, ocl, &step);
  nd_runtime_stop();
  return done_testing();
}
