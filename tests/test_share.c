/* Kernels shared with idle workers (kernels/cpu/share.h):
 *  - without an offer a kernel runs as one call; with one, its rows are
 *    covered once each, in aligned blocks, some taken by the helper;
 *  - the matrix products and the attention give the same bits split as
 *    unsplit, on the benchmark's shapes and on odd ones (a run's results
 *    must not depend on whether a worker happened to be idle);
 *  - three helpers racing over many products: every result still exact. */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/share.h"
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
  nd__share_withdraw();
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

enum { ROWS = 1000 };
static atomic_int covered[ROWS];
static atomic_int calls, misaligned;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The first block waits (at most 0.2 s) for another to start, so that a
 * helper the system left without a core for a while still takes part. */
static void mark(void *ctx, int lo, int hi) {
  (void)ctx;
  int first = atomic_fetch_add(&calls, 1) == 0;
  if (lo % 16) atomic_fetch_add(&misaligned, 1);
  for (int i = lo; i < hi; i++) atomic_fetch_add(&covered[i], 1);
  for (double until = now_s() + 0.2; first && hi - lo < ROWS && atomic_load(&calls) < 2 && now_s() < until;) {}
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

static void test_blocks(void) {
  reset_marks();
  nd__share_rows(ROWS, 16, 1e6, mark, NULL);
  ok(atomic_load(&calls) == 1 && each_once(), "no offer: one call over every row");

  start_helpers(1);
  int shared = 0;
  for (int rep = 0; rep < 50; rep++) {
    reset_marks();
    int before = atomic_load(&helped_blocks);
    nd__share_rows(ROWS, 16, 1e6, mark, NULL);
    if (!each_once() || atomic_load(&misaligned)) break;
    shared += atomic_load(&calls) == 2 && atomic_load(&helped_blocks) > before;
  }
  ok(each_once() && !atomic_load(&misaligned), "an offer: every row once, blocks start at multiples of 16");
  ok(shared > 0, "the helper took a block (%d of 50 calls)", shared);
  reset_marks();
  nd__share_rows(ROWS, 16, 1e3, mark, NULL);
  ok(atomic_load(&calls) == 1 && each_once(), "too little work to share: one call");
  stop_helpers();
}

/* ---- the kernels: split and unsplit give the same bits */

typedef struct shape {
  int M, K, N;
} shape;

/* Every product of the linear layer, run twice: before the helpers start
 * (unsplit) and while they run; returns whether all bits agree. */
static int same_products(shape s, int trans_w) {
  const int M = s.M, K = s.K, N = s.N;
  float *inp = random_floats((size_t)M * K), *w = random_floats((size_t)K * N), *bias = random_floats(N);
  float *dout = random_floats((size_t)M * N);
  float *out[2], *dinp[2], *dw[2], *db[2];
  float *dinp0 = random_floats((size_t)M * K), *dw0 = random_floats((size_t)K * N), *db0 = random_floats(N);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) start_helpers(1);
    out[pass] = random_floats((size_t)M * N);
    nd_matmul_forward(out[pass], inp, w, bias, M, K, N, trans_w);
    dinp[pass] = copy(dinp0, (size_t)M * K);
    nd_matmul_backward_input(dinp[pass], dout, w, M, K, N, trans_w, 1.0f);
    dw[pass] = copy(dw0, (size_t)K * N);
    db[pass] = copy(db0, N);
    nd_matmul_backward_weight(dw[pass], db[pass], dout, inp, M, K, N, trans_w, 1.0f);
    if (pass == 1) stop_helpers();
  }
  int same = !memcmp(out[0], out[1], (size_t)M * N * sizeof(float)) &&
             !memcmp(dinp[0], dinp[1], (size_t)M * K * sizeof(float)) &&
             !memcmp(dw[0], dw[1], (size_t)K * N * sizeof(float)) && !memcmp(db[0], db[1], N * sizeof(float));
  for (int pass = 0; pass < 2; pass++) free(out[pass]), free(dinp[pass]), free(dw[pass]), free(db[pass]);
  free(inp), free(w), free(bias), free(dout), free(dinp0), free(dw0), free(db0);
  return same;
}

static int same_attention(int B, int T, int NH, int NKV, int hs) {
  const int qs = (NH + 2 * NKV) * hs, C = NH * hs;
  const size_t nqkv = (size_t)B * T * qs, natt = (size_t)B * NH * T * T, nout = (size_t)B * T * C;
  float *qkv = random_floats(nqkv), *dout = random_floats(nout);
  float *out[2], *att[2], *dqkv[2], *datt = malloc(natt * sizeof(float));
  if (!datt) abort();
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) start_helpers(1);
    out[pass] = random_floats(nout), att[pass] = random_floats(natt), dqkv[pass] = random_floats(nqkv);
    nd_attention_gqa_forward(out[pass], att[pass], qkv, qkv + C, qkv + C + NKV * hs, qs, qs, B, T, NH, NKV, hs);
    nd_attention_gqa_backward(dqkv[pass], dqkv[pass] + C, dqkv[pass] + C + NKV * hs, datt, dout, qkv, qkv + C,
                              qkv + C + NKV * hs, att[pass], qs, qs, B, T, NH, NKV, hs);
    if (pass == 1) stop_helpers();
  }
  int same = !memcmp(out[0], out[1], nout * sizeof(float)) && !memcmp(att[0], att[1], natt * sizeof(float)) &&
             !memcmp(dqkv[0], dqkv[1], nqkv * sizeof(float));
  for (int pass = 0; pass < 2; pass++) free(out[pass]), free(att[pass]), free(dqkv[pass]);
  free(qkv), free(dout), free(datt);
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
      /* split whether or not the helper got a core to take its block: the owner takes what is left */
      ok(same && split - split0 == 3,
         "linear %dx%dx%d%s: the same bits in blocks as unsplit (%ld of 3 products "
         "split, helper took %ld blocks)",
         shapes[i].M, shapes[i].K, shapes[i].N, trans_w ? " (W transposed)" : "", split - split0, helped - helped0);
    }
  long split0, split, helped;
  nd__share_counts(&split0, &helped);
  int same = same_attention(4, 128, 4, 4, 64);
  nd__share_counts(&split, &helped);
  ok(same && split - split0 == 2, "attention, 4 sequences of 128, 4 heads: the same bits in blocks as unsplit");
  nd__share_counts(&split0, &helped);
  same = same_attention(5, 128, 6, 2, 32);
  nd__share_counts(&split, &helped);
  ok(same && split - split0 == 2, "grouped-query attention, 5 sequences of 128: the same bits in blocks as unsplit");
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
  test_race();
  nd__share_enable(0);
  return done_testing();
}
