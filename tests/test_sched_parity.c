/* Parity and determinism under every policy and every placement: a few
 * layouts x every runtime.scheduler x strict/affinity/free give
 * bit-identical losses to each other (reductions run in the graph's order,
 * whatever the scheduler does) and match the single-rank reference within
 * 1e-4; so do a dynamic and a fixed policy with every task submitted alone
 * (runtime.chain_tasks: false, tasks/chain.h). Two steps of the tiny model
 * keep it short. And on the benchmark's layer sizes, where idle workers
 * take row blocks of the other's kernels (runtime.wait_policy: help,
 * common/share.h), the same bits as without. tests/test_bits_coretypes.sh
 * runs it again under each OpenBLAS kernel set. */
#include <math.h>

#include "common/share.h"
#include "tests/runtime/harness.h"
#include "tests/tap.h"

#define STEPS 2

static const char *const policies[] = {"ndws", "gpipe", "1f1b", "1f1b-split", "zbh1",  "zbh2", "eager",
                                       "prio", "ws",    "lws",  "dmda",       "dmdas", NULL};
static const char *const placements[] = {"strict", "affinity", "free", NULL};

static int train_chained(const char *layout[4], const char *policy, const char *placement, int chains, double *loss) {
  char sched[64], place[64];
  snprintf(sched, sizeof sched, "runtime.scheduler=%s", policy);
  snprintf(place, sizeof place, "runtime.placement=%s", placement);
  const char *over[] = {layout[0],
                        layout[1],
                        layout[2],
                        layout[3],
                        sched,
                        place,
                        "parallelism.activation_slots=2",
                        chains ? "runtime.chain_tasks=true" : "runtime.chain_tasks=false",
                        NULL};
  return run_losses(over, STEPS, loss);
}

static int train(const char *layout[4], const char *policy, const char *placement, double *loss) {
  return train_chained(layout, policy, placement, 1, loss);
}

/* pp=2 on the benchmark's layer (n_embd 256, 4 sequences of 128 a micro-batch), strict, under ndws: idle
 * workers that help give the losses of idle workers that sleep, the kernels cut in the same blocks. */
static void shared_kernels(void) {
  double loss[2][STEPS];
  long split[2], helped[2];
  int rc[2];
  for (int help = 0; help < 2; help++) {
    const char *over[] = {"model.n_layer=2",
                          "model.n_embd=256",
                          "model.seq_len=128",
                          "train.micro_batch_size=4",
                          "parallelism.pipeline_parallel_size=2",
                          "parallelism.micro_batches=4",
                          "parallelism.activation_slots=2",
                          "runtime.placement=strict",
                          "runtime.scheduler=ndws",
                          help ? "runtime.wait_policy=help" : "runtime.wait_policy=passive",
                          NULL};
    long split0, helped0;
    nd__share_counts(&split0, &helped0);
    rc[help] = run_losses(over, STEPS, loss[help]);
    nd__share_counts(&split[help], &helped[help]);
    split[help] -= split0, helped[help] -= helped0;
  }
  ok(!rc[0] && !rc[1] && memcmp(loss[0], loss[1], sizeof loss[0]) == 0,
     "pp=2, n_embd 256, ndws: the same losses bit for bit with idle workers helping (helpers ran %ld blocks) and "
     "sleeping (%.9f %.9f)",
     helped[1], loss[1][0], loss[1][1]);
  /* blocks are fixed by the kernels' shapes: as many kernels cut whether or not anyone helps */
  ok(split[0] > 0 && split[0] == split[1] && helped[0] == 0,
     "the same kernels run in blocks helping and sleeping (%ld and %ld), none helped while sleeping", split[1],
     split[0]);
}

int main(void) {
  /* the global batch stays 4 micro-batches: dp x micro_batches */
  const char *single[4] = {"parallelism.data_parallel_size=1", "parallelism.tensor_parallel_size=1",
                           "parallelism.pipeline_parallel_size=1", "parallelism.micro_batches=4"};
  const char *layouts[][4] = {
      {"parallelism.data_parallel_size=1", "parallelism.tensor_parallel_size=1", "parallelism.pipeline_parallel_size=2",
       "parallelism.micro_batches=4"},
      {"parallelism.data_parallel_size=1", "parallelism.tensor_parallel_size=2", "parallelism.pipeline_parallel_size=1",
       "parallelism.micro_batches=4"},
      {"parallelism.data_parallel_size=2", "parallelism.tensor_parallel_size=1", "parallelism.pipeline_parallel_size=3",
       "parallelism.micro_batches=2"},
  };
  double ref[STEPS];
  if (!ok(train(single, "lws", "affinity", ref) == 0, "single-rank reference")) return done_testing();
  for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
    double first[STEPS];
    int have_first = 0;
    for (int p = 0; policies[p]; p++)
      for (int m = 0; placements[m]; m++) {
        double loss[STEPS];
        int rc = train(layouts[l], policies[p], placements[m], loss);
        if (rc) {
          ok(0, "%s %s %s %s: trains", layouts[l][0] + 12, layouts[l][2] + 12, policies[p], placements[m]);
          continue;
        }
        if (!have_first) memcpy(first, loss, sizeof first), have_first = 1;
        int same = memcmp(first, loss, sizeof first) == 0, near = 1;
        for (int s = 0; s < STEPS; s++) near &= fabs(loss[s] - ref[s]) <= 1e-4 * fabs(ref[s]);
        ok(same && near,
           "%s %s %s, %s %s: losses bit-identical across policies (%.9f %.9f), within 1e-4 of the reference",
           layouts[l][1] + 12, layouts[l][2] + 12, layouts[l][0] + 12, policies[p], placements[m], loss[0], loss[1]);
      }
    static const char *const alone[] = {"ndws", "1f1b"};
    for (int p = 0; p < 2 && have_first; p++) {
      double loss[STEPS];
      ok(train_chained(layouts[l], alone[p], "strict", 0, loss) == 0 && memcmp(first, loss, sizeof first) == 0,
         "%s %s %s, %s strict, every task alone: the same losses bit for bit", layouts[l][1] + 12, layouts[l][2] + 12,
         layouts[l][0] + 12, alone[p]);
    }
  }
  shared_kernels();
  return done_testing();
}
