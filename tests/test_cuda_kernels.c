/* Every CUDA kernel (kernels/cuda/kernels.h), GPT-2's and Llama's, against
 * the CPU kernel it must equal (kernels/cpu/kernels.h), on random inputs of
 * several shapes (the OpenCL test's shapes for Llama's kinds): the
 * outputs agree within a relative tolerance ||cuda - cpu|| / ||cpu||, as on
 * OpenCL: 1e-5 for GEMM-free kernels, 2e-5 where sums of many terms run in
 * another order (GEMMs, attention, column sums), 1e-4 for AdamW; with
 * runtime.tf32 the GEMMs are checked at 5e-3 (TF32 keeps 10 mantissa bits);
 * train.precision bf16's GEMMs at 2e-5 against the CPU's on the same
 * bf16-rounded inputs (products of bf16 values are exact in fp32); its cast
 * bit for bit against common/bf16.h (NaNs, infinities, overflow, ties); the
 * kernels that store bf16 (LayerNorm, RMSNorm, GeLU, SwiGLU) within bf16's
 * rounding of the fp64 value, and on the CPU backend's bits but for a few
 * elements one unit apart (an fp32 result on the other side of a rounding
 * boundary). Skipped, with the reason, where there is no CUDA device; what
 * the ops table runs is checked without one (implemented, bf16_on_gpu). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#include "common/bf16.h"
#include "graph/ir.h"
#include "graph/kinds.h"
#include "kernels/backend.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cuda/cuda.h"
#include "kernels/cuda/kernels.h"
#include "tests/tap.h"

static uint64_t rng = 88172645463325252ull;
static float uni(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
}

static float *host(int64_t n) {
  float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = uni();
  return v;
}

static void *dev(const void *h, size_t bytes) {
  void *d = NULL;
  if (cudaMalloc(&d, bytes ? bytes : 4) != cudaSuccess) return NULL;
  if (h) cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
  return d;
}

/* ||d - ref|| / ||ref|| of the device array d against the host ref */
static double rel(const float *d, const float *ref, int64_t n) {
  float *got = malloc((size_t)(n ? n : 1) * sizeof *got);
  cudaDeviceSynchronize();
  cudaMemcpy(got, d, (size_t)n * sizeof *got, cudaMemcpyDeviceToHost);
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) num += (double)(got[i] - ref[i]) * (got[i] - ref[i]), den += (double)ref[i] * ref[i];
  free(got);
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void check(const char *what, const float *d, const float *ref, int64_t n, double tol) {
  double r = rel(d, ref, n);
  ok(r <= tol, "%s: relative error %.2e (tolerance %.0e)", what, r, tol);
}

/* A bf16 output d (device, n) of a kernel that computes in fp32: within
 * bf16's rounding (half a unit, at most 2^-8 relative) of the fp64 value ref,
 * plus 1e-5 (1 + |ref|) for fp32's own error (truncating instead of rounding
 * errs by up to twice the bound); and equal to the CPU backend's store (cpu,
 * its fp32 output, rounded by common/bf16.h) but for at most 1% of the
 * elements, each one unit apart. */
static void check_bf16(const char *what, const void *d, const float *cpu, const double *ref, int64_t n) {
  nd_bf16 *got = malloc((size_t)(n ? n : 1) * sizeof *got);
  cudaDeviceSynchronize();
  cudaMemcpy(got, d, (size_t)n * sizeof *got, cudaMemcpyDeviceToHost);
  double worst = 0;
  int64_t differ = 0, far = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs(nd_bf16_to_f32(got[i]) - ref[i]) / (ldexp(fabs(ref[i]), -8) + 1e-5 * (1 + fabs(ref[i])));
    worst = e > worst ? e : worst;
    int units = abs((int)got[i] - (int)nd_bf16_from_f32(cpu[i]));
    differ += units != 0, far += units > 1;
  }
  free(got);
  ok(worst <= 1.0, "%s in bf16: within bf16's rounding of the fp64 value (worst %.2f of the bound)", what, worst);
  ok(far == 0 && differ * 100 <= n,
     "%s in bf16: the CPU's bits but for %lld of %lld elements, %lld of them more than one unit apart", what,
     (long long)differ, (long long)n, (long long)far);
}

/* train.precision bf16's cast: common/bf16.h's bits on the values whose
 * answer is known (tests/test_bf16) and on random bit patterns (every
 * exponent, NaNs among them) */
