/* Paired ratios and the confidence interval of their median (bench/paired.h). */
#include "bench/paired.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int nd_bench_interval_index(int n) {
  /* the true median lies below q[i] only when at most i of the n values fall
   * under it: P(X <= i), X ~ Binomial(n, 1/2); the same above q[n - 1 - i].
   * Take the widest i that leaves 2.5% on each side. */
  double pmf = ldexp(1.0, -n), cdf = 0; /* P(X = 0) = 2^-n */
  int i = -1;
  for (int k = 0; k < n; k++) {
    cdf += pmf;
    if (cdf > 0.025) break;
    i = k;
    pmf *= (double)(n - k) / (k + 1);
  }
  return i;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

nd_bench_paired nd_bench_ratios(double *q, int n) {
  nd_bench_paired p = {0, 0, 0, NAN, NAN, 0, n};
  if (n <= 0) return p;
  for (int r = 0; r < n; r++) p.faster += q[r] < 1.0;
  qsort(q, (size_t)n, sizeof *q, by_value);
  p.median = q[n / 2]; /* as nd_bench_median picks a row's */
  p.lowest = q[0], p.highest = q[n - 1];
  int i = nd_bench_interval_index(n);
  if (i >= 0) p.low95 = q[i], p.high95 = q[n - 1 - i];
  return p;
}

const char *nd_bench_interval(char out[32], const nd_bench_paired *p) {
  if (isnan(p->low95)) return "-";
  snprintf(out, 32, "%.3f-%.3f", p->low95, p->high95);
  return out;
}
