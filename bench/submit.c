/* bench/submit: what one StarPU task costs the submitting thread
 * (docs/nodes.md, Submission), on a real step's tasks: the quick-start model
 * at tensor parallel 8 (pp 2, 8 micro-batches of 1, n_embd 64, so that the
 * kernels are short and the step is mostly submission), one CPU worker,
 * every task alone and in chains. Each step's submission loop is timed as
 * the submitting thread's CPU time (nd_exec_submission_cost), which leaves
 * out the time it waited for a core the worker or another program held: on
 * a busy machine the wall time (submit_ms) says more about the machine
 * than about submission. Prints the median over the steps after the first.
 * Under `mpirun -np N` each process prints its own rows (its share's
 * submission, through StarPU-MPI). Run from the build folder:
 *   bench/submit [STEPS]
 *   mpirun -np 2 bench/submit [STEPS]
 */
#include <stdio.h>
#include <stdlib.h>

#include "ndgraph/ndgraph.h"
#include "tasks/exec.h"
#include "tasks/mpi.h"
#include "train/trainer_internal.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One row: `steps` steps with chains on or off. */
static int row(int steps, int chains) {
  static const char *const layout[] = {"model.n_head=8",
                                       "model.n_embd=64",
                                       "model.seq_len=32",
                                       "train.micro_batch_size=1",
                                       "parallelism.tensor_parallel_size=8",
                                       "parallelism.pipeline_parallel_size=2",
                                       "parallelism.micro_batches=8",
                                       "runtime.workers=1",
                                       "runtime.tune=false",
                                       "train.save_dir=",
                                       NULL};
  nd_config *cfg = NULL;
  nd_trainer *tr = NULL;
  nd_error err = {0};
  double *wall = calloc((size_t)steps, sizeof *wall), *cpu = calloc((size_t)steps, sizeof *cpu);
  int64_t tasks = 0, buffers = 0;
  int rc = wall && cpu ? nd_config_new(&cfg) : ND_ENOMEM;
  for (const char *const *kv = layout; *kv && !rc; kv++) rc = nd_config_set_assignment(cfg, *kv, &err);
  if (!rc) rc = nd_config_set_assignment(cfg, chains ? "runtime.chain_tasks=true" : "runtime.chain_tasks=false", &err);
  if (!rc) rc = nd_config_validate(cfg, &err);
  if (!rc) rc = nd_trainer_open(&tr, cfg, &err);
  for (int s = 0; s <= steps && !rc; s++) {
    nd_step_result r;
    if ((rc = nd_trainer_step(tr, &r, &err)) || s == 0) continue; /* the first step warms up */
    nd_exec_submission_cost(nd__trainer_exec(tr), &cpu[s - 1], &buffers);
    nd_exec_submission(nd__trainer_exec(tr), &tasks, &wall[s - 1]);
  }
  if (rc) {
    fprintf(stderr, "bench/submit: %s\n", err.msg[0] ? err.msg : "out of memory");
  } else {
    double c = median(cpu, steps), w = median(wall, steps);
    printf("| %d of %d | %s | %lld | %.1f | %.2f | %.2f | %.2f | %.3f |\n", nd_mpi_rank(), nd_mpi_size(),
           chains ? "chains" : "every task alone",
           (long long)tasks, (double)buffers / (double)tasks, 1e3 * w, 1e3 * c, 1e6 * c / (double)tasks,
           1e6 * c / (double)buffers);
  }
  nd_trainer_close(tr);
  nd_config_free(cfg);
  free(wall), free(cpu);
  return rc;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 20;
  if (steps < 1) {
    fprintf(stderr, "bench/submit: STEPS must be at least 1\n");
    return 2;
  }
  printf("| process | tasks | StarPU tasks per step | buffers per task | submission wall ms | submission CPU ms | CPU µs "
         "per task | CPU µs per buffer |\n|---|---|---|---|---|---|---|---|\n");
  return row(steps, 0) || row(steps, 1) ? 1 : 0;
}
