/* Kernels shared with idle workers (common/share.h):
 *  - a kernel's blocks are fixed by its shape: the same (lo, hi) calls
 *    with no helper, with one and with three, every row once;
 *  - the matrix products and the attention give the same bits helped as
 *    alone and with help off, on the benchmark's shapes and on odd ones (a
 *    run's results must not depend on whether a worker happened to be
 *    idle), whatever OpenBLAS kernel set the CPU runs;
 *  - what that relies on from the BLAS: one call gives the same bits for
 *    the same arguments wherever its operands lie in memory;
 *  - three helpers racing over many products: every result still exact. */
#include "kernels/cpu/kernels.h"
#include "common/share.h"
#include "tests/tap.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_int stop, offered, helped_blocks;

static void *helper(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    if (nd__share_help()) atomic_fetch_add(&helped_blocks, 1);
    atomic_store(&offered, 1);
  }
  return NULL;
}

static pthread_t helpers[3];
static int n_helpers;

static void start_helpers(int n) {
  atomic_store(&stop, 0);
  atomic_store(&offered, 0);
  for (n_helpers = 0; n_helpers < n; n_helpers++)
    if (pthread_create(&helpers[n_helpers], NULL, helper, NULL)) abort();
  while (!atomic_load(&offered)) {}
}

static void stop_helpers(void) {
  atomic_store(&stop, 1);
  for (int i = 0; i < n_helpers; i++) pthread_join(helpers[i], NULL);
  n_helpers = 0;
}

static float *random_floats(size_t n) {
  float *x = malloc(n * sizeof *x);
  if (!x) abort();
  for (size_t i = 0; i < n; i++) x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
  return x;
}

static float *copy(const float *x, size_t n) {
  float *y = malloc(n * sizeof *y);
  if (!y) abort();
  memcpy(y, x, n * sizeof *y);
  return y;
}

/* ---- the blocks themselves */

enum { ROWS = 1000, MAX_CALLS = 64 };
static atomic_int covered[ROWS];
static atomic_int calls, misaligned;
static atomic_int call_lo[MAX_CALLS], call_hi[MAX_CALLS];

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Records the call. The first block waits (at most 0.2 s) for another to
 * start, so that a helper the system left without a core for a while
 * still takes part. */
static void mark(void *ctx, int lo, int hi) {
  (void)ctx;
  int call = atomic_fetch_add(&calls, 1);
  if (call < MAX_CALLS) atomic_store(&call_lo[call], lo), atomic_store(&call_hi[call], hi);
  if (lo % 16) atomic_fetch_add(&misaligned, 1);
  for (int i = lo; i < hi; i++) atomic_fetch_add(&covered[i], 1);
  for (double until = now_s() + 0.2; call == 0 && hi - lo < ROWS && atomic_load(&calls) < 2 && now_s() < until;) {}
}

static int each_once(void) {
  for (int i = 0; i < ROWS; i++)
    if (atomic_load(&covered[i]) != 1) return 0;
  return 1;
}

static void reset_marks(void) {
  for (int i = 0; i < ROWS; i++) atomic_store(&covered[i], 0);
  atomic_store(&calls, 0);
  atomic_store(&misaligned, 0);
}

/* The calls made, as a bit per row where a block starts and the count. */
typedef struct block_set {
  int n, starts[ROWS + 1];
} block_set;

static block_set calls_made(void) {
  block_set s = {.n = atomic_load(&calls)};
  memset(s.starts, 0, sizeof s.starts);
  for (int c = 0; c < s.n && c < MAX_CALLS; c++) s.starts[atomic_load(&call_lo[c])]++, s.starts[atomic_load(&call_hi[c])]++;
  return s;
}

static int same_calls(const block_set *a, const block_set *b) { return !memcmp(a, b, sizeof *a); }