static void cast_bf16(int64_t n) {
  static const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0xbf818000u, 0x3f807fffu, 0x3f808001u, 0x00008000u,
                                     0x00018000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u,
                                     0xff800001u, 0x7f7f7fffu, 0x7f7f8000u, 0x7f7fffffu, 0xff7fffffu};
  const int64_t ns = (int64_t)(sizeof special / sizeof *special);
  uint32_t *bits = malloc((size_t)n * sizeof *bits);
  nd_bf16 *got = malloc((size_t)n * sizeof *got);
  for (int64_t i = 0; i < n; i++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    bits[i] = i < ns ? special[i] : (uint32_t)(rng >> 32);
  }
  float *gx = dev(bits, (size_t)n * 4);
  void *gy = dev(NULL, (size_t)n * 2);
  ok(nd_cuda_cast_bf16(0, gy, gx, n) == 0, "cast_bf16 (%lld) launches", (long long)n);
  cudaDeviceSynchronize();
  cudaMemcpy(got, gy, (size_t)n * 2, cudaMemcpyDeviceToHost);
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < n; i++) {
    float f;
    memcpy(&f, &bits[i], sizeof f);
    if (got[i] != nd_bf16_from_f32(f)) wrong++, first = first < 0 ? i : first;
  }
  ok(wrong == 0, "  common/bf16.h's bits on all %lld values (NaN, infinities, overflow, ties first): %lld differ",
     (long long)n, (long long)wrong);
  if (first >= 0) diag("the first: 0x%08x -> 0x%04x", bits[first], got[first]);
  free(bits), free(got), cudaFree(gx), cudaFree(gy);
}

static void matmul(cublasHandle_t h, int M, int K, int N, int trans_w, double tol) {
  char name[96];
  float *x = host((int64_t)M * K), *w = host((int64_t)K * N), *b = host(N), *y = host((int64_t)M * N);
  float *dy = host((int64_t)M * N), *dx = host((int64_t)M * K), *dw = host((int64_t)K * N), *db = host(N);
  float *gx = dev(x, (size_t)M * K * 4), *gw = dev(w, (size_t)K * N * 4), *gb = dev(b, (size_t)N * 4);
  float *gy = dev(NULL, (size_t)M * N * 4), *gdy = dev(dy, (size_t)M * N * 4), *gdx = dev(dx, (size_t)M * K * 4);
  float *gdw = dev(dw, (size_t)K * N * 4), *gdb = dev(db, (size_t)N * 4);
  snprintf(name, sizeof name, "matmul (%d, %d, %d)%s", M, K, N, trans_w ? " transposed" : "");
  nd_matmul_forward(y, x, w, b, M, K, N, trans_w);
  ok(nd_cuda_matmul_forward(h, 0, gy, gx, gw, gb, M, K, N, trans_w) == 0, "%s forward launches", name);
  check(name, gy, y, (int64_t)M * N, tol);
  nd_matmul_backward_input(dx, dy, w, M, K, N, trans_w, 1.0f);
  nd_cuda_matmul_backward_input(h, gdx, gdy, gw, M, K, N, trans_w, 1.0f);
  check("  backward input (beta 1)", gdx, dx, (int64_t)M * K, tol);
  nd_matmul_backward_weight(dw, db, dy, x, M, K, N, trans_w, 0.0f);
  nd_cuda_matmul_backward_weight(h, 0, gdw, gdb, gdy, gx, M, K, N, trans_w, 0.0f);
  check("  backward weight (beta 0)", gdw, dw, (int64_t)K * N, tol);
  check("  backward bias", gdb, db, N, 2e-5);
  float *all[] = {x, w, b, y, dy, dx, dw, db};
  float *gall[] = {gx, gw, gb, gy, gdy, gdx, gdw, gdb};
  for (int i = 0; i < 8; i++) free(all[i]), cudaFree(gall[i]);
}

/* train.precision bf16: the GEMMs on bf16 operands (cublasGemmEx, fp32
 * accumulation) against the CPU's fp32 GEMMs on the same rounded values */
