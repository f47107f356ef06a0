/* Row reductions in ND_LANES interleaved partial sums, for the kernels that
 * sum rows (norms, softmax, loss, gradient norm). One running float sum waits
 * for each addition before the next (4 cycles an element): LayerNorm's two
 * row sums took most of its time. ND_LANES independent sums let the compiler
 * keep them in vector registers, while the order of the additions stays the
 * code's: a compiler-vectorized reduction (`omp simd reduction`) adds in the
 * vector width the build targets (4 lanes under SSE, 8 or 16 under AVX) and
 * may peel elements to align the rest, so its bits would depend on the build
 * and on where a buffer lies. Here every build, run, policy and placement adds
 * the same way (tests/test_kernels checks the placement in memory). */
#ifndef ND_KERNELS_CPU_LANES_H
#define ND_KERNELS_CPU_LANES_H

#include <stdint.h>

#define ND_LANES 8

/* The lanes of an array l[ND_LANES] (float or double) added up in a fixed tree. */
#define ND_LANES_TOTAL(l) ((((l)[0] + (l)[4]) + ((l)[2] + (l)[6])) + (((l)[1] + (l)[5]) + ((l)[3] + (l)[7])))

/* One lane step: for k < ND_LANES (the full blocks) and then the tail, at
 * j + k, l[k] += TERM(j + k). TERM is a macro of the element's index. */
#define ND_LANES_ACCUMULATE(l, n, TERM)                                                  \
  do {                                                                                   \
    int64_t j_ = 0;                                                                      \
    for (; j_ + ND_LANES <= (n); j_ += ND_LANES)                                         \
      _Pragma("omp simd") for (int k_ = 0; k_ < ND_LANES; k_++)(l)[k_] += TERM(j_ + k_); \
    for (int k_ = 0; k_ < ND_LANES && j_ + k_ < (n); k_++) (l)[k_] += TERM(j_ + k_);     \
  } while (0)

/* sum of x[j] */
static inline float nd__sum(const float *x, int n) {
  float l[ND_LANES] = {0};
#define ND_TERM(j) x[j]
  ND_LANES_ACCUMULATE(l, n, ND_TERM);
#undef ND_TERM
  return ND_LANES_TOTAL(l);
}

/* sum of a[j] b[j] */
static inline float nd__dot(const float *a, const float *b, int n) {
  float l[ND_LANES] = {0};
#define ND_TERM(j) (a[j] * b[j])
  ND_LANES_ACCUMULATE(l, n, ND_TERM);
#undef ND_TERM
  return ND_LANES_TOTAL(l);
}

/* sum of (x[j] - m)^2 */
static inline float nd__sum_sq_dev(const float *x, float m, int n) {
  float l[ND_LANES] = {0};
#define ND_TERM(j) ((x[j] - m) * (x[j] - m))
  ND_LANES_ACCUMULATE(l, n, ND_TERM);
#undef ND_TERM
  return ND_LANES_TOTAL(l);
}

/* sum of a[j] b[j] (x[j] - m) */
static inline float nd__dot_dev(const float *a, const float *b, const float *x, float m, int n) {
  float l[ND_LANES] = {0};
#define ND_TERM(j) (a[j] * b[j] * (x[j] - m))
  ND_LANES_ACCUMULATE(l, n, ND_TERM);
#undef ND_TERM
  return ND_LANES_TOTAL(l);
}

#endif
