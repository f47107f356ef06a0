/* A kernel's rows shared with idle CPU workers.
 *
 * A pipeline's workers idle in turns: the last stage while stage 0 runs the
 * step's first forward, stage 0 while the last stage runs a micro-batch's
 * forward and input gradient. A CPU worker of `ndws` with nothing to run
 * offers its core here (nd__share_help); a worker inside a matrix product
 * then splits it into row blocks that both take (nd__share_rows). Without an
 * offer the product runs as one call, as before.
 *
 * Results stay those of the unsplit call: each block computes whole output
 * rows, and every caller's `fn` sums each output element in an order that
 * does not depend on where the blocks start (tests/test_share checks
 * OpenBLAS's products for it, bit for bit). */
#ifndef ND_KERNELS_CPU_SHARE_H
#define ND_KERNELS_CPU_SHARE_H

/* Computes rows [lo, hi) of the kernel's output. */
typedef void (*nd_rows_fn)(void *ctx, int lo, int hi);

/* Runs fn over rows [0, n): in one call unless a worker has offered help,
 * else in blocks of `align` rows or a multiple, each worth at least a
 * fixed amount of work at `flops_per_row`, taken by this thread and the
 * helpers. Returns once every row is done. */
void nd__share_rows(int n, int align, double flops_per_row, nd_rows_fn fn, void *ctx);

/* For a worker thread that has nothing to run: offers its core and runs
 * blocks of a shared kernel if there is one. Returns whether it ran any. */
int nd__share_help(void);
/* The calling thread stops offering (it found a task, or goes to sleep). */
void nd__share_withdraw(void);
/* Since the process started: kernels run in blocks, and blocks that
 * helpers ran. */
void nd__share_counts(long *split, long *helped);

/* Told, on the helper's thread, of each stretch it spent running blocks of
 * another worker's kernel (a trace shows them): start and end on the
 * observer's own clock `now`. */
typedef struct nd_share_observer {
  double (*now)(void);
  void (*helped)(void *user, double start, double end);
  void *user;
} nd_share_observer;
/* NULL stops. A helper reports before the kernel it helped returns, so an
 * observer need outlive only the kernels that ran while it was set. */
void nd__share_observe(const nd_share_observer *obs);
/* Whether workers may offer help at all (runtime.wait_policy); off by default. */
void nd__share_enable(int on);

#endif
