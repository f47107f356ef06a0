/* One process's share built alone (docs/nodes.md): for each layout and
 * process count, every process's figures (tasks it runs and submits, bytes
 * it sends by class and receives) from the graph of its share
 * (nd_graph_build_pairs of nd_mpi_share_pairs) equal those from the whole
 * step, and the share is smaller than the step where the cut leaves pairs
 * out. Layouts: data, tensor and pipeline parallel, the tied embedding
 * across stages, split tensor groups, sharded data parallel, Llama,
 * recomputation and bf16. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "tasks/mpi.h"
#include "tests/tap.h"

static nd_config *config(const char *sets) {
  nd_config *cfg;
  nd_error err = {0};
  char buf[512], *save = NULL;
  if (nd_config_new(&cfg)) return NULL;
  snprintf(buf, sizeof buf,
           "model.n_layer=6 model.n_embd=32 model.n_head=4 model.seq_len=16 model.vocab_size=256 "
           "train.micro_batch_size=2 parallelism.micro_batches=3 parallelism.activation_slots=2 %s",
           sets);
  for (char *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save))
    if (nd_config_set_assignment(cfg, kv, &err)) {
      diag("%s: %s", kv, err.msg);
      nd_config_free(cfg);
      return NULL;
    }
  if (nd_config_validate(cfg, &err)) {
    diag("%s: %s", sets, err.msg);
    nd_config_free(cfg);
    return NULL;
  }
  return cfg;
}

/* Every process of `procs` against the whole step; `less`: every share
 * leaves pairs out (a process that sums a gradient sees every task that
 * writes it: with data parallelism alone, every replica's backward). */
static void check(const char *sets, int procs, int less) {
  nd_config *cfg = config(sets);
  nd_graph *whole = NULL, *tail = NULL;
  nd_error err = {0};
  int *tail_on = NULL, same = 0, smaller = 0;
  uint8_t *pairs = NULL;
  if (!cfg || nd_graph_build(&whole, cfg, 0, &err)) goto done;
  pairs = calloc((size_t)whole->dp * whole->pp, 1);
  if (!pairs || nd_graph_build_pairs(&tail, cfg, 0, pairs, &err) || !(tail_on = nd_mpi_task_processes(tail, procs)))
    goto done;
  for (int p = 0; p < procs; p++) {
    nd_graph *share = NULL;
    nd_mpi_share a, b;
    nd_mpi_share_pairs(tail, tail_on, procs, p, pairs);
    if (nd_graph_build_pairs(&share, cfg, 0, pairs, &err) || nd_mpi_share_of(whole, procs, p, NULL, &a) ||
        nd_mpi_share_of(share, procs, p, NULL, &b)) {
      nd_graph_free(share);
      goto done;
    }
    if (memcmp(&a, &b, sizeof a) == 0)
      same++;
    else
      diag("%s, %d processes, process %d: runs %lld / %lld, submits %lld / %lld, sends %lld+%lld+%lld / "
           "%lld+%lld+%lld, receives %lld / %lld (whole / share)",
           sets, procs, p, (long long)a.runs, (long long)b.runs, (long long)a.submits, (long long)b.submits,
           (long long)a.sent[0], (long long)a.sent[1], (long long)a.sent[2], (long long)b.sent[0],
           (long long)b.sent[1], (long long)b.sent[2], (long long)a.received, (long long)b.received);
    smaller += share->n_tasks < whole->n_tasks;
    nd_graph_free(share);
  }
done:
  if (err.msg[0]) diag("%s", err.msg);
  ok(same == procs, "%s on %d processes: every share's figures are the whole step's (%d of %d)", sets, procs, same,
     procs);
  if (less)
    ok(smaller == procs, "%s on %d processes: every share has fewer tasks than the step (%d of %d)", sets, procs,
       smaller, procs);
  free(pairs);
  free(tail_on);
  nd_graph_free(tail);
  nd_graph_free(whole);
  nd_config_free(cfg);
}

int main(void) {
  check("parallelism.data_parallel_size=4", 4, 0);
  check("parallelism.data_parallel_size=4", 3, 0);
  check("parallelism.pipeline_parallel_size=3", 3, 0);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2 parallelism.tensor_parallel_size=2", 2, 0);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=3 parallelism.tensor_parallel_size=2", 4, 1);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=3 parallelism.tensor_parallel_size=2", 6, 1);
  check("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2 parallelism.tensor_parallel_size=2 "
        "runtime.split_tensor_groups=true",
        5, 0);
  check("parallelism.data_parallel_size=4 parallelism.pipeline_parallel_size=2 parallelism.data_parallel_shard=gradients",
        4, 0);
  check("parallelism.data_parallel_size=4 parallelism.data_parallel_shard=optimizer", 3, 0);
  check("parallelism.data_parallel_size=4 parallelism.pipeline_parallel_size=2 parallelism.data_parallel_shard=parameters",
        4, 0);
  check("model.arch=llama model.n_kv_head=2 parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2", 4, 1);
  check("train.recompute=layer train.precision=bf16 parallelism.data_parallel_size=2 "
        "parallelism.pipeline_parallel_size=3",
        6, 1);
  return done_testing();
}
