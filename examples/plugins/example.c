/* An example ndgraph kernel plugin: the SiLU (swish) activation, and a
 * cache-blocked GEMM for the three linear-layer kernels. It needs only
 * <ndgraph/kernel.h>; see docs/kernels.md.
 *
 *   model.activation: silu
 *   kernels.plugins: [examples/plugins/libexample.so]
 *   kernels.override: {matmul_fwd: blocked, matmul_bwd_input: blocked, matmul_bwd_weight: blocked} */
#include <math.h>
#include <string.h>

#include <ndgraph/kernel.h>

/* ------------------------------------------------------------------ SiLU */

static int silu_forward(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *out = t[0].data;       // (n)
  const float *inp = t[1].data; // (n)
  for (int64_t i = 0; i < t[0].shape[0]; i++) out[i] = inp[i] / (1.0f + expf(-inp[i]));
  return 0;
}

static int silu_backward(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  float *dinp = t[0].data;                         // (n)
  const float *inp = t[1].data, *dout = t[2].data; // (n), (n)
  for (int64_t i = 0; i < t[0].shape[0]; i++) {
    float s = 1.0f / (1.0f + expf(-inp[i]));
    dinp[i] = s * (1.0f + inp[i] * (1.0f - s)) * dout[i];
  }
  return 0;
}

/* An exponential, a division and a multiply per element; the backward a few more. */
static void silu_forward_cost(const nd_tensor_desc *t, int n, const nd_kernel_args *a, int64_t *flops, int64_t *bytes) {
  (void)n, (void)a, (void)bytes;
  *flops = 4 * t[0].shape[0];
}
static void silu_backward_cost(const nd_tensor_desc *t, int n, const nd_kernel_args *a, int64_t *flops,
                               int64_t *bytes) {
  (void)n, (void)a, (void)bytes;
  *flops = 8 * t[0].shape[0];
}

/* ------------------------------------------------------------------ GEMM */

#define BK 64
#define BN 64

/* A strided matrix: element (i, j) at p[i * s0 + j * s1]. */
typedef struct mat {
  float *p;
  int64_t s0, s1;
} mat;

static mat of(const nd_tensor_desc *d) { return (mat){d->data, d->strides[0], d->strides[1]}; }
static mat transpose(mat m) { return (mat){m.p, m.s1, m.s0}; }

/* C (M, N) = beta * C + A (M, K) . B (K, N), one (BK, BN) panel of B at a time,
 * packed contiguous so that the inner loop streams through cache. */
static void gemm(mat C, mat A, mat B, int64_t M, int64_t K, int64_t N, float beta) {
  static _Thread_local float panel[BK * BN];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      float *c = &C.p[i * C.s0 + j * C.s1];
      *c = beta == 0.0f ? 0.0f : beta * *c;
    }
  for (int64_t k0 = 0; k0 < K; k0 += BK) {
    int64_t kb = K - k0 < BK ? K - k0 : BK;
    for (int64_t j0 = 0; j0 < N; j0 += BN) {
      int64_t nb = N - j0 < BN ? N - j0 : BN;
      for (int64_t k = 0; k < kb; k++)
        for (int64_t j = 0; j < nb; j++) panel[k * BN + j] = B.p[(k0 + k) * B.s0 + (j0 + j) * B.s1];
      for (int64_t i = 0; i < M; i++) {
        float acc[BN] = {0};
        for (int64_t k = 0; k < kb; k++) {
          float a = A.p[i * A.s0 + (k0 + k) * A.s1];
          const float *b = &panel[k * BN];
          for (int64_t j = 0; j < nb; j++) acc[j] += a * b[j];
        }
        for (int64_t j = 0; j < nb; j++) C.p[i * C.s0 + (j0 + j) * C.s1] += acc[j];
      }
    }
  }
}

/* out (M, N) = inp (M, K) . weight (K, N) + bias (N) */
static int matmul_fwd(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n, (void)a;
  int64_t M = t[1].shape[0], K = t[1].shape[1], N = t[0].shape[1];
  gemm(of(&t[0]), of(&t[1]), of(&t[2]), M, K, N, 0.0f);
  const float *bias = t[3].data;
  if (bias)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) ((float *)t[0].data)[i * N + j] += bias[j];
  return 0;
}

/* dinp (M, K) = beta * dinp + dout (M, N) . weight^T */
static int matmul_bwd_input(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  int64_t M = t[0].shape[0], K = t[0].shape[1], N = t[1].shape[1];
  gemm(of(&t[0]), of(&t[1]), transpose(of(&t[2])), M, N, K, a->beta);
  return 0;
}

/* dweight (K, N) = beta * dweight + inp^T . dout; dbias (N) = beta * dbias + column sums of dout */
static int matmul_bwd_weight(const nd_tensor_desc *t, int n, const nd_kernel_args *a) {
  (void)n;
  int64_t M = t[2].shape[0], N = t[2].shape[1], K = t[3].shape[1];
  gemm(of(&t[0]), transpose(of(&t[3])), of(&t[2]), K, M, N, a->beta);
  float *dbias = t[1].data;
  const float *dout = t[2].data;
  if (dbias) {
    for (int64_t j = 0; j < N; j++) dbias[j] = a->beta == 0.0f ? 0.0f : a->beta * dbias[j];
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) dbias[j] += dout[i * N + j];
  }
  return 0;
}

/* ------------------------------------------------------------ entry point */

int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version);
int ndgraph_plugin_init(nd_kernel_registry *reg, int abi_version) {
  if (abi_version != ND_KERNEL_ABI_VERSION) return ND_PLUGIN_EABI;
  nd_activation_def silu = {"silu", silu_forward, silu_backward, silu_forward_cost, silu_backward_cost, NULL};
  if (reg->add_activation(reg, &silu)) return -1;
  const nd_kernel_def gemms[] = {
      {"matmul_fwd", "blocked", ND_BACKEND_CPU, matmul_fwd, NULL, NULL},
      {"matmul_bwd_input", "blocked", ND_BACKEND_CPU, matmul_bwd_input, NULL, NULL},
      {"matmul_bwd_weight", "blocked", ND_BACKEND_CPU, matmul_bwd_weight, NULL, NULL},
  };
  for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; i++)
    if (reg->add_kernel(reg, &gemms[i])) return -1;
  return 0;
}