static void matmul_bf16(cublasHandle_t h, int M, int K, int N, int trans_w) {
  char name[96];
  int64_t nx = (int64_t)M * K, nw = (int64_t)K * N, ny = (int64_t)M * N;
  float *x = host(nx), *w = host(nw), *b = host(N), *dy = host(ny);
  float *rx = nd_bf16_operand(x, 0, nx), *rw = nd_bf16_operand(w, 0, nw), *rb = nd_bf16_operand(b, 0, N);
  float *rdy = nd_bf16_operand(dy, 0, ny), *y = host(ny), *dx = host(nx), *dw = host(nw), *db = host(N);
  float *gx = dev(x, (size_t)nx * 4), *gw = dev(w, (size_t)nw * 4), *gb = dev(b, (size_t)N * 4);
  float *gdy = dev(dy, (size_t)ny * 4), *gy = dev(NULL, (size_t)ny * 4), *gdx = dev(NULL, (size_t)nx * 4);
  float *gdw = dev(NULL, (size_t)nw * 4), *gdb = dev(NULL, (size_t)N * 4);
  void *hx = dev(NULL, (size_t)nx * 2), *hw = dev(NULL, (size_t)nw * 2), *hb = dev(NULL, (size_t)N * 2);
  void *hdy = dev(NULL, (size_t)ny * 2);
  snprintf(name, sizeof name, "bf16 matmul (%d, %d, %d)%s", M, K, N, trans_w ? " transposed" : "");
  ok(nd_cuda_cast_bf16(0, hx, gx, nx) == 0 && nd_cuda_cast_bf16(0, hw, gw, nw) == 0 &&
         nd_cuda_cast_bf16(0, hb, gb, N) == 0 && nd_cuda_cast_bf16(0, hdy, gdy, ny) == 0,
     "%s: inputs rounded to bf16", name);
  nd_matmul_forward(y, rx, rw, rb, M, K, N, trans_w);
  ok(nd_cuda_matmul_forward_bf16(h, 0, gy, hx, hw, hb, M, K, N, trans_w) == 0, "%s forward launches", name);
  check(name, gy, y, ny, 2e-5);
  nd_matmul_backward_input(dx, rdy, rw, M, K, N, trans_w, 0.0f);
  nd_cuda_matmul_backward_input_bf16(h, gdx, hdy, hw, M, K, N, trans_w, 0.0f);
  check("  bf16 backward input", gdx, dx, nx, 2e-5);
  nd_matmul_backward_weight(dw, db, rdy, rx, M, K, N, trans_w, 0.0f);
  nd_cuda_matmul_backward_weight_bf16(h, 0, gdw, gdb, hdy, hx, M, K, N, trans_w, 0.0f);
  check("  bf16 backward weight", gdw, dw, nw, 2e-5);
  check("  bf16 backward bias", gdb, db, N, 2e-5);
  float *all[] = {x, w, b, dy, rx, rw, rb, rdy, y, dx, dw, db};
  void *gall[] = {gx, gw, gb, gdy, gy, gdx, gdw, gdb, hx, hw, hb, hdy};
  for (int i = 0; i < 12; i++) free(all[i]), cudaFree(gall[i]);
}

static void layernorm(int N, int C) {
  float *x = host((int64_t)N * C), *w = host(C), *b = host(C), *y = host((int64_t)N * C), *m = host(N), *r = host(N);
  float *dy = host((int64_t)N * C), *dx = host((int64_t)N * C), *skip = host((int64_t)N * C), *dw = host(C),
        *db = host(C);
  float *gx = dev(x, (size_t)N * C * 4), *gw = dev(w, (size_t)C * 4), *gb = dev(b, (size_t)C * 4);
  float *gy = dev(NULL, (size_t)N * C * 4), *gm = dev(NULL, (size_t)N * 4), *gr = dev(NULL, (size_t)N * 4);
  float *gdy = dev(dy, (size_t)N * C * 4), *gdx = dev(NULL, (size_t)N * C * 4), *gskip = dev(skip, (size_t)N * C * 4);
  float *gdw = dev(dw, (size_t)C * 4), *gdb = dev(db, (size_t)C * 4);
  nd_layernorm_forward(y, m, r, x, w, b, N, C);
  nd_cuda_layernorm_forward(0, gy, 0, gm, gr, gx, gw, gb, N, C);
  char name[64];
  snprintf(name, sizeof name, "layernorm (%d, %d) forward", N, C);
  check(name, gy, y, (int64_t)N * C, 1e-5);
  check("  mean", gm, m, N, 1e-5);
  check("  rstd", gr, r, N, 1e-5);
  nd_layernorm_backward_input(dx, skip, dy, x, w, m, r, N, C);
  nd_cuda_layernorm_backward_input(0, gdx, gskip, gdy, gx, gw, gm, gr, N, C);
  check("  backward input (with the skip gradient)", gdx, dx, (int64_t)N * C, 1e-5);
  nd_layernorm_backward_weight(dw, db, dy, x, m, r, N, C, 1.0f);
  nd_cuda_layernorm_backward_weight(0, gdw, gdb, gdy, gx, gm, gr, N, C, 1.0f);
  check("  backward weight (beta 1)", gdw, dw, C, 2e-5);
  check("  backward bias (beta 1)", gdb, db, C, 2e-5);
  float *all[] = {x, w, b, y, m, r, dy, dx, skip, dw, db};
  float *gall[] = {gx, gw, gb, gy, gm, gr, gdy, gdx, gskip, gdw, gdb};
  for (int i = 0; i < 11; i++) free(all[i]), cudaFree(gall[i]);
}

/* train.precision bf16's writers, output stored in bf16, statistics in fp32:
 * LayerNorm and RMSNorm on (N, C), GeLU and SwiGLU on N * C elements; each
 * against its fp64 value and the CPU kernel's output (check_bf16) */
