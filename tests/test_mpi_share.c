/* One process's share built alone (docs/nodes.md): for each layout and
 * process count, every process's figures (tasks it runs and submits, bytes
 * it sends by class and receives) from the graph of its share
 * (nd_graph_build_pairs of nd_mpi_share_pairs) equal those from the whole
 * step, and the share is smaller than the step where the cut leaves pairs
 * out, with every task alone and in the run's chains (tasks/chain.h).
 * Where a data-parallel group spans processes its sums go in chunks
 * (graph/dpchunk.h), and only there, by buckets of a layer's gradients. Layouts: data, tensor and pipeline
 * parallel, the tied embedding across stages, split tensor groups, context
 * parallel, sharded data parallel, Llama, recomputation and bf16. A process
 * that may hold a copy of another's tensor sees, of the tasks writing it
 * there, at most one per read of its own (nd_mpi_visits): with 3
 * micro-batches, a data-parallel sum's process sees one of the other
 * replica's 3 accumulations of each gradient a step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "configs/config.h"
#include "graph/ir.h"
#include "tasks/mpi.h"
#include "tasks/schedule.h"
#include "tests/share_config.h"
#include "tests/tap.h"

/* Every process of `procs` against the whole step; `less`: every share
 * leaves pairs out (a process that sums a gradient sees every task that
 * writes it: with data parallelism alone, every replica's backward). */
