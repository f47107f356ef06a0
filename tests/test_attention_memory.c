/* Fused attention keeps no (T, T) matrix: the plan's activation bytes at
 * seq_len 1024 hold no term in T^2. Every activation is (B, T, ...) or
 * (B, NH, T), so per rank they are a + b T exactly, and the second difference
 * A(T) - 2 A(T - d) + A(T - 2 d) = 2 q d^2 recovers the T^2 coefficient q.
 * The unfused graph kept the probabilities (B, NH / tp, T, T) of every layer
 * in each forward slot (and GPT-2 a score-gradient scratch of that size
 * besides): q T^2 was at least TT = B NH T^2 4 bytes per layer per slot, which
 * this test prints and requires the fused graph to be below (it is 0). GPT-2
 * and Llama (grouped-query), one stage of 2 layers and one of 2 pipeline
 * stages and 2 tensor ranks. */
#include <stdio.h>
#include <string.h>

#include "graph/ir.h"
#include "graph/plan.h"
#include "tests/tap.h"

enum { L = 4, NH = 4, B = 2, SLOTS = 2, T = 1024, STEP = 256 };

/* Activation bytes of the whole step (every rank, every slot) at seq_len t; -1 on error. */
static long long activation_bytes(const char *arch, int tp, int pp, int t) {
  const char *kv[16];
  char seq[64];
  int n = 0;
  snprintf(seq, sizeof seq, "model.seq_len=%d", t);
  kv[n++] = arch;
  kv[n++] = seq;
  kv[n++] = "model.n_layer=4";
  kv[n++] = "model.n_head=4";
  kv[n++] = "model.n_embd=64";
  kv[n++] = "model.vocab_size=256";
  kv[n++] = "train.micro_batch_size=2";
  kv[n++] = "parallelism.micro_batches=4";
  kv[n++] = "parallelism.activation_slots=2";
  kv[n++] = tp == 2 ? "parallelism.tensor_parallel_size=2" : "parallelism.tensor_parallel_size=1";
  kv[n++] = pp == 2 ? "parallelism.pipeline_parallel_size=2" : "parallelism.pipeline_parallel_size=1";
  if (strcmp(arch, "model.arch=llama") == 0) kv[n++] = "model.n_kv_head=2"; // grouped-query
  nd_config *cfg = NULL;
  nd_graph *g = NULL;
  nd_plan p = {0};
  nd_error err = {0};
  long long bytes = -1;
  if (nd_config_new(&cfg)) return -1;
  for (int i = 0; i < n; i++)
    if (nd_config_set_assignment(cfg, kv[i], &err)) goto done;
  if (nd_graph_build(&g, cfg, 0, &err) || nd_plan_compute(g, &p)) goto done;
  bytes = 0;
  for (int r = 0; r < p.n_ranks; r++) bytes += p.memory[r].bytes[ND_TENSOR_ACTIVATION];
done:
  if (err.msg[0]) diag("%s at seq_len %d: %s", arch, t, err.msg);
  nd_plan_free(&p);
  nd_graph_free(g);
  nd_config_free(cfg);
  return bytes;
}

static void check(const char *arch, int tp, int pp) {
  long long a0 = activation_bytes(arch, tp, pp, T - 2 * STEP), a1 = activation_bytes(arch, tp, pp, T - STEP);
  long long a2 = activation_bytes(arch, tp, pp, T);
  if (!ok(a0 > 0 && a1 > 0 && a2 > 0, "%s tp %d pp %d: the graphs build", arch, tp, pp)) return;
  // q T^2 at T from the second difference 2 q STEP^2
  long long q_tt = (a2 - 2 * a1 + a0) / 2 * (T / STEP) * (T / STEP);
  long long tt = (long long)L * SLOTS * B * NH * T * T * 4; // one (B, NH, T, T) per layer per slot, all ranks
  ok(q_tt == 0 && a2 - 2 * a1 + a0 == 0,
     "%s tp %d pp %d: activations at seq_len %d have no T^2 part (%lld bytes; the unfused graph's was >= %lld), "
     "%lld bytes in all",
     arch, tp, pp, T, q_tt, tt, a2);
}

int main(void) {
  check("model.arch=gpt2", 1, 1);
  check("model.arch=gpt2", 2, 2);
  check("model.arch=llama", 1, 1);
  check("model.arch=llama", 2, 2);
  return done_testing();
}