static void bf16_writers(int N, int C) {
  int64_t n = (int64_t)N * C;
  float *x = host(n), *a = host(n), *w = host(C), *b = host(C), *y = host(n), *m = host(N), *r = host(N);
  double *ref = malloc((size_t)n * sizeof *ref);
  float *gx = dev(x, (size_t)n * 4), *ga = dev(a, (size_t)n * 4), *gw = dev(w, (size_t)C * 4);
  float *gb = dev(b, (size_t)C * 4), *gm = dev(NULL, (size_t)N * 4), *gr = dev(NULL, (size_t)N * 4);
  void *gy = dev(NULL, (size_t)n * 2);
  char name[64];
  for (int i = 0; i < N; i++) {
    const float *xi = x + (int64_t)i * C;
    double mean = 0, var = 0;
    for (int j = 0; j < C; j++) mean += xi[j];
    mean /= C;
    for (int j = 0; j < C; j++) var += (xi[j] - mean) * (xi[j] - mean);
    for (int j = 0; j < C; j++) ref[(int64_t)i * C + j] = (xi[j] - mean) / sqrt(var / C + 1e-5) * w[j] + b[j];
  }
  snprintf(name, sizeof name, "layernorm (%d, %d) forward", N, C);
  nd_layernorm_forward(y, m, r, x, w, b, N, C);
  ok(nd_cuda_layernorm_forward(0, gy, 1, gm, gr, gx, gw, gb, N, C) == 0, "%s launches with a bf16 output", name);
  check_bf16(name, gy, y, ref, n);
  check("  mean (fp32)", gm, m, N, 1e-5);
  check("  rstd (fp32)", gr, r, N, 1e-5);

  for (int i = 0; i < N; i++) {
    const float *xi = x + (int64_t)i * C;
    double ss = 0;
    for (int j = 0; j < C; j++) ss += (double)xi[j] * xi[j];
    for (int j = 0; j < C; j++) ref[(int64_t)i * C + j] = w[j] * (xi[j] / sqrt(ss / C + 1e-5));
  }
  snprintf(name, sizeof name, "rmsnorm (%d, %d) forward", N, C);
  nd_rmsnorm_forward(y, r, x, w, N, C, 1e-5f);
  ok(nd_cuda_rmsnorm_forward(0, gy, 1, gr, gx, gw, N, C, 1e-5f) == 0, "%s launches with a bf16 output", name);
  check_bf16(name, gy, y, ref, n);
  check("  rstd (fp32)", gr, r, N, 1e-5);

  for (int64_t i = 0; i < n; i++) {
    double v = x[i];
    ref[i] = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  }
  snprintf(name, sizeof name, "gelu forward (%lld)", (long long)n);
  nd_gelu_forward(y, x, n);
  ok(nd_cuda_gelu_forward(0, gy, 1, gx, n) == 0, "%s launches with a bf16 output", name);
  check_bf16(name, gy, y, ref, n);

  for (int64_t i = 0; i < n; i++) ref[i] = x[i] / (1 + exp(-(double)x[i])) * a[i];
  snprintf(name, sizeof name, "swiglu forward (%lld)", (long long)n);
  nd_swiglu_forward(y, x, a, n);
  ok(nd_cuda_swiglu_forward(0, gy, 1, gx, ga, n) == 0, "%s launches with a bf16 output", name);
  check_bf16(name, gy, y, ref, n);
  free(x), free(a), free(w), free(b), free(y), free(m), free(r), free(ref);
  cudaFree(gx), cudaFree(ga), cudaFree(gw), cudaFree(gb), cudaFree(gm), cudaFree(gr), cudaFree(gy);
}

static void attention(int B, int T, int NH, int hs) {
  int64_t C = (int64_t)NH * hs, nq = B * T * 3 * C, no = B * T * C, nl = (int64_t)B * NH * T;
  float *qkv = host(nq), *out = host(no), *lse = host(nl), *dout = host(no), *dqkv = host(nq);
  float *gq = dev(qkv, (size_t)nq * 4), *go = dev(NULL, (size_t)no * 4), *gl = dev(NULL, (size_t)nl * 4);
  float *gdo = dev(dout, (size_t)no * 4), *gdq = dev(NULL, (size_t)nq * 4);
  nd_attention_forward(out, lse, qkv, B, T, NH, hs);
  nd_cuda_attention_forward(0, go, gl, gq, B, T, NH, hs);
  char name[64];
  snprintf(name, sizeof name, "attention (B %d, T %d, %d heads of %d) forward", B, T, NH, hs);
  check(name, go, out, no, 2e-5);
  check("  log-sum-exp per row", gl, lse, nl, 2e-5);
  nd_attention_backward(dqkv, dout, qkv, out, lse, B, T, NH, hs);
  nd_cuda_attention_backward(0, gdq, gdo, gq, go, gl, B, T, NH, hs);
  check("  backward dqkv", gdq, dqkv, nq, 2e-5);
  float *all[] = {qkv, out, lse, dout, dqkv};
  float *gall[] = {gq, go, gl, gdo, gdq};
  for (int i = 0; i < 5; i++) free(all[i]), cudaFree(gall[i]);
}