static void check(const char *sets, int procs, int less) {
  nd_config *cfg = share_config(sets);
  nd_graph *whole = NULL, *tail = NULL;
  nd_error err = {0};
  int *tail_on = NULL, same = 0, smaller = 0, chained = 0, spans = 0, chunks = 0;
  uint8_t *pairs = NULL;
  if (!cfg || nd_graph_build_pairs(&whole, cfg, 0, NULL, procs, &err)) goto done;
  for (int s = 0; s < whole->pp; s++)
    for (int t = 0; t < whole->tp; t++) spans |= nd_dp_spans(whole, s, t, procs);
  for (int32_t k = 0; k < whole->n_tensors; k++) chunks += whole->tensors[k].kind == ND_TENSOR_DP_CHUNK;
  pairs = calloc((size_t)whole->dp * whole->pp, 1);
  if (!pairs || nd_graph_build_pairs(&tail, cfg, 0, pairs, procs, &err) ||
      !(tail_on = nd_mpi_task_processes(tail, procs)))
    goto done;
  for (int p = 0; p < procs; p++) {
    nd_graph *share = NULL;
    nd_mpi_share a, b, ca, cb;
    int32_t *la = malloc((size_t)whole->n_tasks * sizeof *la), *lb = NULL;
    nd_mpi_share_pairs(tail, tail_on, procs, p, pairs);
    int bad = !la || nd_graph_build_pairs(&share, cfg, 0, pairs, procs, &err) ||
              !(lb = malloc((size_t)share->n_tasks * sizeof *lb)) || nd_sched_chains(whole, cfg, la) ||
              nd_sched_chains(share, cfg, lb) || nd_mpi_share_of(whole, procs, p, NULL, &a) ||
              nd_mpi_share_of(share, procs, p, NULL, &b) || nd_mpi_share_of(whole, procs, p, la, &ca) ||
              nd_mpi_share_of(share, procs, p, lb, &cb);
    free(la), free(lb);
    if (bad) {
      nd_graph_free(share);
      goto done;
    }
    if (memcmp(&ca, &cb, sizeof ca) != 0 || ca.submits >= a.submits)
      diag("%s, %d processes, process %d, chained: submits %lld / %lld, buffers %lld / %lld (whole / share), %lld "
           "alone",
           sets, procs, p, (long long)ca.submits, (long long)cb.submits, (long long)ca.buffers,
           (long long)cb.buffers, (long long)a.submits);
    else
      chained++;
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
  ok(whole && (chunks > 0) == spans, "%s on %d processes: %s (%d chunk tensors)", sets, procs,
     spans ? "the data-parallel sums go in chunks" : "no group spans processes: no chunks", chunks);
  ok(chained == procs, "%s on %d processes: chained, the same figures, fewer StarPU tasks (%d of %d)", sets, procs,
     chained, procs);
  if (less)
    ok(smaller == procs, "%s on %d processes: every share has fewer tasks than the step (%d of %d)", sets, procs,
       smaller, procs);
  free(pairs);
  free(tail_on);
  nd_graph_free(tail);
  nd_graph_free(whole);
  nd_config_free(cfg);
}

/* dp 2 on 2 processes, 3 micro-batches: each process runs the sums of some
 * gradients and reads the other replica's copy, which 3 W tasks there
 * accumulate a step; it sees one of them per read of its own. */
static void check_visits(void) {
  nd_config *cfg = share_config("parallelism.data_parallel_size=2");
  nd_graph *g = NULL;
  nd_error err = {0};
  int procs = 2, *run_on = NULL, *owner = NULL, fewer = 1, some = 0;
  uint8_t *reader = NULL, *visit = NULL;
  int32_t *writes = NULL, *seen = NULL, *reads = NULL;
  if (!cfg || nd_graph_build(&g, cfg, 0, &err) || !(run_on = nd_mpi_task_processes(g, procs))) goto done;
  size_t nt = (size_t)g->n_tensors;
  owner = malloc(nt * sizeof *owner), reader = calloc(nt * (size_t)procs, 1), visit = malloc((size_t)g->n_tasks);
  writes = calloc(nt, sizeof *writes), seen = calloc(nt, sizeof *seen), reads = calloc(nt, sizeof *reads);
  if (!owner || !reader || !visit || !writes || !seen || !reads) goto done;
  for (int32_t k = 0; k < g->n_tensors; k++) owner[k] = nd_mpi_process_of(g, g->tensors[k].home, procs);
  nd_mpi_mark_readers(g, run_on, NULL, owner, procs, reader);
  for (int me = 0; me < procs; me++) {
    if (nd_mpi_visits(g, run_on, NULL, owner, procs, reader, me, visit)) goto done;
    memset(writes, 0, nt * sizeof *writes), memset(seen, 0, nt * sizeof *seen), memset(reads, 0, nt * sizeof *reads);
    for (int32_t i = 0; i < g->n_tasks; i++) {
      const nd_access *acc = nd_task_access(g, &g->tasks[i]);
      for (int a = 0; a < g->tasks[i].n_access; a++) {
        int32_t k = acc[a].tensor;
        if (owner[k] == me || !reader[(int64_t)k * procs + me]) continue;
        if (run_on[i] == me && (acc[a].mode & ND_ACCESS_R)) reads[k]++;
        if (run_on[i] != me && (acc[a].mode & ND_ACCESS_W)) writes[k]++, seen[k] += visit[i];
      }
    }
    for (int32_t k = 0; k < g->n_tensors; k++) {
      if (!writes[k]) continue;
      fewer &= seen[k] >= 1 && seen[k] <= reads[k];
      some += seen[k] < writes[k];
    }
  }
done:
  if (err.msg[0]) diag("%s", err.msg);
  ok(fewer && some > 0,
     "dp=2, 2 processes, 3 micro-batches: of another's writes to a tensor a process may hold, it sees at least one "
     "and at most one per read of its own (%d tensors with writes skipped)",
     some);
  free(run_on), free(owner), free(reader), free(visit), free(writes), free(seen), free(reads);
  nd_graph_free(g);
  nd_config_free(cfg);
}

/* Whole gradients summed across processes go by buckets, one per layer of
 * each (stage, tensor rank) (graph/dpchunk.h): each bucket's chunks are
 * summed by one task per member, not one per gradient. */
static void check_buckets(const char *sets, int procs) {
  nd_config *cfg = share_config(sets);
  nd_graph *g = NULL;
  nd_error err = {0};
  int sums = 0, buckets = 0, grads = 0;
  uint8_t *seen = NULL;
  if (!cfg || nd_graph_build_pairs(&g, cfg, 0, NULL, procs, &err)) goto done;
  int layers = g->L + 2; /* and -1 (the embeddings, the final norm), L (the head) */
  if (!(seen = calloc((size_t)g->pp * g->tp * layers, 1))) goto done;
  for (int32_t k = 0; k < g->n_tensors; k++) {
    const nd_tensor *t = &g->tensors[k];
    if (t->kind != ND_TENSOR_GRAD || t->home.dp != 0) continue;
    grads++;
    uint8_t *b = &seen[((size_t)t->home.pp * g->tp + t->home.tp) * layers + t->layer + 1];
    buckets += !*b, *b = 1;
  }
  for (int32_t i = 0; i < g->n_tasks; i++) sums += g->tasks[i].kind == ND_TASK_ALLREDUCE && g->tasks[i].group == ND_GROUP_DP;
done:
  if (err.msg[0]) diag("%s", err.msg);
  ok(g && sums == g->dp * buckets,
     "%s on %d processes: %d data-parallel sums, one per member of each of the %d buckets (%d gradients a replica)",
     sets, procs, sums, buckets, grads);
  free(seen);
  nd_graph_free(g);
  nd_config_free(cfg);
}

int main(void) {
  check_visits();
  check_buckets("parallelism.data_parallel_size=4", 4);
  check_buckets("parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=3 parallelism.tensor_parallel_size=2", 4);
  /* chunked sums read no other replica's gradient: each share is its replica's */
  check("parallelism.data_parallel_size=4", 4, 1);
  check("parallelism.data_parallel_size=4", 3, 0);
  check("parallelism.data_parallel_size=4", 2, 1);
  check("parallelism.data_parallel_size=4", 1, 0);
  /* a group of replicas x context ranks */
  check("parallelism.data_parallel_size=2 parallelism.context_parallel_size=2", 4, 1);
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
  check("parallelism.data_parallel_size=4 parallelism.data_parallel_shard=gradients", 4, 1);
  check("parallelism.data_parallel_size=4 parallelism.pipeline_parallel_size=2 parallelism.data_parallel_shard=parameters",
        4, 0);
  check("model.arch=llama model.n_kv_head=2 parallelism.data_parallel_size=2 parallelism.pipeline_parallel_size=2", 4, 1);
  check("train.recompute=layer train.precision=bf16 parallelism.data_parallel_size=2 "
        "parallelism.pipeline_parallel_size=3",
        6, 1);
  return done_testing();
}