static void test_blocks(void) {
  const int blocks = nd__share_blocks(ROWS, 16, 1e6);
  ok(blocks >= 2 && nd__share_blocks(ROWS, 16, 1e3) == 1 && nd__share_blocks(16, 16, 1e9) == 1 &&
         nd__share_blocks(0, 16, 1e9) == 0,
     "blocks by shape: %d for 1000 rows of 1e6 flops, 1 below the threshold or for one unit of 16, 0 for no rows",
     blocks);

  reset_marks();
  nd__share_rows(ROWS, 16, 1e6, mark, NULL);
  block_set alone = calls_made();
  ok(alone.n == blocks && each_once() && !atomic_load(&misaligned), "no helper: %d calls, every row once", alone.n);

  nd__share_enable(0);
  int before_off = atomic_load(&helped_blocks);
  start_helpers(1);
  reset_marks();
  nd__share_rows(ROWS, 16, 1e6, mark, NULL);
  block_set off = calls_made();
  stop_helpers();
  nd__share_enable(1);
  ok(same_calls(&alone, &off) && atomic_load(&helped_blocks) == before_off,
     "help off: the same calls, none by the helper");

  for (int n = 1; n <= 3; n += 2) {
    start_helpers(n);
    int shared = 0, same = 1;
    for (int rep = 0; rep < 50 && same; rep++) {
      reset_marks();
      int before = atomic_load(&helped_blocks);
      nd__share_rows(ROWS, 16, 1e6, mark, NULL);
      block_set helped = calls_made();
      same = same_calls(&alone, &helped) && each_once() && !atomic_load(&misaligned);
      shared += atomic_load(&helped_blocks) > before;
    }
    stop_helpers();
    ok(same, "%d helper(s): the same %d calls as alone, every row once, blocks at multiples of 16", n, blocks);
    ok(shared > 0, "%d helper(s) took a block in %d of 50 kernels", n, shared);
  }
  reset_marks();
  start_helpers(1);
  nd__share_rows(ROWS, 16, 1e3, mark, NULL);
  stop_helpers();
  ok(atomic_load(&calls) == 1 && each_once(), "too little work to share: one call");
}

/* ---- the kernels: helped and alone give the same bits */

typedef struct shape {
  int M, K, N;
} shape;

/* How a pass runs the kernels: alone with help on, with help off, or with
 * a helper taking blocks. */
enum { ALONE, HELP_OFF, HELPED, PASSES };

static void begin_pass(int pass) {
  nd__share_enable(pass != HELP_OFF);
  if (pass != ALONE) start_helpers(1);
}

static void end_pass(int pass) {
  if (pass != ALONE) stop_helpers();
  nd__share_enable(1);
}

/* Every product of the linear layer, once per pass; returns whether all
 * bits agree. */
static int same_products(shape s, int trans_w) {
  const int M = s.M, K = s.K, N = s.N;
  float *inp = random_floats((size_t)M * K), *w = random_floats((size_t)K * N), *bias = random_floats(N);
  float *dout = random_floats((size_t)M * N);
  float *out[PASSES], *dinp[PASSES], *dw[PASSES], *db[PASSES];
  float *dinp0 = random_floats((size_t)M * K), *dw0 = random_floats((size_t)K * N), *db0 = random_floats(N);
  for (int pass = 0; pass < PASSES; pass++) {
    begin_pass(pass);
    out[pass] = random_floats((size_t)M * N);
    nd_matmul_forward(out[pass], inp, w, bias, M, K, N, trans_w);
    dinp[pass] = copy(dinp0, (size_t)M * K);
    nd_matmul_backward_input(dinp[pass], dout, w, M, K, N, trans_w, 1.0f);
    dw[pass] = copy(dw0, (size_t)K * N);
    db[pass] = copy(db0, N);
    nd_matmul_backward_weight(dw[pass], db[pass], dout, inp, M, K, N, trans_w, 1.0f);
    end_pass(pass);
  }
  int same = 1;
  for (int pass = 1; pass < PASSES; pass++)
    same &= !memcmp(out[0], out[pass], (size_t)M * N * sizeof(float)) &&
            !memcmp(dinp[0], dinp[pass], (size_t)M * K * sizeof(float)) &&
            !memcmp(dw[0], dw[pass], (size_t)K * N * sizeof(float)) && !memcmp(db[0], db[pass], N * sizeof(float));
  for (int pass = 0; pass < PASSES; pass++) free(out[pass]), free(dinp[pass]), free(dw[pass]), free(db[pass]);
  free(inp), free(w), free(bias), free(dout), free(dinp0), free(dw0), free(db0);
  return same;
}

static int same_attention(int B, int T, int NH, int NKV, int hs) {
  const int qs = (NH + 2 * NKV) * hs, C = NH * hs;
  const size_t nqkv = (size_t)B * T * qs, nlse = (size_t)B * NH * T, nout = (size_t)B * T * C;
  float *qkv = random_floats(nqkv), *dout = random_floats(nout);
  float *out[PASSES], *lse[PASSES], *dqkv[PASSES];
  for (int pass = 0; pass < PASSES; pass++) {
    begin_pass(pass);
    out[pass] = random_floats(nout), lse[pass] = random_floats(nlse), dqkv[pass] = random_floats(nqkv);
    nd_attention_gqa_forward(out[pass], lse[pass], qkv, qkv + C, qkv + C + NKV * hs, qs, qs, B, T, NH, NKV, hs);
    nd_attention_gqa_backward(dqkv[pass], dqkv[pass] + C, dqkv[pass] + C + NKV * hs, dout, qkv, qkv + C,
                              qkv + C + NKV * hs, out[pass], lse[pass], qs, qs, B, T, NH, NKV, hs);
    end_pass(pass);
  }
  int same = 1;
  for (int pass = 1; pass < PASSES; pass++)
    same &= !memcmp(out[0], out[pass], nout * sizeof(float)) && !memcmp(lse[0], lse[pass], nlse * sizeof(float)) &&
            !memcmp(dqkv[0], dqkv[pass], nqkv * sizeof(float));
  for (int pass = 0; pass < PASSES; pass++) free(out[pass]), free(lse[pass]), free(dqkv[pass]);
  free(qkv), free(dout);
  return same;
}

