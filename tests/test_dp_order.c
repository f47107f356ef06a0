/* The data-parallel gradient sum is taken in rank order (docs/reliability.md):
 * with 3 and 4 replicas, where another order gives other bits.
 *  - the graph: every data-parallel all-reduce of a dp 3 and a dp 4 step
 *    takes its parts in replica order 0, 1, 2 (, 3) (test_collective holds
 *    the CPU all-reduce to ((p0 + p1) + p2) + p3 in that order);
 *  - a real step at dp 4: the whole gradient, bit for bit, equals the four
 *    replicas' gradients summed in float in replica order, each replica's
 *    gradient computed independently by a single-rank run on its own
 *    sequences. That run's loss scale is 4 times dp 4's, a power of two, so
 *    its gradient times 0.25 is exactly the replica's share in the dp 4 run.
 *    (At dp 3 the ratio is 3, not exact: the graph check covers dp 3.)
 *    The same sum in reverse order is checked to differ, so the comparison
 *    can fail. */
#include <unistd.h>

#include "graph/ir.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define DP 4
#define T  16 /* the tiny model's seq_len */

static void graph_order(int dp) {
  char kv[2][64];
  snprintf(kv[0], sizeof kv[0], "parallelism.data_parallel_size=%d", dp);
  snprintf(kv[1], sizeof kv[1], "train.micro_batch_size=%d", 12 / dp);
  const char *ov[] = {kv[0], kv[1], "parallelism.pipeline_parallel_size=2", "parallelism.micro_batches=1", NULL};
  nd_config *cfg = tiny_config(ov);
  nd_graph *g = NULL;
  nd_error err = {0};
  if (!cfg || nd_graph_build(&g, cfg, 0, &err)) {
    ok(0, "dp %d: graph builds (%s)", dp, err.msg);
    nd_config_free(cfg);
    return;
  }
  int n = 0, in_order = 1;
  for (int32_t i = 0; i < g->n_tasks; i++) {
    const nd_task *t = &g->tasks[i];
    if (t->kind != ND_TASK_ALLREDUCE || t->group != ND_GROUP_DP) continue;
    const nd_access *acc = nd_task_access(g, t);
    in_order &= t->a.coll.nparts == dp;
    for (int p = 0; p < t->a.coll.nparts; p++) in_order &= g->tensors[acc[p].tensor].home.dp == p;
    n++;
  }
  ok(n > 0 && in_order, "dp %d: each of the %d data-parallel all-reduces takes its parts in replica order", dp, n);
  nd_graph_free(g);
  nd_config_free(cfg);
}

typedef struct grads {
  int n;
  long long *numel;
  float **g;
} grads;

static void grads_free(grads *r) {
  for (int i = 0; i < r->n; i++) free(r->g[i]);
  free(r->g);
  free(r->numel);
}

/* One step on `data` with `dp` replicas of `m` sequences; the whole gradient. */
static int step_grads(const char *data, int dp, int m, grads *out) {
  char kv[4][96];
  snprintf(kv[0], sizeof kv[0], "data.train=%s", data);
  snprintf(kv[3], sizeof kv[3], "data.val=%s", data);
  snprintf(kv[1], sizeof kv[1], "parallelism.data_parallel_size=%d", dp);
  snprintf(kv[2], sizeof kv[2], "train.micro_batch_size=%d", m);
  const char *ov[] = {"data.format=text",
                      kv[0],
                      kv[1],
                      kv[2],
                      kv[3],
                      "parallelism.tensor_parallel_size=1",
                      "parallelism.pipeline_parallel_size=1",
                      "parallelism.micro_batches=1",
                      "parallelism.activation_slots=1",
                      NULL};
  memset(out, 0, sizeof *out);
  nd_config *cfg = tiny_config(ov);
  nd_trainer *tr = NULL;
  nd_error err = {0};
  double loss;
  int rc = -1;
  if (!cfg || nd_trainer_open(&tr, cfg, &err) || train_losses(tr, 1, &loss)) {
    diag("dp %d on %s: %s", dp, data, err.msg);
    goto done;
  }
  while (nd_trainer_tensor_name(tr, out->n, NULL)) out->n++;
  out->g = calloc((size_t)out->n, sizeof *out->g);
  out->numel = calloc((size_t)out->n, sizeof *out->numel);
  for (int i = 0; i < out->n; i++) {
    const char *name = nd_trainer_tensor_name(tr, i, &out->numel[i]);
    out->g[i] = malloc((size_t)out->numel[i] * sizeof(float));
    if (nd_trainer_gather(tr, name, ND_GATHER_GRAD, out->g[i], out->numel[i])) goto done;
  }
  rc = 0;
done:
  nd_trainer_close(tr);
  nd_config_free(cfg);
  return rc;
}

static int write_file(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "w");
  int bad = !f || fwrite(text, 1, len, f) != len;
  if (f && fclose(f)) bad = 1;
  return bad ? -1 : 0;
}

static void step_order(void) {
  static const char *const words[] = {"one ", "two ", "three ", "four. ", "five, ", "six ", "seven "};
  static char text[4096];
  size_t len = 0;
  for (unsigned r = 7; len < 2000; r = r * 1103515245u + 12345u)
    len += (size_t)sprintf(text + len, "%s", words[(r >> 16) % 7]);
  char all[64], share[DP][64];
  snprintf(all, sizeof all, "/tmp/nd-dp-order-%d.txt", (int)getpid());
  int bad = write_file(all, text, len);
  /* replica d's sequence: tokens [d * T, (d + 1) * T] of step 1 */
  for (int d = 0; d < DP; d++) {
    snprintf(share[d], sizeof share[d], "/tmp/nd-dp-order-%d-%d.txt", (int)getpid(), d);
    bad |= write_file(share[d], text + (size_t)d * T, T + 1);
  }
  grads whole = {0}, part[DP] = {{0}};
  int rc = bad || step_grads(all, DP, 1, &whole);
  for (int d = 0; d < DP; d++) rc |= step_grads(share[d], 1, 1, &part[d]);
  if (ok(rc == 0, "a dp %d step and %d single-rank steps on each replica's sequence", DP, DP)) {
    long long total = 0, differ = 0, reverse_differ = 0;
    for (int i = 0; i < whole.n; i++)
      for (long long k = 0; k < whole.numel[i]; k++) {
        float sum = part[0].g[i][k] * 0.25f, rev = part[DP - 1].g[i][k] * 0.25f;
        for (int d = 1; d < DP; d++) sum += part[d].g[i][k] * 0.25f;
        for (int d = DP - 2; d >= 0; d--) rev += part[d].g[i][k] * 0.25f;
        total++;
        differ += memcmp(&sum, &whole.g[i][k], sizeof sum) != 0;
        reverse_differ += memcmp(&rev, &sum, sizeof sum) != 0;
      }
    ok(differ == 0, "dp %d: the gradient is the replicas' sum in replica order, bit for bit (%lld of %lld differ)", DP,
       differ, total);
    ok(reverse_differ > 0, "dp %d: the reverse order gives other bits (%lld of %lld values), so the check can fail", DP,
       reverse_differ, total);
  }
  grads_free(&whole);
  for (int d = 0; d < DP; d++) grads_free(&part[d]), unlink(share[d]);
  unlink(all);
}

int main(void) {
  graph_order(3);
  graph_order(4);
  step_order();
  return done_testing();
}