static void rmsnorm(int N, int C, int with_skip, float beta) {
  float *x = host((int64_t)N * C), *w = host(C), *y = host((int64_t)N * C), *r = host(N), *dy = host((int64_t)N * C);
  float *dx = host((int64_t)N * C), *skip = host((int64_t)N * C), *dw = host(C);
  float *gx = dev(x, (size_t)N * C * 4), *gw = dev(w, (size_t)C * 4), *gy = dev(NULL, (size_t)N * C * 4);
  float *gr = dev(NULL, (size_t)N * 4), *gdy = dev(dy, (size_t)N * C * 4), *gdx = dev(NULL, (size_t)N * C * 4);
  float *gskip = dev(skip, (size_t)N * C * 4), *gdw = dev(dw, (size_t)C * 4);
  char name[64];
  snprintf(name, sizeof name, "rmsnorm (%d, %d) forward", N, C);
  nd_rmsnorm_forward(y, r, x, w, N, C, 1e-5f);
  nd_cuda_rmsnorm_forward(0, gy, 0, gr, gx, gw, N, C, 1e-5f);
  check(name, gy, y, (int64_t)N * C, 1e-5);
  check("  rstd", gr, r, N, 1e-5);
  nd_rmsnorm_backward_input(dx, with_skip ? skip : NULL, dy, x, w, r, N, C);
  nd_cuda_rmsnorm_backward_input(0, gdx, with_skip ? gskip : NULL, gdy, gx, gw, gr, N, C);
  check(with_skip ? "  backward input (with the skip gradient)" : "  backward input", gdx, dx, (int64_t)N * C, 1e-5);
  nd_rmsnorm_backward_weight(dw, dy, x, r, N, C, beta);
  nd_cuda_rmsnorm_backward_weight(0, gdw, gdy, gx, gr, N, C, beta);
  check(beta != 0.0f ? "  backward weight (beta 1)" : "  backward weight (beta 0)", gdw, dw, C, 2e-5);
  float *all[] = {x, w, y, r, dy, dx, skip, dw};
  float *gall[] = {gx, gw, gy, gr, gdy, gdx, gskip, gdw};
  for (int i = 0; i < 8; i++) free(all[i]), cudaFree(gall[i]);
}

static void rope(int B, int T, int H, int hs, nd_rope r) {
  int64_t n = (int64_t)B * T * H * hs;
  float *x = host(n), *y = host(n), *dx = host(n);
  float *gx = dev(x, (size_t)n * 4), *gy = dev(NULL, (size_t)n * 4);
  char name[96];
  snprintf(name, sizeof name, "rope (B %d, T %d, %d heads of %d, theta %g, llama3 factor %g) forward", B, T, H, hs,
           r.theta, r.factor);
  nd_rope_forward(y, x, B, T, H, hs, r), nd_cuda_rope_forward(0, gy, gx, B, T, H, hs, r);
  check(name, gy, y, n, 1e-5);
  nd_rope_backward(dx, x, B, T, H, hs, r), nd_cuda_rope_backward(0, gy, gx, B, T, H, hs, r);
  check("  backward", gy, dx, n, 1e-5);
  free(x), free(y), free(dx), cudaFree(gx), cudaFree(gy);
}

/* q (B, T, NH, hs), k and v (B, T, NKV, hs) as the Llama task kinds pass them
 * (separate tensors); the gradients start as garbage: the kernels overwrite */
