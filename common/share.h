/* A kernel's rows shared with idle CPU workers.
 *
 * A pipeline's workers idle in turns: the last stage while stage 0 runs the
 * step's first forward, stage 0 while the last stage runs a micro-batch's
 * forward and input gradient. A CPU worker of `ndws` with nothing to run
 * looks here (nd__share_help) for a kernel that another worker is running
 * in blocks, and takes the blocks still left.
 *
 * Results never depend on whether anyone helped: a kernel's blocks are
 * fixed by its shape alone (nd__share_blocks), and each block is one call
 * of the kernel's row function, made by whichever thread takes it. The
 * unhelped kernel makes the same calls one after the other. So no caller
 * relies on a row block computed alone giving the bits it has inside the
 * whole product, which OpenBLAS's Haswell and Zen kernels do not
 * (docs/scheduler.md, *Determinism*; tests/test_share). */
#ifndef ND_COMMON_SHARE_H
#define ND_COMMON_SHARE_H

/* Computes rows [lo, hi) of the kernel's output. */
typedef void (*nd_rows_fn)(void *ctx, int lo, int hi);

/* The blocks nd__share_rows cuts rows [0, n) into: 0 for no rows, 1 below
 * a fixed amount of work at `flops_per_row`, else a fixed count of blocks
 * of whole multiples of `align` rows. A function of its arguments only. */
int nd__share_blocks(int n, int align, double flops_per_row);

/* Runs fn over rows [0, n) in nd__share_blocks(n, align, flops_per_row)
 * calls, each over one block; idle workers may take some of them while
 * help is on. Returns once every row is done. */
void nd__share_rows(int n, int align, double flops_per_row, nd_rows_fn fn, void *ctx);

/* For a worker thread that has nothing to run: runs blocks of a kernel
 * another thread shares now, if any. Returns whether it ran any. */
int nd__share_help(void);
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
/* Whether kernels are offered to helpers at all (runtime.wait_policy); off
 * by default. Their blocks are the same either way. */
void nd__share_enable(int on);

#endif
