/* The paired ratios of the benchmarks (bench/paired.h): the interval's order
 * statistics against the binomial law, and its coverage of a known median
 * measured on simulated rounds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/paired.h"
#include "tests/tap.h"

/* P(X <= i) for X ~ Binomial(n, 1/2), in double from the exact counts */
static double tail(int n, int i) {
  double s = 0, c = 1; /* C(n, 0) */
  for (int k = 0; k <= i; k++) {
    s += c;
    c = c * (n - k) / (k + 1);
  }
  return s / ldexp(1.0, n);
}

/* xorshift64*: the same rounds on every machine */
static double uniform(uint64_t *s) {
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

int main(void) {
  ok(nd_bench_interval_index(5) == -1, "5 rounds: no interval (2 x 2^-5 = 6.25%% > 5%%), got %d",
     nd_bench_interval_index(5));
  ok(nd_bench_interval_index(6) == 0, "6 rounds: the lowest to the highest (2 x 2^-6 = 3.1%%), got %d",
     nd_bench_interval_index(6));
  ok(nd_bench_interval_index(40) == 13, "40 rounds: q[13]..q[26] (the sign test's table), got %d",
     nd_bench_interval_index(40));
  int widest = 1;
  for (int n = 6; n <= 64; n++) {
    int i = nd_bench_interval_index(n);
    widest &= i >= 0 && tail(n, i) <= 0.025 && tail(n, i + 1) > 0.025;
  }
  ok(widest, "6-64 rounds: each index leaves at most 2.5%% on a side, and the next one more");

  /* rounds whose ratios scatter around a median of 0.95 as this machine's do
   * (a skewed law: most rounds near it, some far above) */
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  const int trials = 4000, sizes[] = {6, 15, 40, 64};
  for (int s = 0; s < 4; s++) {
    int n = sizes[s], covered = 0;
    double q[64];
    for (int t = 0; t < trials; t++) {
      for (int r = 0; r < n; r++) {
        double u = uniform(&seed);
        q[r] = 0.95 * exp(u < 0.5 ? -0.1 * (0.5 - u) : 0.4 * (u - 0.5)); /* median 0.95 */
      }
      nd_bench_paired p = nd_bench_ratios(q, n);
      covered += p.low95 <= 0.95 && 0.95 <= p.high95;
    }
    double exact = 1 - 2 * tail(n, nd_bench_interval_index(n)), got = (double)covered / trials;
    /* 4000 trials: a standard error under 0.0035 */
    ok(fabs(got - exact) < 0.015 && got >= 0.94,
       "%d rounds: the interval held the median in %.3f of %d trials (exact %.3f)", n, got, trials, exact);
  }

  double q[7] = {1.2, 0.8, 0.9, 1.1, 0.95, 0.85, 1.0};
  nd_bench_paired p = nd_bench_ratios(q, 7);
  ok(p.faster == 4 && p.median == 0.95 && p.lowest == 0.8 && p.highest == 1.2 && p.low95 == 0.8 && p.high95 == 1.2,
     "7 ratios: 4 under 1, median 0.95, 0.8..1.2 (got %d, %.2f, %.2f..%.2f, %.2f..%.2f)", p.faster, p.median, p.lowest,
     p.highest, p.low95, p.high95);
  char buf[32];
  ok(strcmp(nd_bench_interval(buf, &p), "0.800-1.200") == 0, "printed as 0.800-1.200: %s", nd_bench_interval(buf, &p));
  p = nd_bench_ratios(q, 3);
  ok(isnan(p.low95) && strcmp(nd_bench_interval(buf, &p), "-") == 0, "3 ratios: printed as -");
  return done_testing();
}