static void gqa(int B, int T, int NH, int NKV, int hs) {
  int64_t nq = (int64_t)B * T * NH * hs, nkv = (int64_t)B * T * NKV * hs, nl = (int64_t)B * NH * T;
  int qs = NH * hs, kvs = NKV * hs;
  float *q = host(nq), *k = host(nkv), *v = host(nkv), *out = host(nq), *lse = host(nl), *dout = host(nq);
  float *dq = host(nq), *dk = host(nkv), *dv = host(nkv);
  float *gq = dev(q, (size_t)nq * 4), *gk = dev(k, (size_t)nkv * 4), *gv = dev(v, (size_t)nkv * 4);
  float *go = dev(NULL, (size_t)nq * 4), *gl = dev(NULL, (size_t)nl * 4), *gdo = dev(dout, (size_t)nq * 4);
  float *gdq = dev(dq, (size_t)nq * 4), *gdk = dev(dk, (size_t)nkv * 4), *gdv = dev(dv, (size_t)nkv * 4);
  char name[96];
  snprintf(name, sizeof name, "gqa attention (B %d, T %d, %d query heads, %d kv heads of %d) forward", B, T, NH, NKV,
           hs);
  nd_attention_gqa_forward(out, lse, q, k, v, qs, kvs, B, T, NH, NKV, hs);
  ok(nd_cuda_attention_gqa_forward(0, go, gl, gq, gk, gv, qs, kvs, B, T, NH, NKV, hs) == 0, "%s launches", name);
  check(name, go, out, nq, 2e-5);
  check("  log-sum-exp per row", gl, lse, nl, 2e-5);
  nd_attention_gqa_backward(dq, dk, dv, dout, q, k, v, out, lse, qs, kvs, B, T, NH, NKV, hs);
  ok(nd_cuda_attention_gqa_backward(0, gdq, gdk, gdv, gdo, gq, gk, gv, go, gl, qs, kvs, B, T, NH, NKV, hs) == 0,
     "  backward launches");
  check("  backward dq", gdq, dq, nq, 2e-5);
  check("  backward dk (the group's heads summed)", gdk, dk, nkv, 2e-5);
  check("  backward dv (the group's heads summed)", gdv, dv, nkv, 2e-5);
  float *all[] = {q, k, v, out, lse, dout, dq, dk, dv};
  float *gall[] = {gq, gk, gv, go, gl, gdo, gdq, gdk, gdv};
  for (int i = 0; i < 9; i++) free(all[i]), cudaFree(gall[i]);
}

static void elementwise(int64_t n) {
  float *x = host(n), *y = host(n), *dy = host(n), *dx = host(n), *a = host(n), *p = host(n), *m = host(n),
        *v = host(n), *g = host(n);
  for (int64_t i = 0; i < n; i++) v[i] = fabsf(v[i]) * 0.01f;
  float *gx = dev(x, (size_t)n * 4), *gy = dev(NULL, (size_t)n * 4), *gdy = dev(dy, (size_t)n * 4);
  float *gdx = dev(NULL, (size_t)n * 4), *ga = dev(a, (size_t)n * 4), *gp = dev(p, (size_t)n * 4);
  float *gm = dev(m, (size_t)n * 4), *gv = dev(v, (size_t)n * 4), *gg = dev(g, (size_t)n * 4);
  char name[64];
  snprintf(name, sizeof name, "gelu forward (%lld)", (long long)n);
  nd_gelu_forward(y, x, n), nd_cuda_gelu_forward(0, gy, 0, gx, n);
  check(name, gy, y, n, 1e-5);
  nd_gelu_backward(dx, x, dy, n), nd_cuda_gelu_backward(0, gdx, gx, gdy, n);
  check("  gelu backward", gdx, dx, n, 1e-5);
  nd_swiglu_forward(y, x, a, n), nd_cuda_swiglu_forward(0, gy, 0, gx, ga, n);
  check("  swiglu forward", gy, y, n, 1e-5);
  nd_swiglu_backward(dx, y, x, a, dy, n), nd_cuda_swiglu_backward(0, gdx, gy, gx, ga, gdy, n);
  check("  swiglu backward, gate", gdx, dx, n, 1e-5);
  check("  swiglu backward, up", gy, y, n, 1e-5);
  nd_residual_forward(y, x, a, n), nd_cuda_residual_forward(0, gy, gx, ga, n);
  check("  residual", gy, y, n, 1e-5);
  const float *parts[] = {y, dy};
  nd_sum_ordered(dx, parts, 2, n), nd_cuda_accumulate(0, gy, gdy, n);
  check("  ordered sum of two parts", gy, dx, n, 0.0);
  nd_adamw(p, m, v, g, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3);
  nd_cuda_adamw(0, gp, gm, gv, gg, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3);
  check("  adamw parameters", gp, p, n, 1e-4);
  check("  adamw first moments", gm, m, n, 1e-4);
  double *gs = dev(NULL, sizeof(double)), s = 0, ref = nd_sumsq(x, n);
  nd_cuda_sumsq(0, gs, gx, n, 0);
  cudaMemcpy(&s, gs, sizeof s, cudaMemcpyDeviceToHost);
  ok(fabs(s - ref) <= 1e-9 * (ref > 1 ? ref : 1), "  sum of squares %.9g (CPU %.9g)", s, ref);
  cudaFree(gs);
  float *all[] = {x, y, dy, dx, a, p, m, v, g};
  float *gall[] = {gx, gy, gdy, gdx, ga, gp, gm, gv, gg};
  for (int i = 0; i < 9; i++) free(all[i]), cudaFree(gall[i]);
}

