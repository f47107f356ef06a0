/* Two benchmark rows compared run by run: each round runs every row once,
 * minutes apart, so the machine's drift between rounds cancels in the ratio
 * of one row's step to the other's in the same round. What those ratios
 * say, and how far the machine's noise lets them say it. */
#ifndef ND_BENCH_PAIRED_H
#define ND_BENCH_PAIRED_H

typedef struct nd_bench_paired {
  double median, lowest, highest;
  /* the distribution-free 95% confidence interval of the median ratio (two
   * order statistics, from the sign test's binomial law): a difference whose
   * interval holds 1 is not one this run resolves. NAN under 6 rounds, where
   * no two order statistics cover 95% */
  double low95, high95;
  int faster; /* rounds whose ratio is under 1 */
  int rounds;
} nd_bench_paired;

/* Summarizes the n ratios q (mine over theirs, one a round), sorting them. */
nd_bench_paired nd_bench_ratios(double *q, int n);

/* The 0-based index i of the interval's lower end: [q[i], q[n - 1 - i]] of n
 * sorted values drawn from one law covers that law's median with probability
 * >= 95%; -1 when n < 6. */
int nd_bench_interval_index(int n);

/* The interval as "LOW-HIGH" to three decimals, or "-" without one; out. */
const char *nd_bench_interval(char out[32], const nd_bench_paired *p);

#endif
