/* Row blocks of one kernel taken by its worker and idle workers (share.h).
 *
 * The blocks are fixed by the kernel's shape alone, and each is one call
 * of the kernel's row function whoever runs it: a helper changes who makes
 * a call, never which calls are made, so the results are the same bits
 * with help or without, on any BLAS whose call gives the same bits for the
 * same arguments (docs/scheduler.md, *Determinism*).
 *
 * One kernel is shared at a time: with two workers per pipeline pair that
 * is the case that pays, and a second kernel posted meanwhile runs its
 * blocks alone. The owner posts a job, then it and the helpers take blocks
 * by an atomic counter. A helper counts itself in `visitors` before it
 * looks at the job and leaves after its last block; the owner withdraws the
 * job and waits until no visitor is left, so the job, which lives on the
 * owner's stack, is never read after the owner returns. */
#include "common/share.h"

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>

/* Two blocks: one for the worker, one for the helper its pipeline
 * neighbour lends while it idles. A product cut in blocks packs its shared
 * operand once per block, which costs whether or not anyone helps:
 * measured on one core over the benchmark's products, 1-4% for two
 * blocks, 3-8% for four, 8-20% for eight. */
#define ND_SHARE_BLOCKS 2
/* Below this a block's work (about 0.1 ms of one core) costs more to hand
 * over than it gains. */
#define ND_SHARE_MIN_BLOCK_FLOPS 2e7

typedef struct share_job {
  nd_rows_fn fn;
  void *ctx;
  int n, align, blocks;
  atomic_int next; /* the next block to take */
} share_job;

static _Atomic(share_job *) posted;
static atomic_int visitors; /* helpers between looking at `posted` and leaving it */
static atomic_int enabled;
static atomic_long split, helped; /* kernels run in blocks, blocks run by helpers */
static _Atomic(const nd_share_observer *) observer;

void nd__share_enable(int on) { atomic_store(&enabled, on); }

/* A spin that yields the core now and then: a helper that the system took
 * off its core (the submitting thread needs one too) must get it back. */
static void cpu_relax(unsigned *spins) {
  if (++*spins % 1024 == 0) {
    sched_yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void nd__share_observe(const nd_share_observer *obs) { atomic_store(&observer, obs); }

void nd__share_counts(long *n_split, long *n_helped) {
  *n_split = atomic_load(&split);
  *n_helped = atomic_load(&helped);
}

int nd__share_blocks(int n, int align, double flops_per_row) {
  if (n <= 0) return 0;
  if (align < 1) align = 1;
  int units = (n + align - 1) / align;
  int worth = flops_per_row * n >= ND_SHARE_BLOCKS * ND_SHARE_MIN_BLOCK_FLOPS;
  return units >= ND_SHARE_BLOCKS && worth ? ND_SHARE_BLOCKS : 1;
}

/* Takes blocks until none is left; returns how many it took. Block b is
 * units [units b / blocks, units (b + 1) / blocks) of `align` rows. */
static int run_blocks(share_job *j) {
  int ran = 0, units = (j->n + j->align - 1) / j->align;
  for (int b; (b = atomic_fetch_add(&j->next, 1)) < j->blocks; ran++) {
    int lo = (int)((long)units * b / j->blocks) * j->align;
    int hi = (int)((long)units * (b + 1) / j->blocks) * j->align;
    j->fn(j->ctx, lo, hi < j->n ? hi : j->n);
  }
  return ran;
}

void nd__share_rows(int n, int align, double flops_per_row, nd_rows_fn fn, void *ctx) {
  int blocks = nd__share_blocks(n, align, flops_per_row);
  if (blocks == 0) return;
  if (blocks == 1) {
    fn(ctx, 0, n);
    return;
  }
  share_job job = {.fn = fn, .ctx = ctx, .n = n, .align = align < 1 ? 1 : align, .blocks = blocks};
  atomic_init(&job.next, 0);
  atomic_fetch_add(&split, 1);
  /* posted while help is on: a worker that runs out of tasks meanwhile
   * takes the blocks still left */
  share_job *expected = NULL;
  int shared = atomic_load_explicit(&enabled, memory_order_relaxed) &&
               atomic_compare_exchange_strong(&posted, &expected, &job);
  run_blocks(&job);
  if (!shared) return;
  atomic_store(&posted, NULL);
  /* the blocks a helper took are done when it leaves */
  for (unsigned spins = 0; atomic_load(&visitors);) cpu_relax(&spins);
}

int nd__share_help(void) {
  if (!atomic_load_explicit(&enabled, memory_order_relaxed)) return 0;
  if (!atomic_load(&posted)) return 0;
  const nd_share_observer *obs = atomic_load(&observer);
  double start = obs ? obs->now() : 0;
  atomic_fetch_add(&visitors, 1);
  share_job *j = atomic_load(&posted);
  int ran = j ? run_blocks(j) : 0;
  /* told before it leaves: the owner's task, and so the traced step, cannot end before */
  if (ran && obs) obs->helped(obs->user, start, obs->now());
  atomic_fetch_sub(&visitors, 1);
  if (ran) atomic_fetch_add(&helped, ran);
  return ran > 0;
}