static void embedding_ce(int B, int T, int C, int V, int v0, int Vs) {
  int N = B * T;
  int32_t *tok = malloc((size_t)N * sizeof *tok);
  for (int i = 0; i < N; i++) tok[i] = (int32_t)((uni() + 1) / 2 * V) % V;
  float *wte = host((int64_t)Vs * C), *wpe = host((int64_t)T * C), *out = host((int64_t)N * C);
  float *dwte = host((int64_t)Vs * C), *dwpe = host((int64_t)T * C), *logits = host((int64_t)N * Vs);
  float *stats = host(3 * N), *dl = host((int64_t)N * Vs), *lse = host(N);
  int32_t *gt = dev(tok, (size_t)N * 4);
  float *gwte = dev(wte, (size_t)Vs * C * 4), *gwpe = dev(wpe, (size_t)T * C * 4);
  float *gout = dev(NULL, (size_t)N * C * 4), *gdwte = dev(dwte, (size_t)Vs * C * 4);
  float *gdwpe = dev(dwpe, (size_t)T * C * 4), *gl = dev(logits, (size_t)N * Vs * 4);
  float *gst = dev(NULL, (size_t)3 * N * 4), *gdl = dev(NULL, (size_t)N * Vs * 4), *glse = NULL;
  char name[96];
  snprintf(name, sizeof name, "embedding (B %d, T %d, C %d, shard %d+%d of %d) forward", B, T, C, v0, Vs, V);
  nd_embedding_forward(out, tok, wte, wpe, B, T, C, v0, Vs);
  nd_cuda_embedding_forward(0, gout, gt, gwte, gwpe, B, T, C, v0, Vs);
  check(name, gout, out, (int64_t)N * C, 1e-5);
  nd_embedding_backward(dwte, dwpe, out, tok, B, T, C, v0, Vs, 1.0f);
  nd_cuda_embedding_backward(0, gdwte, gdwpe, gout, gt, B, T, C, v0, Vs, 1.0f);
  check("  backward wte (same order: equal)", gdwte, dwte, (int64_t)Vs * C, 0.0);
  check("  backward wpe (same order: equal)", gdwpe, dwpe, (int64_t)T * C, 0.0);
  nd_crossentropy_stats(stats, logits, tok, N, Vs, v0);
  nd_cuda_crossentropy_stats(0, gst, gl, gt, N, Vs, v0);
  check("  cross-entropy statistics", gst, stats, 3 * N, 1e-5);
  const float *shards[] = {stats};
  nd_crossentropy_lse(lse, shards, 1, N);
  glse = dev(NULL, (size_t)N * 4);
  nd_cuda_crossentropy_lse(0, glse, gst, N);
  check("  cross-entropy log-sum-exp", glse, lse, N, 1e-5);
  nd_crossentropy_backward(dl, logits, lse, tok, N, Vs, v0, 1.0f / N);
  nd_cuda_crossentropy_backward(0, gdl, gl, glse, gt, N, Vs, v0, 1.0f / N);
  check("  cross-entropy backward", gdl, dl, (int64_t)N * Vs, 1e-5);
  float *all[] = {wte, wpe, out, dwte, dwpe, logits, stats, dl, lse};
  float *gall[] = {gwte, gwpe, gout, gdwte, gdwpe, gl, gst, gdl, glse};
  for (int i = 0; i < 9; i++) free(all[i]), cudaFree(gall[i]);
  free(tok), cudaFree(gt);
}

/* Without a GPU too: the CUDA backend's table gives a CUDA implementation to
 * Llama's kinds and to every kind the OpenCL backend runs (when built), so
 * no task of either model falls back to a CPU worker on a GPU node. */
static void implemented(void) {
  static const enum nd_task_kind llama[] = {ND_TASK_RMSNORM_FWD, ND_TASK_RMSNORM_BWD_IN, ND_TASK_RMSNORM_BWD_W,
                                            ND_TASK_ROPE_FWD,    ND_TASK_ROPE_BWD,       ND_TASK_SWIGLU_FWD,
                                            ND_TASK_SWIGLU_BWD,  ND_TASK_GQA_FWD,        ND_TASK_GQA_BWD};
  const nd_backend_ops *cuda = nd__backend(ND_BACKEND_CUDA), *ocl = nd__backend(ND_BACKEND_OPENCL);
  char missing[512] = "";
  for (size_t i = 0; i < sizeof llama / sizeof *llama; i++)
    if (!cuda->impl[llama[i]] && !cuda->kernel[llama[i]])
      snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", nd_kind(llama[i])->name);
  ok(!missing[0], "the CUDA backend implements Llama's kinds%s%s", missing[0] ? ": missing" : "", missing);
  missing[0] = 0;
  for (int k = 0; ocl && k < ND_TASK_KIND_COUNT; k++)
    if ((ocl->impl[k] || ocl->kernel[k]) && !cuda->impl[k] && !cuda->kernel[k])
      snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", nd_kind((enum nd_task_kind)k)->name);
  ok(!missing[0], "the CUDA backend implements every kind the OpenCL backend does%s%s%s",
     ocl ? "" : " (no OpenCL backend in this build)", missing[0] ? ": missing" : "", missing);
}

