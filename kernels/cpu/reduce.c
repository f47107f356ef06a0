/* Reductions: squared norm, clipping factor, column sums, fixed-order sum of parts. */
#include "kernels/cpu/clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lanes.h"

#include <string.h>

ND_VECTOR_CLONES
void nd_sumsq_lanes(double *lanes, const float *x, int64_t n) {
  // lanes (ND_LANES), x (n)
#define ND_TERM(i) ((double)x[i] * x[i])
  ND_LANES_ACCUMULATE(lanes, n, ND_TERM);
#undef ND_TERM
}

double nd_sumsq(const float *x, int64_t n) {
  double s[ND_LANES] = {0};
  nd_sumsq_lanes(s, x, n);
  return ND_LANES_TOTAL(s);
}

double nd_lanes_total(const double *lanes) { return ND_LANES_TOTAL(lanes); }

float nd_clip_scale(double norm, double max_norm) {
  if (max_norm > 0.0 && norm > max_norm) return (float)(max_norm / norm);
  return 1.0f;
}

ND_VECTOR_CLONES
void nd_add_column_sums(float *out, const float *x, int rows, int cols) {
  // out (cols), x (rows, cols); row by row, so that the inner loop is contiguous and each out[j] adds in row order
  for (int i = 0; i < rows; i++) {
    const float *row = x + (size_t)i * cols;
#pragma omp simd
    for (int j = 0; j < cols; j++) out[j] += row[j];
  }
}

ND_VECTOR_CLONES
void nd_sum_ordered(float *out, const float *const *parts, int nparts, int64_t n) {
  // out (n), may be parts[0]; parts[i] (n)
  if (nparts <= 0) {
    memset(out, 0, (size_t)n * sizeof(float));
    return;
  }
  if (out != parts[0]) memcpy(out, parts[0], (size_t)n * sizeof(float));
  // out[j] = ((parts[0][j] + parts[1][j]) + parts[2][j]) + ...
  for (int p = 1; p < nparts; p++) {
    const float *x = parts[p];
#pragma omp simd
    for (int64_t j = 0; j < n; j++) out[j] += x[j];
  }
}
