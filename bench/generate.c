/* bench/generate [TOKENS] [ROUNDS] [PROMPT,...]: the time of one new token
 * after prompts of several lengths, with the key/value cache (a decoding
 * step of nd_generate) and without it (the forward of the prompt and the
 * token from position 0: what one new token costs when nothing is kept, the
 * reference of tests/test_generate.sh), as a Markdown table
 * (docs/generate.md). GPT-2, 4 layers, 4 heads, n_embd 256, seq_len 512,
 * byte vocabulary, one rank, its initial weights. Every measurement follows
 * a warm-up of the same call (an executor is built for each prompt length);
 * a cached row is the median over the rounds of the mean of TOKENS - 1
 * decoding steps (the first new token comes from the prompt's forward), an
 * uncached one the median of one forward per round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/run.h"
#include "ndgraph/ndgraph.h"

#define MAX_PROMPTS 8

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[(n - 1) / 2];
}

/* A warm-up, then the measured call: the mean decoding step, or (tokens 1) the prompt's forward. */
static int measure(nd_generator *gen, nd_trainer *tr, const int *ids, int n, int tokens, double *ms, nd_error *err) {
  nd_generate_opts o = {.prompt = ids, .n_prompt = n, .tokens = tokens, .temperature = 0.0};
  nd_generate_result res;
  int rc = nd_generate(gen, tr, &o, &res, err);
  if (!rc) rc = nd_generate(gen, tr, &o, &res, err);
  *ms = tokens > 1 ? res.decode_ms / (tokens - 1) : res.prefill_ms;
  return rc;
}

int main(int argc, char **argv) {
  nd_blas_select_kernels(argv);
  const char *me = "bench/generate";
  int tokens = argc > 1 ? nd_bench_count(me, "TOKENS", argv[1], 2, 256) : 64;
  int rounds = argc > 2 ? nd_bench_count(me, "ROUNDS", argv[2], 1, ND_BENCH_MAX_ROUNDS) : 5;
  int prompts[MAX_PROMPTS], n_prompts = 0;
  char list[64] = "8,64,256";
  if (argc > 3) snprintf(list, sizeof list, "%s", argv[3]);
  if (tokens < 0 || rounds < 0) return 2;
  for (char *s = strtok(list, ","); s; s = strtok(NULL, ",")) {
    if (n_prompts == MAX_PROMPTS) {
      fprintf(stderr, "%s: more than %d prompt lengths\n", me, MAX_PROMPTS);
      return 2;
    }
    /* a prompt and its new tokens within seq_len */
    if ((prompts[n_prompts++] = nd_bench_count(me, "PROMPT", s, 1, 512 - tokens)) < 0) return 2;
  }
  if (!n_prompts) return 2;
  static const char *const kv[] = {"model.arch=gpt2",
                                   "model.n_layer=4",
                                   "model.n_head=4",
                                   "model.n_embd=256",
                                   "model.seq_len=512",
                                   "model.vocab_size=256",
                                   "parallelism.pipeline_parallel_size=1",
                                   "parallelism.micro_batches=1",
                                   "train.micro_batch_size=1",
                                   "runtime.tune=false",
                                   NULL};
  nd_config *cfg = NULL;
  nd_trainer *tr = NULL;
  nd_generator *gen = NULL;
  nd_error err = {0};
  int ids[512];
  static double cached[MAX_PROMPTS][ND_BENCH_MAX_ROUNDS], full[MAX_PROMPTS][ND_BENCH_MAX_ROUNDS];
  for (int i = 0; i < 512; i++) ids[i] = 32 + (i * 7) % 90; /* printable bytes */
  int rc = nd_config_new(&cfg) ? -1 : nd_bench_config(cfg, kv, &err);
  if (!rc) rc = nd_trainer_open(&tr, cfg, &err);
  if (!rc) rc = nd_generator_open(&gen, tr, &err);
  for (int r = 0; r < rounds && !rc; r++)
    for (int p = 0; p < n_prompts && !rc; p++) {
      rc = measure(gen, tr, ids, prompts[p], tokens, &cached[p][r], &err);
      if (!rc) rc = measure(gen, tr, ids, prompts[p] + 1, 1, &full[p][r], &err);
    }
  if (!rc) {
    printf("GPT-2, 4 layers, 4 heads, n_embd 256, seq_len 512, one rank; %d rounds, %d new tokens per cached run\n\n",
           rounds, tokens);
    printf("| prompt | cached ms / token | / first row | no cache ms / token | / first row | no cache / cached |\n");
    printf("|---:|---:|---:|---:|---:|---:|\n");
    double c0 = 0, f0 = 0;
    for (int p = 0; p < n_prompts; p++) {
      double c = median(cached[p], rounds), f = median(full[p], rounds);
      if (!p) c0 = c, f0 = f;
      printf("| %d | %.3f | %.2f | %.2f | %.2f | %.1f |\n", prompts[p], c, c / c0, f, f / f0, f / c);
    }
  } else {
    fprintf(stderr, "%s: %s\n", me, err.msg[0] ? err.msg : "out of memory");
  }
  nd_generator_close(gen);
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc ? 1 : 0;
}