static void test_kernels(void) {
  /* the benchmark's layer (n_embd 256, 4 sequences of 128) and odd sizes */
  static const shape shapes[] = {{512, 256, 768}, {512, 256, 1024}, {512, 1024, 256}, {777, 333, 515}, {100, 900, 700}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
    for (int trans_w = 0; trans_w < 2; trans_w++) {
      long split0, split, helped0, helped;
      nd__share_counts(&split0, &helped0);
      int same = same_products(shapes[i], trans_w);
      nd__share_counts(&split, &helped);
      ok(same && split - split0 == 3 * PASSES,
         "linear %dx%dx%d%s: the same bits helped, alone and with help off (%ld of %d products "
         "in blocks, helper took %ld blocks)",
         shapes[i].M, shapes[i].K, shapes[i].N, trans_w ? " (W transposed)" : "", split - split0, 3 * PASSES,
         helped - helped0);
    }
  long split0, split, helped;
  nd__share_counts(&split0, &helped);
  int same = same_attention(4, 128, 4, 4, 64);
  nd__share_counts(&split, &helped);
  ok(same && split - split0 == 2 * PASSES, "attention, 4 sequences of 128, 4 heads: the same bits helped as alone");
  nd__share_counts(&split0, &helped);
  same = same_attention(5, 128, 6, 2, 32);
  nd__share_counts(&split, &helped);
  ok(same && split - split0 == 2 * PASSES,
     "grouped-query attention, 5 sequences of 128: the same bits helped as alone");
}

/* ---- what the blocks rely on from the BLAS */

/* One sgemm call, its operands copied to addresses `shift` floats past a
 * fresh allocation: a helper's block reads the same rows as the owner's
 * would, but the buffers of two runs lie elsewhere. */
static float *product_at(const float *a, const float *b, int M, int K, int N, int shift) {
  float *a2 = malloc(((size_t)M * K + shift) * sizeof(float)), *b2 = malloc(((size_t)K * N + shift) * sizeof(float));
  float *c = malloc(((size_t)M * N + shift) * sizeof(float)), *out = malloc((size_t)M * N * sizeof(float));
  if (!a2 || !b2 || !c || !out) abort();
  memcpy(a2 + shift, a, (size_t)M * K * sizeof(float));
  memcpy(b2 + shift, b, (size_t)K * N * sizeof(float));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a2 + shift, K, b2 + shift, N, 0.0f,
              c + shift, N);
  memcpy(out, c + shift, (size_t)M * N * sizeof(float));
  free(a2), free(b2), free(c);
  return out;
}

static void test_blas_call(void) {
  const int M = 256, K = 333, N = 515;
  float *a = random_floats((size_t)M * K), *b = random_floats((size_t)K * N);
  float *want = product_at(a, b, M, K, N, 0);
  int same = 1;
  for (int shift = 1; shift < 8 && same; shift++) {
    float *got = product_at(a, b, M, K, N, shift);
    same = !memcmp(want, got, (size_t)M * N * sizeof(float));
    free(got);
  }
  ok(same, "one sgemm call, operands 1 to 7 floats off their alignment: the same bits");
  free(a), free(b), free(want);
}

/* ---- three helpers racing over many products */

static void test_race(void) {
  const int M = 512, K = 256, N = 768;
  float *inp = random_floats((size_t)M * K), *w = random_floats((size_t)K * N);
  float *want = malloc((size_t)M * N * sizeof(float)), *got = malloc((size_t)M * N * sizeof(float));
  if (!want || !got) abort();
  nd_matmul_forward(want, inp, w, NULL, M, K, N, 1);
  int before = atomic_load(&helped_blocks), wrong = 0;
  start_helpers(3);
  for (int rep = 0; rep < 300; rep++) {
    memset(got, 0xff, (size_t)M * N * sizeof(float));
    nd_matmul_forward(got, inp, w, NULL, M, K, N, 1);
    wrong += memcmp(want, got, (size_t)M * N * sizeof(float)) != 0;
  }
  stop_helpers();
  ok(wrong == 0, "3 helpers, 300 products: every result exact (%d wrong, %d blocks helped)", wrong,
     atomic_load(&helped_blocks) - before);
  free(inp), free(w), free(want), free(got);
}

int main(void) {
  srand(7);
  openblas_set_num_threads(1); /* one thread per worker, as the runtime runs it */
  nd__share_enable(1);
  test_blocks();
  test_kernels();
  test_blas_call();
  test_race();
  nd__share_enable(0);
  return done_testing();
}
