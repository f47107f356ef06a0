/* Row blocks of one kernel taken by its worker and idle workers (share.h).
 *
 * One kernel is shared at a time: with two workers per pipeline pair that
 * is the case that pays, and a second kernel posted meanwhile runs unsplit.
 * The owner posts a job, then it and the helpers take blocks by an atomic
 * counter. A helper counts itself in `visitors` before it looks at the job
 * and leaves after its last block; the owner withdraws the job and waits
 * until no visitor is left, so the job, which lives in the owner's
 * thread, is never read after the owner returns. */
#include "kernels/cpu/share.h"

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>

/* Below this a block's work (about 0.1 ms of one core) costs more to hand
 * over than it gains: OpenBLAS packs the shared operand again for each
 * block. */
#define ND_SHARE_MIN_BLOCK_FLOPS 2e7

typedef struct share_job {
  nd_rows_fn fn;
  void *ctx;
  int n, align, blocks;
  atomic_int next; /* the next block to take */
} share_job;

static _Atomic(share_job *) posted;
static atomic_int offers;   /* threads that offer help now */
static atomic_int visitors; /* helpers between looking at `posted` and leaving it */
static atomic_int enabled;
static atomic_long split, helped; /* kernels run in blocks, blocks run by helpers */
static _Atomic(const nd_share_observer *) observer;
static _Thread_local int offering;

void nd__share_enable(int on) {
  /* before the workers start: a worker of an earlier runtime that ended
   * while it offered took its thread's flag with it, not its count */
  atomic_store(&offers, 0);
  atomic_store(&enabled, on);
}

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

/* Takes blocks until none is left; returns how many it took. */
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
  if (n <= 0) return;
  if (align < 1) align = 1;
  int helpers = atomic_load(&offers);
  int blocks = helpers + 1;
  double per_block = flops_per_row * n / blocks;
  int units = (n + align - 1) / align;
  if (helpers <= 0 || per_block < ND_SHARE_MIN_BLOCK_FLOPS || units < 2) {
    fn(ctx, 0, n);
    return;
  }
  if (blocks > units) blocks = units;
  static _Thread_local share_job mine;
  mine.fn = fn;
  mine.ctx = ctx;
  mine.n = n;
  mine.align = align;
  mine.blocks = blocks;
  atomic_store(&mine.next, 0);
  share_job *expected = NULL;
  if (!atomic_compare_exchange_strong(&posted, &expected, &mine)) {
    fn(ctx, 0, n); /* another kernel is shared now */
    return;
  }
  atomic_fetch_add(&split, 1);
  run_blocks(&mine);
  atomic_store(&posted, NULL);
  /* the blocks a helper took are done when it leaves */
  for (unsigned spins = 0; atomic_load(&visitors);) cpu_relax(&spins);
}

int nd__share_help(void) {
  if (!atomic_load_explicit(&enabled, memory_order_relaxed)) return 0;
  if (!offering) {
    offering = 1;
    atomic_fetch_add(&offers, 1);
  }
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

void nd__share_withdraw(void) {
  if (!offering) return;
  offering = 0;
  atomic_fetch_sub(&offers, 1);
}
