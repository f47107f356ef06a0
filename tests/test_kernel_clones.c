/* The AVX2 and baseline clones of every kernel marked ND_VECTOR_CLONES
 * (kernels/cpu/clones.h) give the same bits: a run, a checkpoint or a
 * benchmark does not depend on which one the loader picked. The kernels'
 * sources are compiled into this program, so that each clone can be called
 * by its name; it does not link the library. Skipped where there are no
 * clones (not x86-64 glibc) or the CPU has no AVX2. */
#include "kernels/cpu/adamw.c"
#include "kernels/cpu/attention.c"
#include "kernels/cpu/crossentropy.c"
#include "kernels/cpu/gelu.c"
#include "kernels/cpu/layernorm.c"
#include "kernels/cpu/reduce.c"
#include "kernels/cpu/residual.c"
#include "kernels/cpu/rmsnorm.c"
#include "common/share.c"
#include "kernels/cpu/swiglu.c"
#include "tests/tap.h"

#include <stdlib.h>
#include <string.h>

#ifdef ND_HAVE_VECTOR_CLONES

/* f_avx2 and f_base: the two clones of kernel f, for a type `void f(...)` named f_fn */
#define CLONES(f)                             \
  extern f##_fn f##_avx2 __asm__(#f ".avx2"); \
  extern f##_fn f##_base __asm__(#f ".default");

typedef void nd_gelu_forward_fn(float *, const float *, int64_t);
typedef void nd_gelu_backward_fn(float *, const float *, const float *, int64_t);
typedef void nd_swiglu_forward_fn(float *, const float *, const float *, int64_t);
typedef void nd_swiglu_backward_fn(float *, float *, const float *, const float *, const float *, int64_t);
typedef void nd_layernorm_forward_fn(float *, float *, float *, const float *, const float *, const float *, int, int);
typedef void nd_layernorm_backward_input_fn(float *, const float *, const float *, const float *, const float *,
                                            const float *, const float *, int, int);
typedef void nd_layernorm_backward_weight_fn(float *, float *, const float *, const float *, const float *,
                                             const float *, int, int, float);
typedef void nd_rmsnorm_forward_fn(float *, float *, const float *, const float *, int, int, float);
typedef void nd_rmsnorm_backward_input_fn(float *, const float *, const float *, const float *, const float *,
                                          const float *, int, int);
typedef void nd_rmsnorm_backward_weight_fn(float *, const float *, const float *, const float *, int, int, float);
typedef void online_softmax_fn(float *, float *, float *, float *, int, int, int, int, int, int);
typedef void softmax_tile_backward_fn(float *, float *, const float *, const float *, int, int, int, int);
typedef void nd_crossentropy_stats_fn(float *, const float *, const int32_t *, int, int, int);
typedef void nd_crossentropy_backward_fn(float *, const float *, const float *, const int32_t *, int, int, int, float);
typedef void nd_adamw_fn(float *, float *, float *, const float *, int64_t, float, float, float, float, float, float,
                         int);
typedef void nd_residual_forward_fn(float *, const float *, const float *, int64_t);
typedef void nd_add_column_sums_fn(float *, const float *, int, int);
typedef void nd_sum_ordered_fn(float *, const float *const *, int, int64_t);
typedef void nd_sumsq_lanes_fn(double *, const float *, int64_t);

CLONES(nd_gelu_forward)
CLONES(nd_gelu_backward)
CLONES(nd_swiglu_forward)
CLONES(nd_swiglu_backward)
CLONES(nd_layernorm_forward)
CLONES(nd_layernorm_backward_input)
CLONES(nd_layernorm_backward_weight)
CLONES(nd_rmsnorm_forward)
CLONES(nd_rmsnorm_backward_input)
CLONES(nd_rmsnorm_backward_weight)
CLONES(online_softmax)
CLONES(softmax_tile_backward)
CLONES(nd_crossentropy_stats)
CLONES(nd_crossentropy_backward)
CLONES(nd_adamw)
CLONES(nd_residual_forward)
CLONES(nd_add_column_sums)
CLONES(nd_sum_ordered)
CLONES(nd_sumsq_lanes)