/* Without a GPU too: under train.precision bf16 every task of GPT-2's and
 * Llama's step that reads or writes bf16 (the GEMMs, the weights' casts, the
 * norms', GeLU's and SwiGLU's stores) runs on a CUDA worker, so none goes to
 * the CPU workers and back every step. */
static void bf16_on_gpu(const char *arch) {
  const nd_backend_ops *cuda = nd__backend(ND_BACKEND_CUDA);
  const char *kv[] = {arch,
                      "train.precision=bf16",
                      "model.n_layer=2",
                      "model.n_head=4",
                      "model.n_kv_head=2",
                      "model.n_embd=64",
                      "model.vocab_size=256",
                      "model.seq_len=32"};
  nd_config *cfg = NULL;
  nd_graph *g = NULL;
  nd_error err = {0};
  char missing[512] = "";
  int built = nd_config_new(&cfg) == 0, tasks = 0, named[ND_TASK_KIND_COUNT] = {0};
  for (size_t i = 0; built && i < sizeof kv / sizeof *kv; i++) built = nd_config_set_assignment(cfg, kv[i], &err) == 0;
  built = built && nd_graph_build(&g, cfg, 0, &err) == 0;
  for (int32_t i = 0; built && i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (!t->bf16) continue;
    tasks++;
    if ((cuda->impl[t->kind] || cuda->kernel[t->kind]) && cuda->supports(t)) continue;
    if (!named[t->kind]++)
      snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", nd_kind(t->kind)->name);
  }
  ok(built && tasks > 0 && !missing[0], "train.precision bf16, %s: the step's %d bf16 tasks run on CUDA workers%s%s",
     arch, tasks, missing[0] ? "; not:" : "", missing);
  if (err.msg[0]) diag("%s", err.msg);
  nd_graph_free(g);
  nd_config_free(cfg);
}

int main(void) {
  implemented();
  bf16_on_gpu("model.arch=gpt2");
  bf16_on_gpu("model.arch=llama");
  int n = nd_cuda_device_count();
  if (n == 0) {
    skip(
        "CUDA kernels against the CPU kernels: no CUDA device on this machine (scripts/gpu-check.sh runs them on one)");
    return done_testing();
  }
  struct cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  printf("# device 0: %s, %.1f GiB\n", p.name, (double)p.totalGlobalMem / (1 << 30));
  cublasHandle_t h;
  ok(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cuBLAS handle");
  matmul(h, 64, 48, 80, 0, 2e-5);
  matmul(h, 33, 65, 17, 1, 2e-5);
  matmul(h, 256, 768, 2304, 0, 2e-5);
  nd_cuda_set_tf32(h, 1);
  matmul(h, 256, 768, 2304, 0, 5e-3);
  nd_cuda_set_tf32(h, 0);
  matmul_bf16(h, 64, 48, 80, 0);
  matmul_bf16(h, 33, 65, 17, 1);
  matmul_bf16(h, 256, 768, 2304, 0);
  cast_bf16(1000);
  cast_bf16(1 << 20);
  bf16_writers(7, 33);
  bf16_writers(64, 768);
  bf16_writers(16, 1600);
  layernorm(7, 33);
  layernorm(64, 768);
  layernorm(16, 1600);
  attention(2, 16, 4, 8);
  attention(1, 64, 12, 64);
  attention(2, 33, 3, 5);
  /* the fused kernels' tiles: T past one block of rows and not a multiple of it, T 1, hs 128 */
  attention(2, 130, 2, 64);
  attention(1, 1, 1, 16);
  attention(1, 200, 2, 128);
  rmsnorm(7, 33, 1, 0.0f);
  rmsnorm(64, 768, 0, 1.0f);
  rmsnorm(16, 1600, 1, 1.0f);
  rope(2, 16, 2, 8, ND_ROPE_DEFAULT(10000.0f));
  rope(1, 64, 4, 16, ND_ROPE_DEFAULT(500000.0f));
  rope(3, 9, 3, 6, ND_ROPE_DEFAULT(10000.0f));
  /* Llama 3's scaling, its three regimes: pair 0 kept, 1 blended, 2.. divided */
  rope(1, 64, 4, 16, (nd_rope){500000.0f, 8.0f, 0.5f, 4.0f, 32.0f});
  gqa(2, 16, 4, 2, 8);
  gqa(1, 64, 4, 1, 16);
  gqa(3, 9, 6, 3, 5);
  gqa(2, 8, 2, 2, 4);
  gqa(1, 128, 32, 8, 64);
  gqa(2, 150, 8, 2, 64);
  gqa(1, 1, 2, 1, 16);
  elementwise(1000);
  elementwise(1 << 20);
  embedding_ce(2, 16, 32, 256, 0, 256);
  embedding_ce(3, 7, 48, 300, 100, 150);
  cublasDestroy(h);
  return done_testing();
}