enum { N = 37, C = 259, T = 45 }; /* odd sizes: lane blocks and tails */
#define NX ((size_t)N * C)

/* every buffer of the run, freed at its end */
static void *buffers[64];
static int nbuffers;
static float *falloc(size_t n) {
  float *p = malloc(n * sizeof *p);
  if (!p || nbuffers == (int)(sizeof buffers / sizeof buffers[0])) exit(99);
  return buffers[nbuffers++] = p;
}
static unsigned seed = 1;
static float *random_floats(size_t n, float lo, float hi) {
  float *p = falloc(n);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = lo + (hi - lo) * (float)((seed >> 8) & 0xffff) / 65535.0f;
  }
  return p;
}
static float *copy(const float *x, size_t n) { return memcpy(falloc(n), x, n * sizeof *x); }
static void same(const char *what, const void *a, const void *b, size_t bytes) {
  ok(!memcmp(a, b, bytes), "%s: the AVX2 and baseline clones give the same bits", what);
}

int main(void) {
  if (!__builtin_cpu_supports("avx2")) {
    skip("this CPU has no AVX2: only the baseline clone runs here");
    return done_testing();
  }
  float *x = random_floats(NX, -6, 6), *dy = random_floats(NX, -1, 1), *w = random_floats(C, 0.5f, 1.5f);
  float *bias = random_floats(C, -1, 1), *a1 = random_floats(NX, 0, 1), *a2 = copy(a1, NX);
  float *b1 = random_floats(NX, 0, 1), *b2 = copy(b1, NX);
  float m1[N], m2[N], r1[N], r2[N];

  nd_gelu_forward_avx2(a1, x, NX), nd_gelu_forward_base(a2, x, NX);
  same("gelu forward", a1, a2, NX * 4);
  nd_gelu_backward_avx2(a1, x, dy, NX), nd_gelu_backward_base(a2, x, dy, NX);
  same("gelu backward", a1, a2, NX * 4);
  nd_swiglu_forward_avx2(a1, x, dy, NX), nd_swiglu_forward_base(a2, x, dy, NX);
  same("swiglu forward", a1, a2, NX * 4);
  nd_swiglu_backward_avx2(a1, b1, x, dy, w, C), nd_swiglu_backward_base(a2, b2, x, dy, w, C);
  same("swiglu backward", a1, a2, C * 4), same("swiglu backward (up)", b1, b2, C * 4);

  nd_layernorm_forward_avx2(a1, m1, r1, x, w, bias, N, C), nd_layernorm_forward_base(a2, m2, r2, x, w, bias, N, C);
  same("layernorm forward", a1, a2, NX * 4), same("layernorm mean and rstd", m1, m2, sizeof m1);
  nd_layernorm_backward_input_avx2(a1, dy, dy, x, w, m1, r1, N, C);
  nd_layernorm_backward_input_base(a2, dy, dy, x, w, m1, r1, N, C);
  same("layernorm input gradient", a1, a2, NX * 4);
  nd_layernorm_backward_weight_avx2(a1, b1, dy, x, m1, r1, N, C, 0.0f);
  nd_layernorm_backward_weight_base(a2, b2, dy, x, m1, r1, N, C, 0.0f);
  same("layernorm weight gradient", a1, a2, C * 4), same("layernorm bias gradient", b1, b2, C * 4);

  nd_rmsnorm_forward_avx2(a1, r1, x, w, N, C, 1e-5f), nd_rmsnorm_forward_base(a2, r2, x, w, N, C, 1e-5f);
  same("rmsnorm forward", a1, a2, NX * 4), same("rmsnorm rstd", r1, r2, sizeof r1);
  nd_rmsnorm_backward_input_avx2(a1, NULL, dy, x, w, r1, N, C);
  nd_rmsnorm_backward_input_base(a2, NULL, dy, x, w, r1, N, C);
  same("rmsnorm input gradient", a1, a2, NX * 4);
  nd_rmsnorm_backward_weight_avx2(a1, dy, x, r1, N, C, 0.0f),
      nd_rmsnorm_backward_weight_base(a2, dy, x, r1, N, C, 0.0f);
  same("rmsnorm weight gradient", a1, a2, C * 4);

  /* attention: the online softmax of a diagonal tile of scores after an
   * earlier tile (the rows' max, sum and output rescaled), and the tile's
   * backward; T rows of the tile, a diagonal at row 0 */
  const size_t tile = (size_t)TQ * TK;
  float *s1 = random_floats(tile, -8, 8), *s2 = copy(s1, tile);
  float *mx1 = random_floats(TQ, -2, 2), *mx2 = copy(mx1, TQ), *sm1 = random_floats(TQ, 1, 4), *sm2 = copy(sm1, TQ);
  float *o1 = random_floats((size_t)TQ * C, -1, 1), *o2 = copy(o1, (size_t)TQ * C);
  online_softmax_avx2(s1, mx1, sm1, o1, C, C, TK, T, TK, TK);
  online_softmax_base(s2, mx2, sm2, o2, C, C, TK, T, TK, TK);
  same("online softmax", s1, s2, tile * 4), same("online softmax max", mx1, mx2, TQ * 4);
  same("online softmax sum", sm1, sm2, TQ * 4), same("online softmax rescaled output", o1, o2, (size_t)TQ * C * 4);
  float *g1 = random_floats(tile, -1, 1), *g2 = copy(g1, tile), *pr1 = random_floats(tile, -8, 8);
  float *pr2 = copy(pr1, tile), *lr = random_floats(TQ, 0, 8), *Dr = random_floats(TQ, -1, 1);
  softmax_tile_backward_avx2(pr1, g1, lr, Dr, TK, T, TK, TK);
  softmax_tile_backward_base(pr2, g2, lr, Dr, TK, T, TK, TK);
  same("tile probabilities", pr1, pr2, tile * 4), same("tile score gradient", g1, g2, tile * 4);

  int32_t targets[N];
  for (int i = 0; i < N; i++) targets[i] = (i * 7) % C;
  float st1[3 * N], st2[3 * N], lse[N];
  nd_crossentropy_stats_avx2(st1, x, targets, N, C, 0), nd_crossentropy_stats_base(st2, x, targets, N, C, 0);
  same("crossentropy stats", st1, st2, sizeof st1);
  for (int i = 0; i < N; i++) lse[i] = st1[3 * i] + logf(st1[3 * i + 1]);
  nd_crossentropy_backward_avx2(a1, x, lse, targets, N, C, 0, 0.01f);
  nd_crossentropy_backward_base(a2, x, lse, targets, N, C, 0, 0.01f);
  same("crossentropy backward", a1, a2, NX * 4);

  float *p1 = copy(x, NX), *p2 = copy(x, NX), *mo1 = copy(dy, NX), *mo2 = copy(dy, NX);
  float *v1 = random_floats(NX, 0, 1), *v2 = copy(v1, NX);
  nd_adamw_avx2(p1, mo1, v1, dy, NX, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3);
  nd_adamw_base(p2, mo2, v2, dy, NX, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3);
  same("adamw parameters", p1, p2, NX * 4), same("adamw moments", v1, v2, NX * 4);

  nd_residual_forward_avx2(a1, x, dy, NX), nd_residual_forward_base(a2, x, dy, NX);
  same("residual", a1, a2, NX * 4);
  memcpy(a1, bias, C * 4), memcpy(a2, bias, C * 4);
  nd_add_column_sums_avx2(a1, dy, N, C), nd_add_column_sums_base(a2, dy, N, C);
  same("column sums", a1, a2, C * 4);
  const float *parts[3] = {x, dy, w};
  nd_sum_ordered_avx2(a1, parts, 3, C), nd_sum_ordered_base(a2, parts, 3, C);
  same("sum of parts", a1, a2, C * 4);
  double q1[ND_LANES] = {0}, q2[ND_LANES] = {0};
  nd_sumsq_lanes_avx2(q1, x, NX), nd_sumsq_lanes_base(q2, x, NX);
  same("sum of squares", q1, q2, sizeof q1);
  while (nbuffers) free(buffers[--nbuffers]);
  return done_testing();
}

#else

int main(void) {
  skip("no kernel clones in this build (ND_VECTOR_CLONES needs x86-64 and glibc)");
  return done_testing();
}

#endif
